"""The timed siblings of a profile's Framework read its settings live, run the
profile's own plugins (the plain one) or a timing proxy of each (the sampled one),
and report their extension points through the timer they were built with."""
from __future__ import annotations

import asyncio

import pytest

from actors.framework_timing import PLUGIN_METHODS, TimedPlugin, timed_frameworks
from framework.api.objects import Pod
from framework.config import build_frameworks, load_config
from framework.handle import FrameworkHandle
from framework.interface import CycleState
from tests.actors.test_metrics import RecordingSink


def _siblings(record=lambda *a: None):
    fwk = next(iter(build_frameworks(load_config(None), FrameworkHandle()).values()))
    sink = RecordingSink()
    plain, sampled = timed_frameworks(fwk, sink, lambda: 0.0, record)
    return fwk, sink, plain, sampled


def _parts_lists(fwk):
    return {
        "preFilter": fwk.filtering.pre_filter_plugins, "filter": fwk.filtering.filter_plugins,
        "postFilter": fwk.post_filtering.post_filter_plugins,
        "preScore": fwk.scoring.pre_score_plugins, "score": fwk.scoring.score_plugins,
        "reserve": fwk.binding.reserve_plugins, "permit": fwk.binding.permit_plugins,
        "preBind": fwk.binding.pre_bind_plugins, "bind": fwk.binding.bind_plugins,
        "postBind": fwk.binding.post_bind_plugins,
    }


def test_a_setting_changed_on_the_profile_after_start_up_holds_in_its_timed_siblings() -> None:
    fwk, _, plain, sampled = _siblings()
    assert plain.handle is fwk.handle and plain.settings is fwk.settings
    fwk.use_columnar = False
    fwk.settings.score_weights = {"NodeResourcesFit": 7}
    fwk.settings.percentage_of_nodes_to_score = 30
    for sibling in (plain, sampled):
        assert (sibling.use_columnar, sibling.score_weights, sibling.percentage_of_nodes_to_score) == (
            False, {"NodeResourcesFit": 7}, 30)
        assert sibling.filtering.settings.use_columnar is False and sibling.scoring.settings is fwk.settings
        assert sibling.profile_name == fwk.profile_name == "default-scheduler"


def test_the_sampled_sibling_runs_its_own_timing_proxies_and_the_plain_one_the_plugins() -> None:
    fwk, _, plain, sampled = _siblings()
    own, plain_lists, sampled_lists = _parts_lists(fwk), _parts_lists(plain), _parts_lists(sampled)
    assert set(own) == set(PLUGIN_METHODS)
    for point, plugins in own.items():
        assert [id(p) for p in plain_lists[point]] == [id(p) for p in plugins]
        assert all(isinstance(p, TimedPlugin) for p in sampled_lists[point])
        assert [p.name for p in sampled_lists[point]] == [p.name for p in plugins]
    assert all(not isinstance(p, TimedPlugin) for p in own["filter"])


def test_a_timed_sibling_reports_each_extension_point_it_runs_and_the_profile_framework_none() -> None:
    calls = []
    fwk, sink, plain, sampled = _siblings(lambda *a: calls.append(a[:3]))
    pod = Pod({"metadata": {"name": "p", "uid": "p"}, "spec": {}})
    fwk.run_pre_score(CycleState(), pod, [])
    assert sink.calls == []
    plain.run_pre_score(CycleState(), pod, [])
    plain.run_reserve(CycleState(), pod, "n1")
    asyncio.run(plain.run_pre_bind(CycleState(), pod, "n1"))
    assert [(c[0], c[1], c[3]) for c in sink.calls] == [("extension_point", point, "default-scheduler")
                                                        for point in ("PreScore", "Reserve", "PreBind")]
    assert sink.calls[0][2] == "Success"
    assert calls == []
    sampled.run_pre_score(CycleState(), pod, [])
    assert calls and {c[1] for c in calls} == {"PreScore"}


def test_a_door_that_raises_is_reported_as_error_and_raises_on() -> None:
    from actors.framework_timing import ExtensionPointTimer
    from framework.runtime.timing import status_itself

    sink = RecordingSink()
    timer = ExtensionPointTimer(sink, "p1", lambda: 0.0)

    def broken() -> None:
        raise RuntimeError("runtime bug")

    async def broken_async() -> None:
        raise RuntimeError("runtime bug")

    for run in (lambda: timer.run("Reserve", status_itself, broken),
                lambda: asyncio.run(timer.run_async("Bind", status_itself, broken_async))):
        with pytest.raises(RuntimeError, match="runtime bug"):
            run()
    assert sink.calls == [("extension_point", "Reserve", "Error", "p1"), ("extension_point", "Bind", "Error", "p1")]


def test_a_timing_proxy_reports_each_call_by_its_status_code_name_and_runs_the_method_the_plugin_has_now() -> None:
    from framework.types import Code, Status

    class Plugin:
        name = "P"

        def reserve(self, state, pod, node):
            return Status(Code.UnschedulableAndUnresolvable, "no")

        def permit(self, state, pod, node):
            raise RuntimeError("plugin bug")

        async def pre_bind(self, state, pod, node):
            return Status(Code.Wait)

        def post_bind(self, state, pod, node):
            return None

    plugin, recorded, clock = Plugin(), [], iter(range(100))
    methods = {**PLUGIN_METHODS["reserve"], **PLUGIN_METHODS["permit"], **PLUGIN_METHODS["preBind"],
               **PLUGIN_METHODS["postBind"]}
    proxy = TimedPlugin(plugin, methods, lambda *a: recorded.append(a), lambda: float(next(clock)))
    assert proxy.reserve(None, None, "n1").code is Code.UnschedulableAndUnresolvable
    with pytest.raises(RuntimeError, match="plugin bug"):
        proxy.permit(None, None, "n1")
    assert asyncio.run(proxy.pre_bind(None, None, "n1")).code is Code.Wait
    plugin.post_bind = lambda state, pod, node: "replaced"  # looked up at each call
    assert proxy.post_bind(None, None, "n1") == "replaced"
    assert recorded == [("P", "Reserve", "UnschedulableAndUnresolvable", 1.0), ("P", "Permit", "Error", 1.0),
                        ("P", "PreBind", "Wait", 1.0), ("P", "PostBind", "Success", 1.0)]


def test_a_point_s_status_is_what_its_status_of_reads_for_every_status_of_and_result() -> None:
    """ExtensionPointTimer.run writes the four rules a cycle's doors pass out in place:
    the label it reports is the one status_of itself gives, for each of them and for
    any other (called), whatever the door returned."""
    from actors.framework_timing import ExtensionPointTimer
    from framework.interface import Code, Status
    from framework.runtime.timing import no_status, status_first, status_itself, status_of_run, status_second

    class Run:  # a PostFilterRun's shape: its folded status
        def __init__(self, status):
            self.status = status

    statuses = [None, Status(), Status(Code.Unschedulable, "no"), Status(Code.Wait), Status(Code.Skip)]
    results = ([None] + statuses + [(s, 1) for s in statuses] + [(1, s) for s in statuses]
               + [Run(s) for s in statuses])
    for status_of in (status_itself, status_second, status_first, no_status, status_of_run):
        for result in results:
            try:
                st = status_of(result)
            except (TypeError, AttributeError):
                continue  # a result this door never returns
            if st is not None and not isinstance(st, Status):
                continue
            sink = RecordingSink()
            timer = ExtensionPointTimer(sink, "p", lambda: 0.0)
            assert timer.run("Score", status_of, lambda: result) is result
            assert sink.calls == [("extension_point", "Score", "Success" if st is None else st.code.name, "p")]
