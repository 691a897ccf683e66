"""Differential property test: the columnar filter pass over nodes with pods
nominated to them (the Fit verdict taken again in columns, with the nominated pods'
requests added to the node's row) gives every node the same status (code, reasons,
plugin) as upstream's per-node RunFilterPluginsWithNominatedPods, over random
clusters, random nominated pods of random priorities and random incoming pods.

The pass runs twice per example with the nominations changed in between, so copies
kept from the first pass (NominatedCopies) must not leak into the second.
"""
from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from framework.api.objects import Pod
from framework.cache import PodInfo, Snapshot
from framework.config import build_frameworks, load_config
from framework.handle import FrameworkHandle
from framework.interface import CycleState
from tests.framework.test_columnar_differential import SETTINGS, cluster, pod, resource_list, statuses_on_its_path

PRIORITIES = st.sampled_from([0, 10, 100])


def with_priority(p: Pod, priority: int) -> Pod:
    raw = dict(p.raw)
    raw["spec"] = {**p.raw["spec"], "priority": priority}
    return Pod(raw)


@st.composite
def nominations(draw: Any, num_nodes: int, tag: str) -> dict[str, list[PodInfo]]:
    out: dict[str, list[PodInfo]] = {}
    for k in range(draw(st.integers(0, 2 * num_nodes))):
        nominated = with_priority(draw(pod(f"{tag}{k}", spread=False)), draw(PRIORITIES))
        out.setdefault(f"n{draw(st.integers(0, num_nodes - 1))}", []).append(PodInfo(nominated))
    return out


@st.composite
def world(draw: Any) -> tuple[Snapshot, Pod, dict[str, list[PodInfo]], dict[str, list[PodInfo]]]:
    snapshot, incoming = draw(cluster(spread=draw(st.sampled_from([False, None]))))
    incoming = with_priority(incoming, draw(PRIORITIES))
    n = len(snapshot.list())
    first = draw(nominations(n, "a"))
    # The second pass keeps some first nominations (the same PodInfo objects) and adds others.
    second = {name: [pi for pi in pis if draw(st.booleans())] for name, pis in first.items()}
    for name, pis in draw(nominations(n, "b")).items():
        second.setdefault(name, []).extend(pis)
    return snapshot, incoming, first, second


def verdicts(statuses: list) -> list[tuple[str, tuple[str, ...], str]]:
    return [(s.code.name, tuple(s.reasons), s.plugin) for s in statuses]


@SETTINGS
@given(world())
def test_the_columnar_nominated_pods_pass_gives_each_node_the_per_node_verdict(
        w: tuple[Snapshot, Pod, dict[str, list[PodInfo]], dict[str, list[PodInfo]]]) -> None:
    snapshot, incoming, first, second = w
    current = {"nominated": first}
    handle = FrameworkHandle(snapshot=snapshot, nominated=lambda n: list(current["nominated"].get(n, [])),
                             nominated_nodes=lambda: current["nominated"].keys())
    cfg = load_config({"profiles": [{"schedulerName": "default-scheduler"}]})
    columnar = build_frameworks(cfg, handle)["default-scheduler"]
    per_node = build_frameworks(cfg, handle)["default-scheduler"]
    per_node.use_columnar = False
    nodes = snapshot.list()
    for nominated in (first, second):
        current["nominated"] = nominated
        outcome = []
        for fwk in (columnar, per_node):
            state = CycleState()
            _, pst, _ = fwk.run_pre_filter(state, incoming)
            if not pst.is_success():
                outcome.append(("preFilter", pst.code.name, tuple(pst.reasons)))
                continue
            outcome.append(verdicts(statuses_on_its_path(fwk, state, incoming, nodes)))
        assert outcome[0] == outcome[1]


class VersionedNominations:
    """A NominatorView whose version moves with each node's change, as the
    scheduler's nominator's does, so the columns of nominated pods are kept between
    passes and only the changed nodes read again."""

    def __init__(self) -> None:
        self.by_node: dict[str, list[PodInfo]] = {}
        self.version = 0
        self.log: list[str] = []  # the node each version step touched

    def set(self, by_node: dict[str, list[PodInfo]]) -> None:
        for name in sorted({*self.by_node, *by_node}):
            old, new = self.by_node.get(name, []), by_node.get(name, [])
            if len(old) != len(new) or any(a is not b for a, b in zip(old, new)):
                self.log.append(name)
                self.version += 1
        self.by_node = by_node

    def nodes_changed_since(self, version: int) -> list[str]:
        return self.log[version:]

    def pods_for_node(self, node_name: str) -> list[PodInfo]:
        return list(self.by_node.get(node_name, []))

    def nodes(self) -> list[str]:
        return list(self.by_node)


@st.composite
def table_world(draw: Any) -> tuple[Snapshot, Pod, dict[str, list[PodInfo]], dict[str, list[PodInfo]]]:
    """world() with an incoming pod asking only for cpu, memory and ephemeral storage
    (the nominated pods may ask for anything): the pass adds the nominated pods'
    requests to the table's columns (NominatedColumns) instead of copying nodes."""
    snapshot, _ = draw(cluster(spread=False))
    requests = draw(resource_list(("memory", "ephemeral-storage")))
    requests["cpu"] = f"{draw(st.integers(1, 8000))}m"
    incoming = with_priority(Pod({"metadata": {"name": "incoming", "namespace": "default", "uid": "incoming"},
                                  "spec": {"containers": [{"name": "c", "resources": {"requests": requests}}]}}),
                             draw(PRIORITIES))
    n = len(snapshot.list())
    first = draw(nominations(n, "a"))
    if draw(st.booleans()):  # the incoming pod nominated too: it never counts against itself
        first.setdefault(f"n{draw(st.integers(0, n - 1))}", []).append(PodInfo(incoming))
    second = {name: [pi for pi in pis if draw(st.booleans())] for name, pis in first.items()}
    for name, pis in draw(nominations(n, "b")).items():
        second.setdefault(name, []).extend(pis)
    return snapshot, incoming, first, second


@SETTINGS
@given(table_world())
def test_nominated_pods_added_as_columns_give_each_node_the_per_node_verdict(
        w: tuple[Snapshot, Pod, dict[str, list[PodInfo]], dict[str, list[PodInfo]]]) -> None:
    snapshot, incoming, first, second = w
    view = VersionedNominations()
    handle = FrameworkHandle(snapshot=snapshot)
    handle.connect(nominator=view)
    cfg = load_config({"profiles": [{"schedulerName": "default-scheduler"}]})
    columnar = build_frameworks(cfg, handle)["default-scheduler"]
    per_node = build_frameworks(cfg, handle)["default-scheduler"]
    per_node.use_columnar = False
    nodes = snapshot.list()
    for nominated in (first, second, first):
        view.set(nominated)
        outcome = []
        for fwk in (columnar, per_node):
            state = CycleState()
            _, pst, _ = fwk.run_pre_filter(state, incoming)
            assert pst.is_success()
            outcome.append(verdicts(statuses_on_its_path(fwk, state, incoming, nodes)))
        assert outcome[0] == outcome[1]
