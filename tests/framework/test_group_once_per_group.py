"""What a group cycle now works out once per group rather than once per member
(h29-speed13): PlacementFeasible's verdicts worded once and shared, the PodGroup's
policy carried to its members' Permit in GroupCycleState, the condition's transition
time formatted once per second. Each against the form it replaces."""
from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from framework.api.groups import POD_GROUP_KEY
from framework.api.timeutil import format_time
from framework.interface import Code, CycleState, Status
from framework.workload import group_status, policy as policy_module
from framework.workload.group_cycle import GROUP_CYCLE_KEY, GroupCycleState
from framework.workload.group_status import scheduled_condition, with_condition
from framework.workload.policy import GroupPolicy, group_policy_of, placement_feasible
from tests.framework.plugins.test_gang_scheduling import GANGS, Cluster, P1, P2, P3


def feasible_by_definition(policy: GroupPolicy, scheduled: int, remaining: int) -> Status | None:
    """upstream's PlacementFeasible, worded afresh at every call (for counts >= 0)."""
    need = policy.quorum
    counts = f"{scheduled} scheduled, {remaining} remaining"
    if scheduled >= need:
        return None
    if scheduled + remaining >= need:
        return Status(Code.Wait, f"minCount ({need}) is not yet satisfied: " + counts)
    return Status(Code.Unschedulable, f"minCount ({need}) cannot be satisfied: " + counts)


@settings(max_examples=300, deadline=None)
@given(min_count=st.one_of(st.none(), st.integers(0, 40)), scheduled=st.integers(0, 50),
       remaining=st.integers(0, 50), again=st.booleans())
def test_placement_feasible_is_upstreams_rule_whether_kept_or_not(min_count: int | None, scheduled: int,
                                                                   remaining: int, again: bool) -> None:
    policy = GroupPolicy(name="g", namespace="ns", min_count=min_count)
    got = placement_feasible(policy, scheduled=scheduled, remaining=remaining)
    if again:
        got = placement_feasible(policy, scheduled=scheduled, remaining=remaining)
    want = feasible_by_definition(policy, scheduled, remaining)
    assert (got is None) == (want is None)
    if got is not None and want is not None:
        assert (got.code, got.message(), got.plugin) == (want.code, want.message(), want.plugin)


def test_a_verdict_is_worded_once_and_shared_and_the_kept_ones_are_bounded(monkeypatch: Any) -> None:
    monkeypatch.setattr(policy_module, "_VERDICTS", {})
    monkeypatch.setattr(policy_module, "_VERDICTS_KEPT", 3)
    a = GroupPolicy(name="a", namespace="ns", min_count=8)
    b = GroupPolicy(name="b", namespace="other", min_count=8)  # another group of the same size
    wait = placement_feasible(a, scheduled=2, remaining=6)
    assert wait is not None and wait.code == Code.Wait
    assert placement_feasible(b, scheduled=2, remaining=6) is wait
    for s in range(4):
        placement_feasible(a, scheduled=s, remaining=0)
    assert len(policy_module._VERDICTS) <= 3
    assert placement_feasible(a, scheduled=2, remaining=6) == wait


class CountingObjects:
    """The cluster's lister, counting the PodGroup reads."""

    def __init__(self, objects: Any) -> None:
        self.objects = objects
        self.pod_group_reads = 0

    def get(self, kind: str, namespace: str, name: str) -> Any:
        if kind == POD_GROUP_KEY:
            self.pod_group_reads += 1
        return self.objects.get(kind, namespace, name)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.objects, name)


def test_permit_of_a_member_the_cycle_placed_reads_the_cycles_policy_not_the_pod_group() -> None:
    for placed, want in (({"p1", "p2"}, Code.Wait), ({"p1", "p2", "p3"}, Code.Success)):
        answers = []
        for carried in (False, True):
            c = Cluster([P1, P2, P3], GANGS)
            for p in (P1, P2, P3):
                c.plugin.reserve(CycleState(), p, "some-node")
            counting = CountingObjects(c.handle.objects)
            c.handle.objects = counting
            policy = group_policy_of(c.objects.get(POD_GROUP_KEY, "ns1", "pg1")) if carried else None
            state = CycleState()
            state.write(GROUP_CYCLE_KEY, GroupCycleState(frozenset(placed), policy))
            got, timeout = c.plugin.permit(state, P1, "some-node")
            answers.append(((got or Status()).code, (got or Status()).message(), timeout))
            if carried:
                assert counting.pod_group_reads == 0
            else:
                assert counting.pod_group_reads >= 1
        assert answers[0] == answers[1] and answers[0][0] == want


@settings(max_examples=200, deadline=None)
@given(now_ns=st.integers(0, 4_000_000_000 * 1_000_000_000))
def test_the_transition_time_is_format_time_of_the_whole_second(now_ns: int) -> None:
    pg = {"metadata": {"name": "g", "namespace": "default", "generation": 1}, "spec": {}}
    written = with_condition(pg, scheduled_condition(Status()), now_ns)
    assert written is not None
    assert written["status"]["conditions"][0]["lastTransitionTime"] == format_time(now_ns - now_ns % 1_000_000_000)


def test_the_groups_of_one_second_format_it_once(monkeypatch: Any) -> None:
    calls: list[int] = []

    def counted(ns: int) -> str:
        calls.append(ns)
        return format_time(ns)

    monkeypatch.setattr(group_status, "format_time", counted)
    group_status._whole_second.cache_clear()
    t0 = 1_767_225_600 * 1_000_000_000
    for k in range(8):
        pg = {"metadata": {"name": f"g{k}", "namespace": "default"}, "spec": {}}
        with_condition(pg, scheduled_condition(Status()), t0 + k * 100_000_000)
    assert calls == [t0]
    group_status._whole_second.cache_clear()


async def test_a_group_cycle_hands_its_policy_to_every_members_permit(monkeypatch: Any) -> None:
    """The scheduler's group cycle writes the policy it read into each member's
    GroupCycleState: no member's Permit reads the PodGroup again, and the gang binds
    whole as before."""
    from actors.clock import FakeClock
    from actors.pipeline import Pipeline
    from framework.plugins.gangscheduling.gangscheduling import GangScheduling
    from tests.gang.test_group_cycle_pipeline import START, gang, member, nodes, placed

    permits: list[GroupPolicy | None] = []
    lookups_in_permit: list[str] = []
    permit, policy_of = GangScheduling.permit, GangScheduling.policy_of
    in_permit = [False]

    def counted_permit(self: GangScheduling, state: CycleState, pod: Any, node: str) -> Any:
        together = state.get(GROUP_CYCLE_KEY)
        permits.append(together.policy if isinstance(together, GroupCycleState) else None)
        in_permit[0] = True
        try:
            return permit(self, state, pod, node)
        finally:
            in_permit[0] = False

    def counted_policy_of(self: GangScheduling, pod: Any, group: str | None = None) -> Any:
        if in_permit[0]:
            lookups_in_permit.append(pod.name)
        return policy_of(self, pod, group)

    monkeypatch.setattr(GangScheduling, "permit", counted_permit)
    monkeypatch.setattr(GangScheduling, "policy_of", counted_policy_of)
    async with Pipeline(clock=FakeClock(START)) as p:
        await p.client.apply(nodes(4, 4))
        await p.client.apply([gang("train", 4)])
        await p.client.apply([member(f"t{i}", 2, "train") for i in range(4)])
        await p.run_until_quiescent(max_seconds=5)
        assert all((await placed(p)).values())
    assert len(permits) == 4 and lookups_in_permit == []
    assert {(q.name, q.namespace, q.min_count) for q in permits if q is not None} == {("train", "default", 4)}
