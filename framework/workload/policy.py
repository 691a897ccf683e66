"""What the group algorithm reads of a scheduling.k8s.io PodGroup (GroupPolicy), the
one conversion from the stored object, and upstream's PlacementFeasible rule.

The group algorithm is written against GroupPolicy, not the API object, so the API
may change (v1alpha2 to beta renames fields) with one function to follow:
`group_policy_of`."""
from __future__ import annotations

from dataclasses import dataclass

from framework.api.groups import PREFERRED_TOPOLOGY_ANNOTATION
from framework.api.workload_api import SchedulingPodGroup
from framework.identity_memo import IdentityMemo
from framework.types import Code, Status


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupPolicy:
    """One pod group as the scheduler places it. min_count is None for a basic group
    (each pod on its own); required_topology_key names the node label all members must
    share a value of ("" for none); preferred_topology_key a narrower level tried
    first (ksched's own, "" for none)."""
    name: str
    namespace: str
    min_count: int | None
    required_topology_key: str = ""
    preferred_topology_key: str = ""

    @property
    def gang(self) -> bool:
        return self.min_count is not None

    @property
    def quorum(self) -> int:
        """upstream's getMinCount: minCount for a gang, 1 for a basic group."""
        return self.min_count if self.min_count is not None else 1


# ksched's preferred level (framework/api/groups.py): the node label a gang is first tried
# inside one domain of, before its required level (upstream has no such field yet).


def group_policy_of(pg: SchedulingPodGroup) -> GroupPolicy:
    """The one conversion from the stored PodGroup. v1alpha2 allows at most one
    topology constraint; it is the required level. The preferred level is the
    PodGroup's PREFERRED_TOPOLOGY_ANNOTATION. Kept for the last PodGroups asked about
    (a stored object is never changed in place; GangScheduling asks for each member's
    PreEnqueue and Permit)."""
    return _POLICIES.of(pg, _policy_of)


def _policy_of(pg: SchedulingPodGroup) -> GroupPolicy:
    keys = [k for k in pg.topology_keys if k]
    preferred = pg.meta.annotations.get(PREFERRED_TOPOLOGY_ANNOTATION, "").strip()
    return GroupPolicy(name=pg.name, namespace=pg.namespace, min_count=pg.policy.min_count,
                       required_topology_key=keys[0] if keys else "", preferred_topology_key=preferred)


_POLICIES: IdentityMemo[SchedulingPodGroup, GroupPolicy] = IdentityMemo(64)


def placement_feasible(policy: GroupPolicy, *, scheduled: int, remaining: int) -> Status | None:
    """upstream's PlacementFeasible: Unschedulable once the members left cannot make up
    the quorum (the cycle stops early), Wait while they still may, None (success) once
    the quorum is placed. The verdict depends on the three numbers alone, so each is
    worded once and shared (a Status is never changed in place): a group cycle asks
    before its first member and after each one, and only its last verdict's message is
    ever read."""
    key = (policy.min_count, scheduled, remaining)
    verdict = _VERDICTS.get(key, _UNKNOWN)
    if verdict is _UNKNOWN:
        if len(_VERDICTS) >= _VERDICTS_KEPT:
            _VERDICTS.clear()
        verdict = _VERDICTS[key] = _verdict(policy.quorum, scheduled, remaining)
    return verdict  # type: ignore[return-value]


def _verdict(need: int, scheduled: int, remaining: int) -> Status | None:
    if remaining + scheduled < need:
        return Status(Code.Unschedulable,
                      f"minCount ({need}) cannot be satisfied: {scheduled} scheduled, {remaining} remaining")
    if scheduled < need:
        return Status(Code.Wait, f"minCount ({need}) is not yet satisfied: {scheduled} scheduled, {remaining} remaining")
    return None


# (min_count, scheduled, remaining) -> its verdict; cleared when it holds this many
_VERDICTS: dict[tuple[int | None, int, int], Status | None] = {}
_VERDICTS_KEPT = 4096
_UNKNOWN = object()
