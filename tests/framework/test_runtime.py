import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from framework.host_selection import select_host
from framework.api.objects import Node, Pod
from framework.api.timeutil import go_duration
from framework.cache import PodInfo, Snapshot
from framework.handle import FrameworkHandle
from framework.interface import Code, CycleState, Status
from framework.runtime import Framework, run_unsuspended
from tests.framework.fakes import BindFake, FilterFake, Recorder, ReserveFake, ScoreFake, SortFake


def make(plugins, points, weights=None, handle=None):
    base = [SortFake(), *plugins]
    pts = {"queueSort": ["Sort"], **points}
    return Framework("p", {p.name: p for p in base}, pts, weights or {}, handle or FrameworkHandle())


def pod(name="p", prio=0):
    return Pod({"metadata": {"name": name, "uid": name}, "spec": {"priority": prio}})


def ni(name="n1"):
    return Snapshot.build([Node({"metadata": {"name": name}})], []).get(name)


def test_filter_stops_at_a_nodes_first_failure():
    rec = Recorder()
    a = FilterFake("A", reject={"n1"}, rec=rec)
    b = FilterFake("B", rec=rec)
    fwk = make([a, b], {"filter": ["A", "B"]})
    st = fwk.run_filter(CycleState(), pod(), ni())
    assert st.code == Code.Unschedulable and st.plugin == "A"
    assert rec.calls == ["filter:A:n1"]


def test_a_plugin_exception_becomes_an_error_naming_plugin_and_point():
    class Broken:
        name = "Broken"

        def filter(self, state, pod, node_info):
            raise RuntimeError("bug")

    fwk = make([Broken()], {"filter": ["Broken"]})
    st = fwk.run_filter(CycleState(), pod(), ni())
    assert st.code == Code.Error
    assert st.message() == 'running "Broken" filter plugin: bug'


def test_prefilter_skip_skips_that_plugins_filter():
    class SkipMe:
        name = "SkipMe"

        def pre_filter(self, state, pod, nodes):
            return None, Status(Code.Skip)

        def filter(self, state, pod, node_info):
            raise AssertionError("must not run")

    fwk = make([SkipMe()], {"preFilter": ["SkipMe"], "filter": ["SkipMe"]})
    state = CycleState()
    _, st, _ = fwk.run_pre_filter(state, pod())
    assert st.is_success()
    assert fwk.run_filter(state, pod(), ni()).is_success()


def test_scores_outside_the_range_after_normalizing_abort_the_cycle():
    fwk = make([ScoreFake("S", {"n1": 101})], {"score": ["S"]}, {"S": 1})
    scores, st = fwk.run_score(CycleState(), pod(), [ni()])
    assert st.code == Code.Error
    assert 'plugin "S" returns an invalid score 101, it should in the range of [0, 100] after normalizing' in st.message()


def test_weights_apply_after_normalizing():
    def halve(scores):
        for s in scores:
            s.score //= 2

    fwk = make([ScoreFake("S", {"n1": 180}, normalize=halve)], {"score": ["S"]}, {"S": 3})
    scores, st = fwk.run_score(CycleState(), pod(), [ni()])
    assert st.is_success()
    assert scores[0].total_score == 270


def test_reserve_failure_runs_unreserve_of_every_plugin_in_reverse_order():
    rec = Recorder()
    plugins = [ReserveFake("A", rec), ReserveFake("B", rec, fail=True), ReserveFake("C", rec)]
    fwk = make(plugins, {"reserve": ["A", "B", "C"]})
    st = fwk.run_reserve(CycleState(), pod(), "n1")
    assert st.code == Code.Unschedulable and st.plugin == "B"
    fwk.run_unreserve(CycleState(), pod(), "n1")
    assert rec.calls == ["reserve:A", "reserve:B", "unreserve:C", "unreserve:B", "unreserve:A"]


async def test_bind_plugins_may_skip_to_the_next():
    rec = Recorder()
    fwk = make([BindFake("A", skip=True, rec=rec), BindFake("B", rec=rec)], {"bind": ["A", "B"]})
    st = await fwk.run_bind(CycleState(), pod(), "n1")
    assert st.is_success()
    assert rec.calls == ["bind:A", "bind:B"]


async def test_when_every_bind_plugin_skips_the_result_is_skip():
    fwk = make([BindFake("A", skip=True)], {"bind": ["A"]})
    assert (await fwk.run_bind(CycleState(), pod(), "n1")).code == Code.Skip


def test_permit_waits_are_capped_at_fifteen_minutes():
    class Waiter:
        name = "W"

        def permit(self, state, pod, node_name):
            return Status(Code.Wait), 3600

    fwk = make([Waiter()], {"permit": ["W"]})
    st, waits = fwk.run_permit(CycleState(), pod(), "n1")
    assert st.code == Code.Wait
    assert waits == {"W": 900.0}


def test_nominated_pods_of_higher_priority_are_counted_first():
    snap = Snapshot.build([Node({"metadata": {"name": "n1"}})], [])
    nominated = PodInfo(pod("big", prio=10))

    class NoPods:
        name = "NoPods"

        def filter(self, state, p, node_info):
            return None if not node_info.pods else Status(Code.Unschedulable, "full")

    handle = FrameworkHandle(snapshot=snap, nominated=lambda n: [nominated])
    fwk = make([NoPods()], {"filter": ["NoPods"]}, handle=handle)
    assert fwk.run_filter_with_nominated_pods(CycleState(), pod("low", prio=1), snap.get("n1")).code == Code.Unschedulable
    assert fwk.run_filter_with_nominated_pods(CycleState(), pod("high", prio=20), snap.get("n1")).is_success()


@pytest.mark.parametrize("seconds, text", [(10, "10s"), (60, "1m0s"), (1.5, "1.5s"), (0.5, "500ms"), (3725, "1h2m5s"), (0, "0s")])
def test_durations_print_as_go_prints_them(seconds, text):
    assert go_duration(seconds) == text


def test_a_score_added_to_an_entry_of_the_score_list_counts_when_the_host_is_selected():
    fwk = make([ScoreFake("S", {"n1": 10, "n2": 20})], {"score": ["S"]}, {"S": 1})
    scores, st = fwk.run_score(CycleState(), pod(), [ni("n1"), ni("n2")])
    assert st.is_success()
    assert list(scores.totals) == [10, 20]
    assert select_host(scores, random.Random(0)) == "n2"
    scores[0].total_score += 50  # what an extender's weighted score does upstream
    assert list(scores.totals) == [60, 20]
    assert select_host(scores, random.Random(0)) == "n1"


class PostFilterFake:
    def __init__(self, name, answer):
        self.name, self.answer = name, answer

    def post_filter(self, state, pod, filtered):
        if isinstance(self.answer, Exception):
            raise self.answer
        return None, self.answer


def test_a_post_filter_run_names_each_plugin_that_ran_with_its_code():
    """The scheduler counts a preemption attempt from this result, not from a
    timing wrapper's callback: every plugin that ran is in it, one that raised as Error."""
    a = PostFilterFake("A", Status(Code.Unschedulable, "no"))
    b = PostFilterFake("B", RuntimeError("bug"))
    c = PostFilterFake("C", Status())
    run = run_unsuspended(make([a, b, c], {"postFilter": ["A", "B", "C"]}).run_post_filter(CycleState(), pod(), None))
    assert run.ran == (("A", Code.Unschedulable), ("B", Code.Error))
    assert run.status.code == Code.Error and run.status.plugin == "B"
    assert run.code_of("A") == Code.Unschedulable and run.code_of("C") is None


def test_a_post_filter_run_that_succeeds_stops_there_and_says_so():
    a = PostFilterFake("A", Status())
    b = PostFilterFake("B", Status(Code.Unschedulable, "no"))
    run = run_unsuspended(make([a, b], {"postFilter": ["A", "B"]}).run_post_filter(CycleState(), pod(), None))
    assert run.ran == (("A", Code.Success),) and run.status.is_success()


def test_the_runtime_names_a_failed_plugin_without_changing_the_status_it_returned():
    shared = Status(Code.Unschedulable, "shared verdict")

    class Shared:
        name = "Shared"

        def filter(self, state, pod, node_info):  # noqa: ANN001, ANN201
            return shared

    fwk = make([Shared()], {"filter": ["Shared"]})
    st = fwk.run_filter(CycleState(), pod(), ni())
    assert st.plugin == "Shared" and st == shared
    assert shared.plugin == ""  # the plugin's own object, as it returned it


class ConstantScore:
    """A columnar Score plugin that gives every node the same score, as a plain list
    (DynamicResources for a pod without claims gives [0] * n), with the default
    NormalizeScore or none."""

    def __init__(self, name, value, normalize):
        from framework.plugins.helper import DEFAULT_NORMALIZER
        self.name, self.value = name, value
        self._ext = DEFAULT_NORMALIZER if normalize else None

    def score(self, state, pod, node_info):
        return self.value, None

    def score_nodes(self, state, pod, nodes):
        return [self.value] * len(nodes), None

    def score_extensions(self):
        return self._ext


def three_nodes():
    snap = Snapshot.build([Node({"metadata": {"name": n}}) for n in ("n1", "n2", "n3")], [])
    return snap.list()


@pytest.mark.parametrize("value, normalize, totals", [
    (0, True, [0, 0, 0]),  # nothing to say: the default normalizer keeps the zeros
    (7, True, [200, 200, 200]),  # every node the best: 100 each, weight 2
    (7, False, [14, 14, 14]),
])
def test_a_plugin_scoring_every_node_alike_gets_the_same_normalized_and_weighted_totals(value, normalize, totals):
    fwk = make([ConstantScore("C", value, normalize)], {"score": ["C"]}, {"C": 2})
    scores, st = fwk.run_score(CycleState(), pod(), three_nodes())
    assert st.is_success()
    assert [s.total_score for s in scores] == totals


def test_the_same_invalid_score_on_every_node_still_aborts_the_cycle():
    fwk = make([ConstantScore("C", 101, False)], {"score": ["C"]}, {"C": 1})
    scores, st = fwk.run_score(CycleState(), pod(), three_nodes())
    assert st.code == Code.Error and 'returns an invalid score 101' in st.message()


class _AlikeScore(ConstantScore):
    def __init__(self, name, value, reverse):
        from framework.plugins.helper import DEFAULT_NORMALIZER, REVERSE_NORMALIZER
        self.name, self.value = name, value
        self._ext = REVERSE_NORMALIZER if reverse else DEFAULT_NORMALIZER


class _AlikeColumn(_AlikeScore):
    """The same scores as one int64 element seen through a stride of 0 (zeros_column's form)."""

    def score_nodes(self, state, pod, nodes):
        return np.broadcast_to(np.int64(self.value), (len(nodes),)), None


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.integers(-300, 300), st.integers(-(1 << 70), 1 << 70)), st.booleans(), st.integers(1, 5),
       st.integers(1, 4))
def test_scores_all_alike_normalize_weigh_and_fail_as_the_per_node_path_does(value, reverse, weight, n) -> None:
    snap = Snapshot.build([Node({"metadata": {"name": f"n{i}"}}) for i in range(n)], [])
    forms = [(_AlikeScore, True), (_AlikeScore, False)]
    if -(1 << 63) <= value < 1 << 63:
        forms.append((_AlikeColumn, True))
    got = []
    for plugin, columnar in forms:
        fwk = make([plugin("C", value, reverse)], {"score": ["C"]}, {"C": weight})
        fwk.use_columnar = columnar
        scores, status = fwk.run_score(CycleState(), pod(), snap.list())
        got.append((status.code, status.message(), [(s.name, s.scores, s.total_score) for s in scores]))
    assert all(g == got[1] for g in got)
