"""The scheduler's ordinary cycles reading node-local Filter verdicts and raw scores
from columns kept across cycles (framework/runtime/node_local.py, `begin_cycle`):
a sequence of pods, with nodes and running pods changing between cycles, lands
exactly where cycles without the columns put it (the same windows and scores, the
same placements, the same statuses for the nodes that failed, with a seeded rng),
while a run of same-shape pods filters and scores only the nodes that moved."""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from framework.algorithm import FitError, SchedulingAlgorithm, SchedulingError
from framework.api.objects import Pod
from framework.cache import Cache, Snapshot
from framework.config import Registry, build_frameworks, full_registry, load_config
from framework.handle import FrameworkHandle, InMemoryObjects
from framework.interface import CycleState, SignPurpose
from framework.plugins.helper import uniform_value
from framework.plugins.helper.signing import ALL_SIGNED
from framework.runtime.node_local import NodeLocalColumns, NodeLocalCounts
from tests.framework.test_node_local_columns import CONFIG, NS, NodeSpec, Recording, node, node_specs, running


# percentageOfNodesToScore: windows of 100 nodes (its floor), so a few hundred nodes hold
# the four windows or more the columns need in ordinary cycles.
PERCENTAGE = 10


@dataclass(frozen=True)
class PodShape:
    cpu: int  # milli
    tolerate_prefer: bool = False
    prefer_zone: str = ""


@dataclass(frozen=True)
class Change:
    """What happens between two cycles: a running pod starts on a node, one ends, or a
    node is replaced by another spec (taints, cordon, capacity)."""

    kind: str  # "start" | "end" | "node"
    at: int  # node index (modulo the cluster size)
    cpu: int = 0
    spec: NodeSpec | None = None
    listed: bool = True  # the node change reaches the lister too (as the scheduler's events do)


def plain_pod(i: int, shape: PodShape) -> Pod:
    spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": {"cpu": f"{shape.cpu}m",
                                                                                    "memory": "100Mi"}}}]}
    if shape.tolerate_prefer:
        spec["tolerations"] = [{"key": "soft0", "operator": "Exists", "effect": "PreferNoSchedule"}]
    if shape.prefer_zone:
        spec["affinity"] = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 10, "preference": {"matchExpressions": [
                {"key": "zone", "operator": "In", "values": [shape.prefer_zone]}]}}]}}
    return Pod({"metadata": {"name": f"p{i}", "namespace": NS, "uid": f"p{i}"}, "spec": spec})


@dataclass
class Cycles:
    placements: list[str] = field(default_factory=list)  # the node, or the failure's message
    failures: list[dict[str, str]] = field(default_factory=list)
    scored: list[tuple[list[str], list[int]]] = field(default_factory=list)
    columns: NodeLocalColumns | None = None


def run_cycles(nodes: list[NodeSpec], pods: list[PodShape], changes: list[Change | None], seed: int,
               columns: bool, config: dict[str, Any] = CONFIG, registry: Registry | None = None) -> Cycles:
    """Each pod scheduled in turn (assumed where it lands), the change of its index
    applied before its cycle."""
    node_objs = [node(i, spec) for i, spec in enumerate(nodes)]
    cache, snapshot = Cache(), Snapshot()
    for n in node_objs:
        cache.add_node(n)
    runs: list[Pod] = []
    for i, (n, spec) in enumerate(zip(node_objs, nodes)):
        if spec.used:
            runs.append(running(i, n.name, spec.used))
            cache.add_pod(runs[-1])
    objects = InMemoryObjects(node_objs)
    handle = FrameworkHandle(snapshot=snapshot, objects=objects, clock=lambda: 0.0)
    fwk = build_frameworks(load_config(config), handle, registry)["default-scheduler"]
    algorithm = Recording(seed)
    algorithm.global_percentage = PERCENTAGE
    out = Cycles(columns=NodeLocalColumns() if columns else None)
    for k, (shape, change) in enumerate(zip(pods, changes)):
        if change is not None:
            at = change.at % len(node_objs)
            if change.kind == "start":
                runs.append(running(1000 + k, node_objs[at].name, change.cpu))
                cache.add_pod(runs[-1])
            elif change.kind == "end" and runs:
                cache.remove_pod(runs.pop(at % len(runs)))
            elif change.kind == "node" and change.spec is not None:
                replaced = node(at, change.spec)
                cache.add_node(replaced)
                if change.listed:
                    objects.put(replaced)
        cache.update_snapshot(snapshot)
        handle.set_snapshot(snapshot)
        pod = plain_pod(k, shape)
        if out.columns is not None:
            out.columns.begin_cycle(pod, objects.revision)
            algorithm.node_local = out.columns
        try:
            result = algorithm.schedule_pod(fwk, CycleState(), pod, snapshot)
        except FitError as e:
            out.placements.append(e.message())
            out.failures.append({n: s.message() for n, s in e.diagnosis.node_to_status.statuses.items()})
            continue
        except SchedulingError as e:  # an Error status ends the cycle (a plugin's invalid score)
            out.placements.append(str(e))
            continue
        finally:
            algorithm.node_local = None
        out.placements.append(result.suggested_host)
        cache.assume_pod(pod.with_node_name(result.suggested_host), result.suggested_host)
    out.scored = algorithm.scored
    return out


def assert_same(nodes: list[NodeSpec], pods: list[PodShape], changes: list[Change | None], seed: int,
                **profile: Any) -> Cycles:
    plain = run_cycles(nodes, pods, changes, seed, columns=False, **profile)
    by_columns = run_cycles(nodes, pods, changes, seed, columns=True, **profile)
    assert by_columns.scored == plain.scored
    assert by_columns.placements == plain.placements
    assert by_columns.failures == plain.failures
    return by_columns


pod_shapes = st.builds(PodShape, cpu=st.sampled_from([100, 300, 700, 3000]), tolerate_prefer=st.booleans(),
                       prefer_zone=st.sampled_from(["", "", "a"]))
changes = st.one_of(
    st.none(), st.none(), st.none(),
    st.builds(Change, kind=st.just("start"), at=st.integers(0, 400), cpu=st.sampled_from([100, 900])),
    st.builds(Change, kind=st.just("end"), at=st.integers(0, 400)),
    st.builds(Change, kind=st.just("node"), at=st.integers(0, 400), spec=node_specs, listed=st.booleans()),
)


@st.composite
def sequences(draw: Any) -> tuple[list[NodeSpec], list[PodShape], list[Change | None], int]:
    kinds_of_node = draw(st.lists(node_specs, min_size=2, max_size=30))
    pick = random.Random(draw(st.integers(0, 1 << 16)))
    nodes = [pick.choice(kinds_of_node) for _ in range(draw(st.integers(400, 520)))]
    kinds = draw(st.lists(pod_shapes, min_size=1, max_size=3))
    count = draw(st.integers(1, 40))
    pods = [kinds[draw(st.integers(0, len(kinds) - 1))] for _ in range(count)]
    return nodes, pods, [draw(changes) for _ in range(count)], draw(st.integers(0, 1 << 16))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(sequences())
def test_pods_land_where_cycles_without_the_columns_put_them_while_the_cluster_changes(case: Any) -> None:
    nodes, pods, changes_, seed = case
    assert_same(nodes, pods, changes_, seed)


def test_a_run_of_one_shape_filters_and_scores_only_the_nodes_that_moved_after_the_first_lap() -> None:
    # 1,000 nodes, 100 looked for a pod: the windows come round every 10 pods, and after
    # the first lap a refresh takes only the nodes pods were assumed on since.
    nodes = [NodeSpec(cpu=4000, used=0, prefer_taints=i % 3 == 0) for i in range(1000)]
    run = assert_same(nodes, [PodShape(cpu=100)] * 30, [None] * 30, seed=7)
    counts = run.columns.counts
    assert len(set(run.placements)) == 30
    # Computed: each node once (its first window) plus each node a pod was assumed on,
    # once, for the Filter column and the three node-local scorers (Fit, BalancedAllocation,
    # TaintToleration): far below 30 full passes of 420 nodes.
    assert counts.rows_computed <= 4 * (1000 + 30)
    assert counts.rows_read == 30 * 100 * 4


def test_a_change_of_a_lister_object_drops_the_columns_and_the_next_pod_computes_its_window_again() -> None:
    nodes = [NodeSpec(cpu=4000, used=0) for _ in range(1000)]
    same = assert_same(nodes, [PodShape(cpu=100)] * 11, [None] * 11, seed=3)
    cordon = Change(kind="node", at=999, spec=NodeSpec(cpu=4000, used=0, unschedulable=True))
    dropped = assert_same(nodes, [PodShape(cpu=100)] * 11, [None] * 10 + [cordon], seed=3)
    # The eleventh pod's window (the first one's again) is read in the first run, but for
    # the ten nodes pods were assumed on; after the node's change reached the lister its
    # hundred nodes are filtered and scored afresh.
    assert dropped.columns.counts.rows_computed - same.columns.counts.rows_computed >= 4 * 90


def test_a_view_of_fewer_than_four_windows_takes_the_ordinary_pass() -> None:
    # 300 nodes, 100 looked for a pod: three windows, so nearly every pod's window holds a
    # node a pod was assumed on and the columns would save no plugin call.
    run = assert_same([NodeSpec(cpu=4000, used=0)] * 300, [PodShape(cpu=100)] * 6, [None] * 6, seed=5)
    assert run.columns.counts == NodeLocalCounts()


def test_nodes_filled_by_earlier_pods_fail_in_the_windows_that_come_back_to_them_with_the_same_statuses() -> None:
    # One 700m pod fills a 1000m node: every pod after the first lap meets, in its window,
    # nodes the pods before filled (moved rows that now fail NodeResourcesFit), and the
    # last pods find no room at all (the same diagnosis as their own pass gives).
    nodes = [NodeSpec(cpu=1000, used=0, hard_taint=i % 9 == 0) for i in range(400)]
    run = assert_same(nodes, [PodShape(cpu=700)] * 370, [None] * 370, seed=13)
    placed = [p for p in run.placements if p.startswith("n")]
    assert len(placed) == len(set(placed)) == 400 - 45  # each untainted node once
    assert run.failures and all(len(f) == 400 for f in run.failures)
    assert run.columns.counts.rows_read > run.columns.counts.rows_computed


class OverOnBusyNodes:
    """A node-local Score plugin without NormalizeScore that gives a node holding a pod
    an invalid score (101): the runtime's range check must find it when it is read
    from a column as when it is scored."""

    name = "OverOnBusyNodes"
    score_node_local = True

    def sign_pod(self, pod: Pod, purpose: SignPurpose) -> Any:
        return ALL_SIGNED

    def score(self, state: CycleState, pod: Pod, node_info: Any) -> tuple[int, None]:
        return (101 if node_info.pods else 50), None

    def score_extensions(self) -> None:
        return None


def test_an_invalid_score_stored_in_a_column_fails_the_cycle_that_reads_it_as_the_plain_pass_does() -> None:
    # 1,000 nodes, windows of 100: the eleventh pod's window holds the node the first pod
    # was assumed on, refreshed into the column at 101; the cycles before read only 50s.
    reg = full_registry()
    reg.register(OverOnBusyNodes.name, lambda args, handle: OverOnBusyNodes())
    config = {**CONFIG, "profiles": [{"schedulerName": "default-scheduler",
                                      "plugins": {"score": {"enabled": [{"name": OverOnBusyNodes.name}]}}}]}
    nodes = [NodeSpec(cpu=4000, used=0) for _ in range(1000)]
    run = assert_same(nodes, [PodShape(cpu=100)] * 12, [None] * 12, seed=11, config=config, registry=reg)
    assert all(p.startswith("n") for p in run.placements[:10])
    assert 'plugin "OverOnBusyNodes" returns an invalid score 101' in run.placements[10]


def _taint_toleration_reads(monkeypatch: Any, nodes: list[NodeSpec], pods: int) -> list[Any]:
    """Each raw-score read of TaintToleration from the columns over `pods` cycles (the
    placements checked against cycles without the columns)."""
    reads: list[Any] = []
    served = NodeLocalColumns.raw_scores

    def spy(self: NodeLocalColumns, pl: Any, *args: Any) -> Any:
        got = served(self, pl, *args)
        if got is not None and pl.name == "TaintToleration":
            reads.append(got[0])
        return got

    monkeypatch.setattr(NodeLocalColumns, "raw_scores", spy)
    assert_same(nodes, [PodShape(cpu=100)] * pods, [None] * pods, seed=7)
    return reads


def test_a_score_column_whose_every_stored_value_is_one_is_read_as_that_value_without_a_copy(monkeypatch: Any) -> None:
    # Untainted nodes: TaintToleration stores only zeros, so each read is one zero seen
    # through a stride of 0 (the runtime then weighs the plugin once); where a third of
    # the nodes carry a PreferNoSchedule taint the reads are the stored values.
    reads = _taint_toleration_reads(monkeypatch, [NodeSpec(cpu=4000, used=0) for _ in range(1000)], 12)
    assert len(reads) == 12 and all(uniform_value(r) == 0 and len(r) == 100 for r in reads)
    monkeypatch.undo()
    tainted = [NodeSpec(cpu=4000, used=0, prefer_taints=i % 3 == 0) for i in range(1000)]
    reads = _taint_toleration_reads(monkeypatch, tainted, 12)
    assert len(reads) == 12 and all(uniform_value(r) is None and sorted(set(r.tolist())) == [0, 1] for r in reads)


def test_a_refresh_of_up_to_three_nodes_runs_the_per_node_forms(monkeypatch: Any) -> None:
    # Two windows of 100 on 200 nodes (the columns allowed there): after the first lap a
    # pod's window holds one or two nodes a pod was assumed on, refreshed by the per-node
    # Filter and Score (the columnar forms' fixed cost is several nodes' per-node calls),
    # with the same placements and scores as the columnar refreshes give.
    from framework.plugins.noderesources.fit import NodeResourcesFit
    sizes: list[tuple[str, int]] = []
    for method in ("filter_nodes", "score_nodes"):
        columnar = getattr(NodeResourcesFit, method)

        def counted(self: Any, state: Any, pod: Any, nodes: Any, _f: Any = columnar, _m: str = method) -> Any:
            sizes.append((_m, len(nodes)))
            return _f(self, state, pod, nodes)

        monkeypatch.setattr(NodeResourcesFit, method, counted)
    per_node = NodeResourcesFit.score
    scored_one: list[str] = []

    def score(self: Any, state: Any, pod: Any, node_info: Any) -> Any:
        scored_one.append(node_info.name)
        return per_node(self, state, pod, node_info)

    monkeypatch.setattr(NodeResourcesFit, "score", score)
    import framework.runtime.node_local as node_local
    monkeypatch.setattr(node_local, "_MIN_WINDOWS", 2)  # columns over two windows: refreshes of a node or two
    sizes.clear()
    run = run_cycles([NodeSpec(cpu=4000, used=0)] * 200, [PodShape(cpu=100)] * 12, [None] * 12, seed=5, columns=True)
    columnar = [(m, k) for m, k in sizes]
    assert run.columns is not None and run.columns.counts.rows_computed > 4 * 200  # some rows were refreshed
    assert scored_one  # ... one by one
    assert all(k > 3 for _m, k in columnar)  # no columnar call for three nodes or fewer
