"""Opportunistic batching (framework/batching.py) against upstream 1.35's rules, one
by one: when a hint is given and taken, and each reason the stored list is not
used or dropped (pod_skipped, pod_failed, pod_incompatible, expired, node_missing,
node_not_full, empty_list, pod_not_batchable), and which profiles sign at all.

The cycles run the real default plugins through SchedulingAlgorithm, as the
Scheduler actor does; time is a FakeClock."""
from __future__ import annotations

import random
from typing import Any

import pytest

from actors.clock import FakeClock
from framework import batching
from framework.algorithm import SchedulingAlgorithm
from framework.attempt_outcome import FitError
from framework.api.objects import Node, Pod
from framework.batching import Batching, ProfileBatch, SortedNodes, batching_signer
from framework.cache import Cache, Snapshot
from framework.config import build_frameworks, load_config
from framework.features import FeatureGates
from framework.handle import FrameworkHandle
from framework.interface import CycleState, NodePluginScores

PROFILE = "default-scheduler"
# upstream's batching suite config: PodTopologySpread without system default constraints.
NO_DEFAULT_SPREAD: dict[str, Any] = {
    "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
    "profiles": [{"schedulerName": PROFILE, "pluginConfig": [
        {"name": "PodTopologySpread", "args": {"defaultingType": "List", "defaultConstraints": []}}]}]}


def node(name: str, cpu: str = "4") -> Node:
    alloc = {"cpu": cpu, "memory": "32Gi", "pods": "110"}
    return Node({"kind": "Node", "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
                 "status": {"capacity": alloc, "allocatable": alloc}})


def pod(name: str, cpu: str = "3", labels: dict[str, str] | None = None, **spec: Any) -> Pod:
    return Pod({"kind": "Pod", "metadata": {"name": name, "uid": name, "labels": labels or {"signature": "a"}},
                "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}],
                         **spec}})


class Cycles:
    """A scheduler in miniature: one cycle per pod, the chosen node assumed."""

    def __init__(self, nodes: int = 4, cpu: str = "4", config: dict[str, Any] | None = NO_DEFAULT_SPREAD,
                 extenders: bool = False) -> None:
        self.clock = FakeClock()
        self.flushed: list[str] = []
        self.attempts: list[str] = []
        self.frameworks = build_frameworks(load_config(config), FrameworkHandle(features=FeatureGates()))
        self.fwk = self.frameworks[PROFILE]
        self.cache = Cache()
        for i in range(nodes):
            self.cache.add_node(node(f"n{i}", cpu))
        self.snapshot = Snapshot()
        self.cycle = 0
        self.algorithm = SchedulingAlgorithm(random.Random(7))
        self.algorithm.batching = Batching(self.frameworks, extenders, self.clock.now, lambda: self.cycle,
                                           lambda p, r: self.flushed.append(r), lambda p, r: self.attempts.append(r))
        self.batch: ProfileBatch = self.algorithm.batching.profiles[PROFILE]

    def schedule(self, p: Pod) -> str | None:
        self.cycle += 1
        self.cache.update_snapshot(self.snapshot)
        self.fwk.handle.set_snapshot(self.snapshot)
        try:
            host = self.algorithm.schedule_pod(self.fwk, CycleState(), p, self.snapshot).suggested_host
        except FitError:
            return None
        self.cache.assume_pod(p.with_node_name(host), host)
        return host


def test_same_signature_pods_take_the_hint_one_per_node() -> None:
    c = Cycles()
    hosts = [c.schedule(pod(f"p{i}")) for i in range(4)]
    assert sorted(hosts) == ["n0", "n1", "n2", "n3"]
    assert c.attempts == ["no_hint", "hint_used", "hint_used", "hint_used"]
    assert c.batch.batched_pods == 3 and c.flushed == []
    # The list is used up: no state, so no hint and nothing flushed; the pod fits nowhere.
    assert c.schedule(pod("p4")) is None
    assert c.attempts[-1] == "no_hint" and c.flushed == []


def test_a_cycle_between_is_pod_skipped() -> None:
    c = Cycles()
    c.schedule(pod("p0"))
    c.cycle += 1  # another profile's pod, or a failed one, had a cycle
    c.schedule(pod("p1"))
    assert c.flushed == ["pod_skipped"] and c.attempts == ["no_hint", "no_hint"]


def test_a_failed_pod_in_between_makes_the_next_one_pod_skipped() -> None:
    c = Cycles()
    c.schedule(pod("p0"))
    assert c.schedule(pod("big", cpu="5", labels={"signature": "big"})) is None  # never stores
    c.schedule(pod("p1"))
    assert c.flushed == ["pod_incompatible", "pod_skipped"]


def test_pod_failed_when_the_last_cycle_did_not_succeed() -> None:
    # Upstream only ever stores succeeded cycles; the check is still there, in its place.
    c = Cycles()
    c.schedule(pod("p0"))
    assert c.batch.last is not None
    c.batch.last.succeeded = False
    c.schedule(pod("p1"))
    assert c.flushed == ["pod_failed"]


def test_another_signature_is_pod_incompatible() -> None:
    c = Cycles()
    c.schedule(pod("p0"))
    c.schedule(pod("p1", labels={"signature": "b"}))
    assert c.flushed == ["pod_incompatible"] and c.attempts == ["no_hint", "no_hint"]


def test_an_unsignable_pod_is_pod_incompatible_and_then_not_batchable() -> None:
    c = Cycles()
    c.schedule(pod("p0"))
    spread = [{"maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "DoNotSchedule",
               "labelSelector": {"matchLabels": {"signature": "a"}}}]
    assert c.schedule(pod("p1", topologySpreadConstraints=spread)) is not None
    assert c.flushed == ["pod_incompatible", "pod_not_batchable"]
    assert c.batch.state is None


@pytest.mark.parametrize("waited, reason", [(0.5, None), (0.501, "expired")])
def test_a_list_older_than_500ms_is_expired(waited: float, reason: str | None) -> None:
    c = Cycles()
    c.schedule(pod("p0"))
    c.clock.advance(waited)
    c.schedule(pod("p1"))
    assert c.flushed == ([reason] if reason else [])
    assert c.attempts[-1] == ("no_hint" if reason else "hint_used")


def test_the_last_chosen_node_gone_is_node_missing() -> None:
    c = Cycles()
    first = c.schedule(pod("p0"))
    assert first is not None
    c.cache.remove_node(first)
    c.schedule(pod("p1"))
    assert c.flushed == ["node_missing"]


def test_a_pod_that_still_fits_the_last_node_is_node_not_full() -> None:
    c = Cycles()
    c.schedule(pod("p0", cpu="1"))
    c.schedule(pod("p1", cpu="1"))
    assert c.flushed[0] == "node_not_full"
    assert "hint_used" not in c.attempts


def test_a_pod_with_one_feasible_node_stores_an_empty_list() -> None:
    c = Cycles(nodes=1)
    c.schedule(pod("p0"))
    assert c.flushed == ["empty_list"] and c.batch.state is None


def test_a_hint_that_no_longer_fits_is_not_used_and_the_list_is_replaced() -> None:
    c = Cycles()
    c.schedule(pod("p0"))
    assert c.batch.state is not None
    head = c.batch.state.nodes._names[-1]
    c.cache.add_pod(pod("squatter", cpu="2", labels={"other": "x"}).with_node_name(head))
    host = c.schedule(pod("p1"))
    assert host is not None and host != head
    assert c.attempts == ["no_hint", "hint_not_used"]
    assert c.batch.state is not None and head not in c.batch.state.nodes._names


def test_a_nominated_pod_takes_its_node_and_the_hint_is_not_used() -> None:
    c = Cycles()
    c.schedule(pod("p0"))
    nominated = pod("p1")
    nominated.raw.setdefault("status", {})["nominatedNodeName"] = "n3"
    p1 = Pod(nominated.raw)
    c.schedule(p1)
    assert c.attempts[-1] == "hint_not_used"


def test_default_spreading_switches_signing_off_for_every_pod() -> None:
    # The default profile's PodTopologySpread has system default constraints.
    c = Cycles(config=None)
    assert [c.schedule(pod(f"p{i}")) for i in range(3)].count(None) == 0
    assert c.batch.state is None and "hint_used" not in c.attempts
    assert c.flushed == ["pod_not_batchable"] * 3


def test_extenders_switch_signing_off_for_the_profile() -> None:
    c = Cycles(extenders=True)
    assert not c.batch.signer.enabled
    c.schedule(pod("p0"))
    c.schedule(pod("p1"))
    assert c.flushed == ["pod_not_batchable", "pod_not_batchable"]


def test_a_score_plugin_that_cannot_sign_switches_the_profile_off() -> None:
    cfg = {**NO_DEFAULT_SPREAD, "profiles": [{**NO_DEFAULT_SPREAD["profiles"][0], "plugins": {
        "score": {"enabled": [{"name": "SelectorSpread", "weight": 1}]}}}]}
    fwk = build_frameworks(load_config(cfg), FrameworkHandle())[PROFILE]
    signer = batching_signer(fwk, False)
    assert signer.unsigned == ["SelectorSpread"] and signer.sign(pod("p"), False) is None


def test_pod_affinity_is_not_signed() -> None:
    fwk = build_frameworks(load_config(NO_DEFAULT_SPREAD), FrameworkHandle())[PROFILE]
    signer = batching_signer(fwk, False)
    term = {"labelSelector": {"matchLabels": {"a": "b"}}, "topologyKey": "kubernetes.io/hostname"}
    assert signer.sign(pod("p"), False) is not None
    for kind in ("podAffinity", "podAntiAffinity"):
        assert signer.sign(pod("p", affinity={kind: {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}),
                           False) is None


def test_the_gate_off_gives_no_batching() -> None:
    off = build_frameworks(load_config(None), FrameworkHandle(features=FeatureGates({batching.GATE: False})))
    on = build_frameworks(load_config(None), FrameworkHandle(features=FeatureGates()))
    assert batching.for_scheduler(off, False, lambda: 0.0, lambda: 0, None) is None
    assert batching.for_scheduler(on, False, lambda: 0.0, lambda: 0, _Sink()) is not None


class _Sink:
    def batch_attempt(self, profile: str, result: str) -> None:
        pass

    def batch_cache_flushed(self, profile: str, reason: str) -> None:
        pass


def test_sorted_nodes_put_the_highest_score_first_and_break_ties_at_random() -> None:
    scores = [NodePluginScores("a", total_score=5), NodePluginScores("b", total_score=9),
              NodePluginScores("c", total_score=9), NodePluginScores("d", total_score=1)]
    firsts = set()
    for seed in range(20):
        s = SortedNodes(scores, random.Random(seed))
        order = [s.pop() for _ in range(4)]
        assert set(order[:2]) == {"b", "c"} and order[2:] == ["a", "d"]
        firsts.add(order[0])
    assert firsts == {"b", "c"}
