"""PodTopologySpread: constraints, PreFilter/Filter, AddPod/RemovePod, args and hints.
Scoring is in test_pod_topology_spread_score.py."""
import random

import pytest

from framework.api.errors import ValidationError
from framework.api.objects import Node, Pod
from framework.cache import PodInfo, Snapshot
from framework.features import FeatureGates
from framework.handle import FrameworkHandle, InMemoryObjects
from framework.interface import ActionType, Code, CycleState, QueueingHint, Status
from framework.plugins.nodeaffinity.node_affinity import required_node_affinity
from framework.plugins.podtopologyspread.plugin import PodTopologySpread
from framework.plugins.podtopologyspread.filtering import PRE_FILTER_STATE_KEY, PreFilterState, count_matching_pods

NOT_MATCH = Status(Code.Unschedulable, "node(s) didn't match pod topology spread constraints")
MISSING_LABEL = Status(Code.UnschedulableAndUnresolvable, "node(s) didn't match pod topology spread constraints (missing required label)")
LIST = {"defaultingType": "List"}


def node(name: str, taints: list[dict] | None = None, **labels: str) -> Node:
    return Node({"metadata": {"name": name, "labels": labels}, "spec": {"taints": taints or []}})


def constraint(key: str, max_skew: int = 1, when: str = "DoNotSchedule", selector: dict | None = None, **extra) -> dict:
    c = {"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": when, **extra}
    c["labelSelector"] = selector if selector is not None else {"matchLabels": {"app": "web"}}
    return c


def pod(name: str, labels: dict | None = None, node_name: str = "", namespace: str = "default",
        constraints: list[dict] | None = None, **spec: object) -> Pod:
    s: dict = {"containers": [], "topologySpreadConstraints": constraints or [], **spec}
    if node_name:
        s["nodeName"] = node_name
    return Pod({"metadata": {"name": name, "namespace": namespace, "labels": labels or {}}, "spec": s})


WEB = {"app": "web"}
NODES = [node("a1", zone="a", host="a1"), node("a2", zone="a", host="a2"),
         node("b1", zone="b", host="b1"), node("b2", zone="b", host="b2")]


def setup(nodes: list[Node], pods: list[Pod], args: dict | None = None, objects: list = (),
          gates: dict | None = None) -> tuple[PodTopologySpread, Snapshot]:
    snap = Snapshot.build(nodes, pods)
    handle = FrameworkHandle(snapshot=snap, objects=InMemoryObjects(list(objects)), features=FeatureGates(gates))
    return PodTopologySpread.new(args if args is not None else LIST, handle), snap


def verdicts(incoming: Pod, nodes: list[Node], pods: list[Pod], **kw) -> tuple[Status | None, dict]:
    pl, snap = setup(nodes, pods, **kw)
    state = CycleState()
    _, pre = pl.pre_filter(state, incoming, snap.list())
    if pre is not None:
        return pre, {}
    return None, {n.name: pl.filter(state, incoming, n) for n in snap.list()}


def test_pre_filter_skips_a_pod_without_hard_constraints():
    pre, _ = verdicts(pod("p", WEB, constraints=[constraint("zone", when="ScheduleAnyway")]), NODES, [])
    assert pre == Status(Code.Skip)


def test_skew_counts_matching_pods_per_zone_including_the_incoming_pod():
    pods = [pod("e1", WEB, "a1"), pod("e2", WEB, "a2")]
    _, got = verdicts(pod("p", WEB, constraints=[constraint("zone")]), NODES, pods)
    assert got == {"a1": NOT_MATCH, "a2": NOT_MATCH, "b1": None, "b2": None}


def test_a_pod_not_matching_its_own_selector_adds_no_self_match():
    pods = [pod("e1", WEB, "a1")]
    _, got = verdicts(pod("p", {}, constraints=[constraint("zone")]), NODES, pods)
    assert got == {"a1": None, "a2": None, "b1": None, "b2": None}


def test_nodes_without_the_topology_key_are_unresolvable_and_not_counted():
    nodes = [*NODES, node("bare")]
    pods = [pod("e1", WEB, "bare"), pod("e2", WEB, "bare")]
    _, got = verdicts(pod("p", WEB, constraints=[constraint("zone")]), nodes, pods)
    assert got["bare"] == MISSING_LABEL
    assert got["a1"] is None and got["b1"] is None


@pytest.mark.parametrize("extra_pod", [
    pod("x", WEB, "b1", namespace="other"),
    Pod({"metadata": {"name": "y", "labels": WEB, "deletionTimestamp": "2024-01-01T00:00:00Z"},
         "spec": {"containers": [], "nodeName": "b1"}}),
], ids=["other-namespace", "terminating"])
def test_pods_of_other_namespaces_and_terminating_pods_do_not_count(extra_pod):
    _, got = verdicts(pod("p", WEB, constraints=[constraint("zone")]), NODES, [pod("e", WEB, "a1"), extra_pod])
    assert got["b1"] is None and got["a1"] == NOT_MATCH


@pytest.mark.parametrize("min_domains, expect_b1", [(None, None), (2, None), (3, NOT_MATCH)],
                         ids=["default", "enough-domains", "too-few-domains"])
def test_min_domains_makes_the_global_minimum_zero_when_domains_are_missing(min_domains, expect_b1):
    pods = [pod("e1", WEB, "a1"), pod("e2", WEB, "b1")]
    extra = {} if min_domains is None else {"minDomains": min_domains}
    _, got = verdicts(pod("p", WEB, constraints=[constraint("zone", **extra)]), NODES, pods)
    assert got["b1"] == expect_b1


def test_empty_label_selector_counts_no_existing_pod_but_matches_the_incoming_pod():
    pods = [pod("e1", WEB, "a1"), pod("e2", WEB, "a1")]
    _, got = verdicts(pod("p", WEB, constraints=[constraint("zone", selector={})]), NODES, pods)
    assert got == {"a1": None, "a2": None, "b1": None, "b2": None}


def test_node_taints_policy_honor_leaves_untolerated_nodes_out_of_the_domains():
    nodes = [node("a1", zone="a"), node("b1", zone="b"),
             node("c1", taints=[{"key": "k", "effect": "NoSchedule"}], zone="c")]
    pods = [pod("e1", WEB, "a1"), pod("e2", WEB, "b1")]
    honor = constraint("zone", nodeTaintsPolicy="Honor")
    _, got = verdicts(pod("p", WEB, constraints=[honor]), nodes, pods)
    assert got == {"a1": None, "b1": None, "c1": None}
    _, got = verdicts(pod("p", WEB, constraints=[constraint("zone")]), nodes, pods)
    assert got == {"a1": NOT_MATCH, "b1": NOT_MATCH, "c1": None}


@pytest.mark.parametrize("gate, expect_a1", [(True, None), (False, NOT_MATCH)], ids=["gate-on", "gate-off"])
def test_match_label_keys_narrow_the_selector_to_the_pods_own_values_behind_the_gate(gate, expect_a1):
    pods = [pod("e1", {"app": "web", "rev": "1"}, "a1")]
    incoming = pod("p", {"app": "web", "rev": "2"}, constraints=[constraint("zone", matchLabelKeys=["rev"])])
    _, got = verdicts(incoming, NODES, pods, gates={"MatchLabelKeysInPodTopologySpread": gate})
    assert got["a1"] == expect_a1


def test_with_node_inclusion_policy_gate_off_only_nodes_matching_node_affinity_count():
    pods = [pod("e1", WEB, "a1"), pod("e2", WEB, "a2")]
    incoming = pod("p", WEB, constraints=[constraint("zone", nodeAffinityPolicy="Ignore")], nodeSelector={"zone": "a"})
    _, on = verdicts(incoming, NODES, pods)
    _, off = verdicts(incoming, NODES, pods, gates={"NodeInclusionPolicyInPodTopologySpread": False})
    assert on["a1"] == NOT_MATCH  # the policy says Ignore: empty zone b is the minimum, 2 + 1 - 0 > 1
    assert off["a1"] is None  # legacy: only zone a counts, so it is its own minimum, 2 + 1 - 2


# --- AddPod / RemovePod ------------------------------------------------------------------------

def _snapshot_of(state: CycleState) -> tuple:
    s = state.read(PRE_FILTER_STATE_KEY)
    return [dict(m) for m in s.tp_value_to_match_num], list(s.min_match_num), [dict(h) for h in s.domains_at_count]


@pytest.mark.parametrize("extra", [
    pod("n1", WEB, "b2"), pod("n2", WEB, "a1"), pod("n3", {}, "b1"), pod("n4", WEB, "b1", namespace="other"),
], ids=["matching-in-min-zone", "matching-in-max-zone", "not-matching", "other-namespace"])
def test_add_then_remove_pod_restores_the_pre_filter_state(extra):
    pl, snap = setup(NODES, [pod("e1", WEB, "a1"), pod("e2", WEB, "a2")])
    incoming = pod("p", WEB, constraints=[constraint("zone"), constraint("host", max_skew=2)])
    state = CycleState()
    pl.pre_filter(state, incoming, snap.list())
    before = _snapshot_of(state)
    ext = pl.pre_filter_extensions()
    assert ext.add_pod(state, incoming, PodInfo(extra), snap.get(extra.node_name)) is None
    assert ext.remove_pod(state, incoming, PodInfo(extra), snap.get(extra.node_name)) is None
    assert _snapshot_of(state) == before


def test_removing_a_victim_lets_the_crowded_zone_fit_again_and_the_clone_is_independent():
    victims = [pod("e1", WEB, "a1"), pod("e2", WEB, "a2")]
    pl, snap = setup(NODES, victims)
    incoming = pod("p", WEB, constraints=[constraint("zone")])
    state = CycleState()
    pl.pre_filter(state, incoming, snap.list())
    clone = state.clone()
    pl.remove_pod(clone, incoming, PodInfo(victims[0]), snap.get("a1"))
    assert pl.filter(clone, incoming, snap.get("a1")) == NOT_MATCH  # 1 + 1 - 0 = 2
    pl.remove_pod(clone, incoming, PodInfo(victims[1]), snap.get("a2"))
    assert pl.filter(clone, incoming, snap.get("a1")) is None
    assert pl.filter(state, incoming, snap.get("a1")) == NOT_MATCH


def test_global_minimum_stays_exact_through_random_adds_and_removes():
    rng = random.Random(7)
    nodes = [node(f"n{i}", zone=f"z{i % 4}") for i in range(8)]
    pl, snap = setup(nodes, [])
    incoming = pod("p", WEB, constraints=[constraint("zone")])
    state = CycleState()
    pl.pre_filter(state, incoming, snap.list())
    placed: list[Pod] = []
    for step in range(300):
        if placed and rng.random() < 0.45:
            victim = placed.pop(rng.randrange(len(placed)))
            pl.remove_pod(state, incoming, PodInfo(victim), snap.get(victim.node_name))
        else:
            target = nodes[rng.randrange(len(nodes))].name
            added = pod(f"q{step}", WEB, target)
            placed.append(added)
            pl.add_pod(state, incoming, PodInfo(added), snap.get(target))
        fresh = PreFilterState(state.read(PRE_FILTER_STATE_KEY).constraints)
        count_matching_pods(fresh, incoming, Snapshot.build(nodes, placed).list(), required_node_affinity(incoming), True, True)
        s = state.read(PRE_FILTER_STATE_KEY)
        assert s.tp_value_to_match_num == fresh.tp_value_to_match_num
        assert s.min_match_num == fresh.min_match_num


# --- Args ----------------------------------------------------------------------------------------

def test_system_defaulting_is_the_default():
    pl = PodTopologySpread.new(None, FrameworkHandle())
    assert pl.system_defaulted
    assert [c["topologyKey"] for c in pl.default_constraints] == ["kubernetes.io/hostname", "topology.kubernetes.io/zone"]


@pytest.mark.parametrize("args, field, text", [
    ({"defaultingType": "Other"}, "defaultingType", 'Unsupported value: "Other"'),
    ({"defaultConstraints": [constraint("zone", selector=None)]}, "defaultingType", "when .defaultConstraints are not empty"),
    ({"defaultingType": "List", "defaultConstraints": [{"maxSkew": 0, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}]},
     "defaultConstraints[0].maxSkew", "not in valid range (0, inf)"),
    ({"defaultingType": "List", "defaultConstraints": [{"maxSkew": 1, "topologyKey": "", "whenUnsatisfiable": "DoNotSchedule"}]},
     "defaultConstraints[0].topologyKey", "can not be empty"),
    ({"defaultingType": "List", "defaultConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "Maybe"}]},
     "defaultConstraints[0].whenUnsatisfiable", 'Unsupported value: "Maybe"'),
    ({"defaultingType": "List", "defaultConstraints": [constraint("zone")]},
     "defaultConstraints[0].labelSelector", "constraint must not define a selector"),
    ({"defaultingType": "List", "defaultConstraints": [
        {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"},
        {"maxSkew": 2, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}]},
     "defaultConstraints[1]", 'Duplicate value: "{zone, DoNotSchedule}"'),
], ids=["bad-defaulting", "system-with-constraints", "zero-skew", "empty-key", "bad-action", "selector", "duplicate"])
def test_bad_args_are_rejected_naming_the_field(args, field, text):
    with pytest.raises(ValidationError) as err:
        PodTopologySpread.new(args, FrameworkHandle())
    assert err.value.field == field
    assert text in err.value.detail


# --- Queueing hints ------------------------------------------------------------------------------

def test_events_add_toleration_updates_only_with_queueing_hints():
    on = PodTopologySpread.new(LIST, FrameworkHandle())
    off = PodTopologySpread.new(LIST, FrameworkHandle(features=FeatureGates({"SchedulerQueueingHints": False})))
    assert on.events_to_register()[0].event.action & ActionType.UpdatePodTolerations
    assert not off.events_to_register()[0].event.action & ActionType.UpdatePodTolerations
    assert on.events_to_register()[1].event == off.events_to_register()[1].event


WAITING = pod("w", WEB, constraints=[constraint("zone", nodeTaintsPolicy="Honor")])


@pytest.mark.parametrize("old, new, hint", [
    (None, pod("n", WEB, "a1"), QueueingHint.Queue),
    (None, pod("n", {}, "a1"), QueueingHint.QueueSkip),
    (None, pod("n", WEB), QueueingHint.QueueSkip),
    (None, pod("n", WEB, "a1", namespace="other"), QueueingHint.QueueSkip),
    (pod("d", WEB, "a1"), None, QueueingHint.Queue),
    (pod("u", {}, "a1"), pod("u", WEB, "a1"), QueueingHint.Queue),
    (pod("u", {"x": "1", **WEB}, "a1"), pod("u", {"x": "2", **WEB}, "a1"), QueueingHint.QueueSkip),
    (WAITING, pod("w", WEB, constraints=WAITING.topology_spread_constraints,
                  tolerations=[{"key": "k", "operator": "Exists"}]), QueueingHint.Queue),
], ids=["added-match", "added-no-match", "added-unscheduled", "added-other-ns", "deleted-match",
        "label-now-matches", "unrelated-label", "own-new-toleration"])
def test_pod_change_hint(old, new, hint):
    pl = PodTopologySpread.new(LIST, FrameworkHandle())
    assert pl.is_schedulable_after_pod_change(WAITING, old, new) == hint


@pytest.mark.parametrize("old, new, hint", [
    (None, node("n", zone="z"), QueueingHint.Queue),
    (None, node("n"), QueueingHint.QueueSkip),
    (node("n", zone="z"), None, QueueingHint.Queue),
    (node("n", zone="z"), node("n", zone="y"), QueueingHint.Queue),
    (node("n", zone="z"), node("n", zone="z", other="1"), QueueingHint.QueueSkip),
    (node("n", zone="z"), node("n", taints=[{"key": "k", "effect": "NoSchedule"}], zone="z"), QueueingHint.Queue),
    (node("n"), node("n", zone="z"), QueueingHint.Queue),
], ids=["added-with-key", "added-without-key", "deleted-with-key", "key-value-changed", "unrelated-label",
        "taints-changed", "key-appeared"])
def test_node_change_hint(old, new, hint):
    pl = PodTopologySpread.new(LIST, FrameworkHandle())
    assert pl.is_schedulable_after_node_change(WAITING, old, new) == hint


def test_a_service_added_between_two_pods_of_one_template_gives_the_second_its_default_constraints():
    # System defaults (ScheduleAnyway) take the Services selecting the pod: without one
    # PreScore skips; the selector kept for the template must not outlive the lister's change.
    from framework.api.objects import Service
    objects = InMemoryObjects([])
    snap = Snapshot.build(NODES, [pod("w0", WEB, node_name="a1")])
    pl = PodTopologySpread.new(None, FrameworkHandle(snapshot=snap, objects=objects))
    first, second = pod("p1", WEB), pod("p2", WEB)
    assert pl.pre_score(CycleState(), first, snap.list()).code == Code.Skip
    assert pl.pre_score(CycleState(), second, snap.list()).code == Code.Skip
    objects.put(Service({"metadata": {"name": "web", "namespace": "default"}, "spec": {"selector": WEB}}))
    state = CycleState()
    assert pl.pre_score(state, second, snap.list()) is None
    assert [c.topology_key for c in pl.constraints(second, "ScheduleAnyway")] == [
        "kubernetes.io/hostname", "topology.kubernetes.io/zone"]
