"""The columnar dry run (defaultpreemption/columnar.py) against the per-node
simulation: on randomised clusters (PDBs, nominated pods, gang members, nodes wider
than the columns, pods that fit nowhere), DefaultPreemption in columns finds the
same candidates, victims, PDB counts, node statuses and chosen node as with every
node simulated, and evicts the same pods."""
from __future__ import annotations

import os
import random
from typing import Any

import pytest

from framework.runtime import run_unsuspended
from framework.api.objects import Node, Pod
from framework.cache import PodInfo, Snapshot
from framework.config import build_frameworks, load_config
from framework.features import FeatureGates
from framework.handle import FrameworkHandle, InMemoryObjects
from framework.interface import Code, CycleState, NodeToStatus, Status
from framework.api.objects import POD_GROUP_LABEL
from framework.plugins.defaultpreemption import default_preemption as dp
from framework.plugins.defaultpreemption.default_preemption import DefaultPreemption
from framework.preemption import Candidate, default_score_funcs, importance_key, pick_one_node_for_preemption
from framework.waiting import WaitingPodsMap
from tests.framework.preemption_builders import pdb

# Randomised clusters per test; KSCHED_PREEMPTION_CASES=300 for a longer search.
CASES = int(os.environ.get("KSCHED_PREEMPTION_CASES", "40"))


def _node(rng: random.Random, i: int) -> Node:
    res = {"cpu": f"{rng.choice([1, 2, 4])}", "memory": f"{rng.choice([2, 4, 8])}Gi", "pods": str(rng.choice([3, 5, 110]))}
    spec: dict[str, Any] = {}
    if rng.random() < 0.1:
        spec["taints"] = [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]
    return Node({"metadata": {"name": f"n{i}", "labels": {"kubernetes.io/hostname": f"n{i}"}}, "spec": spec,
                 "status": {"capacity": res, "allocatable": res}})


def _pod(rng: random.Random, name: str, node_name: str = "", priority: int | None = None,
         extra: dict[str, Any] | None = None) -> Pod:
    requests = {"cpu": f"{rng.choice([0, 100, 250, 500, 900])}m", "memory": f"{rng.choice([0, 128, 512, 1024])}Mi"}
    raw: dict[str, Any] = {
        "metadata": {"name": name, "namespace": "default", "uid": name,
                     "labels": {"app": rng.choice(["a", "b", "c"]),
                                **({POD_GROUP_LABEL: "g"} if node_name and rng.random() < 0.05 else {})}},
        "spec": {"priority": rng.choice([0, 1, 5, 10]) if priority is None else priority,
                 "containers": [{"name": "c", "resources": {"requests": requests}}], **(extra or {})},
        "status": {},
    }
    if node_name:
        raw["spec"]["nodeName"] = node_name
        if rng.random() < 0.7:
            raw["status"]["startTime"] = f"2024-01-01T00:{rng.randrange(60):02d}:00Z"
    return Pod(raw)


class _World:
    """One randomised cluster and a default-profile Framework over it."""

    def __init__(self, seed: int) -> None:
        rng = random.Random(seed)
        nodes = [_node(rng, i) for i in range(rng.randrange(3, 25))]
        pods = []
        for ni, n in enumerate(nodes):
            for k in range(rng.randrange(0, 14 if rng.random() < 0.2 else 6)):
                pods.append(_pod(rng, f"p{ni}-{k}", n.name))
        pdbs = [pdb(f"pdb-{app}", {"app": app}, rng.randrange(0, 3)) for app in ("a", "b") if rng.random() < 0.5]
        nominated: dict[str, list[Pod]] = {}
        for n in nodes:
            if rng.random() < 0.15:
                nominated[n.name] = [_pod(rng, f"nom-{n.name}", priority=rng.choice([5, 20]))]
        extra: dict[str, Any] = {}
        if rng.random() < 0.15:
            extra = {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}},
                                     "ports": [{"containerPort": 80, "hostPort": 80}]}]}
        self.preemptor = _pod(rng, "preemptor", priority=rng.choice([5, 10, 20]), extra=extra)
        self.snapshot = Snapshot.build(nodes, pods)
        self.handle = FrameworkHandle(
            snapshot=self.snapshot, objects=InMemoryObjects([*nodes, *pods, *pdbs]), waiting_pods=WaitingPodsMap(),
            nominated=lambda name: [PodInfo(p) for p in nominated.get(name, [])],
            nominated_nodes=lambda: set(nominated), rand=random.Random(seed),
            features=FeatureGates({"SchedulerAsyncPreemption": False}))
        self.fwk = build_frameworks(load_config(None), self.handle)["default-scheduler"]
        self.plugin: DefaultPreemption = self.fwk.plugins["DefaultPreemption"]

    def filtered(self) -> tuple[CycleState, NodeToStatus]:
        state = CycleState()
        self.fwk.run_pre_filter(state, self.preemptor)
        nodes = self.snapshot.list()
        statuses = self.fwk.run_filter_nodes(state, self.preemptor, nodes)
        return state, NodeToStatus({ni.name: st for ni, st in zip(nodes, statuses) if not st.is_success()})


def _dry_run(seed: int, fast: bool) -> tuple[Any, ...]:
    w = _World(seed)
    state, m = w.filtered()
    w.fwk.use_columnar = fast  # False: the per-node simulation everywhere
    dry = w.plugin.evaluator.find_candidates(state, w.snapshot.list(), w.preemptor, m)
    best = w.plugin.evaluator.select_candidate(dry.candidates)
    return ([(c.name, [v.name for v in c.victims], c.num_pdb_violations) for c in dry.candidates],
            sorted((n, st.code, st.message()) for n, st in dry.node_to_status.items()),
            dry.errors, best.name if best else None)


def _preempt(seed: int, fast: bool) -> tuple[Any, ...]:
    w = _World(seed)
    state, m = w.filtered()
    w.fwk.use_columnar = fast
    result, st = run_unsuspended(w.plugin.post_filter(state, w.preemptor, m))
    return (result.nominated_node_name if result is not None else None, st.code, st.message(), [v.name for v, _, _ in w.handle.evicted])


@pytest.mark.parametrize("seed", range(CASES))
def test_the_columns_find_the_same_candidates_victims_and_node_as_the_simulation(seed: int) -> None:
    assert _dry_run(seed, fast=True) == _dry_run(seed, fast=False)


@pytest.mark.parametrize("seed", range(0, CASES, 3))
def test_preempting_with_the_columns_evicts_the_same_pods_and_says_the_same(seed: int) -> None:
    assert _preempt(seed, fast=True) == _preempt(seed, fast=False)


def _answers(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Pod, Any, Any, FrameworkHandle]]:
    """Every (preemptor, node, answer, handle) the columns gave over the randomised clusters."""
    seen: list[tuple[Pod, Any, Any, FrameworkHandle]] = []
    real = dp.columnar_victims

    def recording(*args: Any, **kwargs: Any) -> Any:
        answer = real(*args, **kwargs)
        if answer is None:
            return None

        def wrapped(ni: Any, pdbs: Any) -> Any:
            got = answer(ni, pdbs)
            seen.append((args[3], ni, got, args[1].handle))
            return got

        return wrapped

    monkeypatch.setattr(dp, "columnar_victims", recording)
    for seed in range(CASES):
        _dry_run(seed, fast=True)
    return seen


def test_the_columns_answer_for_most_nodes_and_leave_some_to_the_simulation(monkeypatch: pytest.MonkeyPatch) -> None:
    """The comparison above is not vacuous: the columns decide nodes of every kind."""
    seen = _answers(monkeypatch)
    victims = [got for _, _, got, _ in seen if isinstance(got, tuple)]
    statuses = [got for _, _, got, _ in seen if isinstance(got, Status)]
    assert len(victims) >= 20 and any(len(v) > 1 for v, _ in victims)
    assert {(st.plugin, st.code) for st in statuses} >= {("NodeResourcesFit", Code.Unschedulable),
                                                          ("", Code.UnschedulableAndUnresolvable)}
    assert any(got is None for _, _, got, _ in seen)  # gang rows, PDB reprieves: simulated


def test_the_columns_also_answer_for_nodes_with_pods_nominated_to_them(monkeypatch: pytest.MonkeyPatch) -> None:
    """Nominated pods of at least the preemptor's priority count as running on the
    node; the equivalence above covers those nodes only if the columns take them."""
    seen = _answers(monkeypatch)
    nominated = [ni.name for preemptor, ni, got, handle in seen if got is not None and any(
        pi.pod.priority >= preemptor.priority for pi in handle.nominated_pods_for_node(ni.name))]
    assert len(nominated) >= 5


@pytest.mark.parametrize("seed", range(CASES))
def test_filtering_with_nominated_pods_in_one_pass_says_what_the_two_passes_say(seed: int) -> None:
    """Where only Fit reads pods, the one pass over the node with its nominated pods
    (a light copy, not clone + add_pod) gives every node the two-pass verdict."""
    w = _World(seed)
    state = CycleState()
    w.fwk.run_pre_filter(state, w.preemptor)
    if not w.fwk.pods_read_only_by_fit(state):
        pytest.skip("this cluster's preemptor needs the two passes")
    for ni in w.snapshot.list():
        pods_before, requested_before = len(ni.pods), ni.requested.clone()
        one = w.fwk.filtering._filter_with_nominated_pods_once(state, w.preemptor, ni)
        two = w.fwk.run_filter_with_nominated_pods(state, w.preemptor, ni)
        assert (one.code, one.plugin, one.message()) == (two.code, two.plugin, two.message()), ni.name
        assert (len(ni.pods), ni.requested) == (pods_before, requested_before)


@pytest.mark.parametrize("seed", range(CASES))
def test_filtering_all_nodes_at_once_gives_nodes_with_nominated_pods_their_two_pass_verdicts(seed: int) -> None:
    w = _World(seed)
    state = CycleState()
    w.fwk.run_pre_filter(state, w.preemptor)
    nodes = w.snapshot.list()
    at_once = w.fwk.run_filter_nodes(state, w.preemptor, nodes)
    one_by_one = [w.fwk.run_filter_with_nominated_pods(state, w.preemptor, ni) for ni in nodes]
    def said(st: Status) -> tuple[Any, ...]:
        return (st.code, st.message()) if st.is_success() else (st.code, st.plugin, st.message())

    assert [said(st) for st in at_once] == [said(st) for st in one_by_one]


def _columns(w: _World, state: CycleState, m: NodeToStatus) -> Any:
    potential = m.nodes_for_code(w.snapshot.list(), Code.Unschedulable)
    return w.plugin.columnar_victims(state, w.preemptor, m, potential, [])


def test_a_pod_asking_for_host_ports_gets_no_columns() -> None:
    seed = next(s for s in range(200) if _World(s).preemptor.host_ports)
    w = _World(seed)
    state, m = w.filtered()
    assert _columns(w, state, m) is None


@pytest.mark.parametrize("seed", range(20))
def test_choosing_the_node_by_one_key_equals_narrowing_by_each_criterion_in_turn(seed: int) -> None:
    rng = random.Random(seed)
    candidates: dict[str, Candidate] = {}
    for i in range(rng.randrange(2, 40)):
        victims = [_pod(rng, f"v{i}-{k}", node_name=f"n{i}", priority=rng.choice([0, 1, 2]))
                   for k in range(rng.randrange(1, 4))]
        victims.sort(key=importance_key)
        candidates[f"n{i}"] = Candidate(f"n{i}", victims, rng.choice([0, 0, 1]))
    narrowed = pick_one_node_for_preemption(candidates, default_score_funcs(candidates))
    assert pick_one_node_for_preemption(candidates) == narrowed


def _plain_world() -> _World:
    seed = next(s for s in range(200) if not _World(s).preemptor.host_ports)
    return _World(seed)


def test_only_fit_reads_pods_for_a_plain_pod_in_the_default_profile() -> None:
    w = _plain_world()
    state, m = w.filtered()
    assert w.fwk.pods_read_only_by_fit(state)
    assert _columns(w, state, m) is not None
    w.fwk.use_columnar = False  # the per-node path forced
    assert _columns(w, state, m) is None


def test_a_pod_with_required_anti_affinity_gets_no_columns() -> None:
    w = _plain_world()
    w.preemptor = Pod({**w.preemptor.raw, "spec": {**w.preemptor.raw["spec"], "affinity": {"podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "a"}}, "topologyKey": "kubernetes.io/hostname"}]}}}})
    state, m = w.filtered()
    assert not w.fwk.pods_read_only_by_fit(state)
    assert _columns(w, state, m) is None


def test_a_plugin_that_chooses_victims_its_own_way_gets_no_columns() -> None:
    w = _plain_world()

    class OwnVictims(DefaultPreemption):
        def select_victims_on_node(self, state, pod, node_info, pdbs):  # noqa: ANN001, ANN201
            return super().select_victims_on_node(state, pod, node_info, pdbs)

    own = OwnVictims(w.handle, 10, 100)
    own.set_framework(w.fwk)
    state, m = w.filtered()
    potential = m.nodes_for_code(w.snapshot.list(), Code.Unschedulable)
    assert own.columnar_victims(state, w.preemptor, m, potential, []) is None


def _whole_and_loop(seed: int, few: bool) -> tuple[Any, Any] | None:
    """The columns' whole dry run and the Evaluator's loop over the same answers,
    for one randomised cluster (`few`: wanting one or two candidates, so the loop
    stops early); None where the columns leave the loop to run."""
    w = _World(seed)
    state, m = w.filtered()
    ev = w.plugin.evaluator
    potential = m.nodes_for_code(w.snapshot.list(), Code.Unschedulable)
    pdbs = ev.list_pdbs()
    fast = w.plugin.columnar_victims(state, w.preemptor, m, potential, pdbs) if potential else None
    if fast is None:
        return None
    offset, num = w.handle.rand.randrange(len(potential)), w.plugin.calculate_num_candidates(len(potential))
    if few:
        num = 1 + seed % 2
    whole = fast.whole_dry_run(offset, num)
    if whole is None:
        return None

    def said(dry: Any) -> tuple[Any, ...]:
        return ([(c.name, [v.name for v in c.victims], c.num_pdb_violations) for c in dry.candidates],
                [(n, st.code, st.message(), st.plugin) for n, st in dry.node_to_status.items()], dry.errors)

    return said(whole), said(ev.dry_run_preemption(state, w.preemptor, potential, pdbs, offset, num, fast))


def test_the_whole_dry_run_in_columns_says_what_the_loop_over_its_answers_says() -> None:
    """Candidates, victims, and the statuses in the loop's order, for every cluster
    where the columns answer the whole dry run (no PDBs, no gang rows)."""
    answered = 0
    for seed in range(3 * CASES):
        got = _whole_and_loop(seed, few=seed % 3 == 0)
        if got is not None:
            answered += 1
            assert got[0] == got[1]
    assert answered >= CASES // 4


def _columns_without_pdbs(seed: int) -> tuple[list[Any], Any]:
    """One randomised cluster's potential nodes and its columns' answers, PDBs left out."""
    w = _World(seed)
    state, m = w.filtered()
    potential = m.nodes_for_code(w.snapshot.list(), Code.Unschedulable)
    return potential, (w.plugin.columnar_victims(state, w.preemptor, m, potential, []) if potential else None)


def test_the_node_chosen_from_the_columns_is_the_one_upstreams_order_picks() -> None:
    """DryRunResult.chosen against pickOneNodeForPreemption over the same candidates
    (their victims' priorities, sums, counts and start times), with ties to the first."""
    compared = 0
    for seed in range(3 * CASES):
        potential, fast = _columns_without_pdbs(seed)
        dry = fast.whole_dry_run(0, len(potential)) if fast is not None else None
        if dry is None or len(dry.candidates) < 2:
            continue
        compared += 1
        by_node = {c.name: c for c in dry.candidates}
        assert dry.chosen is not None and dry.chosen.name == pick_one_node_for_preemption(by_node)
    assert compared >= CASES // 4


def test_a_dry_run_read_only_for_its_choice_gives_the_candidate_the_whole_list_chooses() -> None:
    """whole_dry_run(chosen_only=True), as the Evaluator asks it when no extender
    narrows the list: the one candidate it gives is the whole list's choice (name,
    victims, PDB count), and the nodes without candidates say the same."""
    compared = 0
    for seed in range(3 * CASES):
        potential, fast = _columns_without_pdbs(seed)
        offset, num = seed % max(1, len(potential)), 1 + seed % 4
        every = fast.whole_dry_run(offset, num, False) if fast is not None else None
        alone = fast.whole_dry_run(offset, num, True) if fast is not None else None
        if every is None or every.chosen is None:
            continue
        compared += 1
        assert alone is not None and alone.candidates == [alone.chosen]
        assert (alone.chosen.name, alone.chosen.victims, alone.chosen.num_pdb_violations) == (
            every.chosen.name, every.chosen.victims, every.chosen.num_pdb_violations)
        assert every.chosen in every.candidates
        assert dict(alone.node_to_status.items()) == dict(every.node_to_status.items())
    assert compared >= CASES // 8
