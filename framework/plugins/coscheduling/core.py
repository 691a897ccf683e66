"""PodGroupManager: the state behind the Coscheduling plugin (scheduler-plugins
pkg/coscheduling/core).

What upstream keeps as a set of pod names that only Unreserve cleans
(assignedPodsByPG), we derive each time from the truth: the members that sit on a
node of the current snapshot (bound or assumed), minus those whose Permit wait has
already been rejected. A rejected group therefore never leaves a stale count
behind, and nothing depends on Unreserve being enabled (see `assigned_members`).

Pure: time comes from the handle's clock, pods and PodGroups from its lister.
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Iterable, Mapping

from framework.api.errors import ValidationError
from framework.api.objects import POD_GROUP_LABEL, Pod, PodGroup
from framework.api.quantity import parse_quantity
from framework.api.resources import PODS, Resource, quantity_in_units
from framework.cache import NodeInfo, Snapshot
from framework.interface import Handle

PLUGIN_NAME = "Coscheduling"

# Upstream defaults (apis/config/v1/defaults.go) and util.DefaultWaitTime.
DEFAULT_PERMIT_WAITING_TIME_SECONDS = 60
DEFAULT_POD_GROUP_BACKOFF_SECONDS = 0
DEFAULT_POD_GROUP_REJECT_PERCENTAGE = 10
DEFAULT_WAIT_TIME_SECONDS = 60

NS_PER_S = 1_000_000_000


@dataclass(frozen=True, slots=True)
class CoschedulingArgs:
    permit_waiting_time_seconds: int = DEFAULT_PERMIT_WAITING_TIME_SECONDS
    pod_group_backoff_seconds: int = DEFAULT_POD_GROUP_BACKOFF_SECONDS
    pod_group_reject_percentage: int = DEFAULT_POD_GROUP_REJECT_PERCENTAGE

    @classmethod
    def parse(cls, args: Mapping[str, Any] | None) -> "CoschedulingArgs":
        """Upstream's v1 field names; absent fields get upstream's defaults."""
        args = args or {}
        if not isinstance(args, Mapping):
            raise ValidationError("", "CoschedulingArgs must be an object")
        values = {}
        for field, default in (
            ("permitWaitingTimeSeconds", DEFAULT_PERMIT_WAITING_TIME_SECONDS),
            ("podGroupBackoffSeconds", DEFAULT_POD_GROUP_BACKOFF_SECONDS),
            ("podGroupRejectPercentage", DEFAULT_POD_GROUP_REJECT_PERCENTAGE),
        ):
            v = args.get(field, default)
            if v is None:
                v = default
            if isinstance(v, bool) or not isinstance(v, int):
                raise ValidationError(field, "must be an integer")
            if v < 0:
                raise ValidationError(field, "must be greater than or equal to 0")
            values[field] = v
        if values["podGroupRejectPercentage"] > 100:
            raise ValidationError("podGroupRejectPercentage", "must be less than or equal to 100")
        return cls(values["permitWaitingTimeSeconds"], values["podGroupBackoffSeconds"], values["podGroupRejectPercentage"])


class TTLCache:
    """name -> expiry (clock seconds). `add` does not extend a live entry, as
    go-cache's Add does not."""

    __slots__ = ("_expiry",)

    def __init__(self) -> None:
        self._expiry: dict[str, float] = {}

    def add(self, key: str, ttl: float, now: float) -> None:
        if self.contains(key, now):
            return
        self._expiry[key] = now + ttl

    def set(self, key: str, ttl: float, now: float) -> None:
        self._expiry[key] = now + ttl

    def contains(self, key: str, now: float) -> bool:
        exp = self._expiry.get(key)
        if exp is None:
            return False
        if now >= exp:
            del self._expiry[key]
            return False
        return True

    def expiry(self, key: str) -> float | None:
        return self._expiry.get(key)

    def delete(self, key: str) -> None:
        self._expiry.pop(key, None)


def group_full_name(pod: Pod) -> str:
    """"<namespace>/<label>" or "" for a pod outside any group (util.GetPodGroupFullName)."""
    label = pod.labels.get(POD_GROUP_LABEL, "")
    return f"{pod.namespace}/{label}" if label else ""


def namespaced_name(pod: Pod) -> str:
    return f"{pod.namespace}/{pod.name}"


def wait_time_seconds(pg: PodGroup | None, args: CoschedulingArgs) -> int:
    """util.GetWaitTimeDuration: the PodGroup's non-zero timeout, else the plugin
    argument, else 60s."""
    if pg is not None and pg.schedule_timeout_seconds:
        return pg.schedule_timeout_seconds
    if args.permit_waiting_time_seconds:
        return args.permit_waiting_time_seconds
    return DEFAULT_WAIT_TIME_SECONDS


# --- CheckClusterResource -----------------------------------------------------------------

def node_free_for_group(info: NodeInfo, group: str) -> dict[str, int]:
    """Free resources of one node, counting the pods of `group` as free
    (core.getNodeResource). Pod slots are allowedPodNumber - #pods."""
    requested = info.requested.clone()
    pods = len(info.pods)
    for pi in info.pods:
        if group and group_full_name(pi.pod) == group:
            requested.sub(pi.pod.resource)
            pods -= 1
    alloc = info.allocatable
    free = {
        "cpu": alloc.milli_cpu - requested.milli_cpu,
        "memory": alloc.memory - requested.memory,
        "ephemeral-storage": alloc.ephemeral_storage - requested.ephemeral_storage,
        PODS: alloc.allowed_pod_number - pods,
    }
    for name, amount in alloc.scalar.items():
        free[name] = amount - requested.scalar.get(name, 0)
    return free


def check_cluster_resource(nodes: Iterable[NodeInfo], request: Mapping[str, Fraction], group: str) -> str | None:
    """None when the free resources summed over `nodes` cover `request`, else
    "resource gap: ..." naming what is still missing (core.CheckClusterResource).

    Node by node, each node's free amount is taken off what remains; a resource
    leaves the request once it is covered. Fragmentation is ignored, as upstream."""
    remaining = {name: quantity_in_units(name, q) for name, q in request.items()}
    for info in nodes:
        if info is None or info.node is None:
            continue
        free = node_free_for_group(info, group)
        for name in list(remaining):
            left = remaining[name] - free.get(name, 0)
            if left <= 0:
                del remaining[name]
            else:
                remaining[name] = left
        if not remaining:
            return None
    gap = " ".join(f"{name}:{_fmt_amount(name, v)}" for name, v in sorted(remaining.items()))
    return f"resource gap: map[{gap}]"


def _fmt_amount(name: str, amount: int) -> str:
    if name == "cpu":
        return f"{amount // 1000}" if amount % 1000 == 0 else f"{amount}m"
    return str(amount)


def min_resources_request(pg: PodGroup) -> dict[str, Fraction]:
    """minResources plus pods = minMember, as PreFilter checks it."""
    req = dict(pg.min_resources or {})
    req[PODS] = parse_quantity(pg.min_member)
    return req


# --- The manager ---------------------------------------------------------------------------

class _SnapshotGroupIndex:
    """group full name -> pods on nodes of the snapshot (bound or assumed).

    Kept up to date per snapshot generation, re-reading only the NodeInfos the
    cache replaced since the last refresh: those the snapshot's change log names,
    so a member's lookup costs what changed, not the cluster's size. A snapshot
    without a change log, or a new log epoch, is read whole."""

    __slots__ = ("_snap_id", "_generation", "_epoch", "_log_pos", "_per_node", "_by_group")

    def __init__(self) -> None:
        self._snap_id = 0
        self._generation = -1
        self._epoch = -1
        self._log_pos = 0
        self._per_node: dict[str, tuple[NodeInfo, dict[str, list[Pod]]]] = {}
        self._by_group: dict[str, dict[str, Pod]] = {}

    def members(self, snap: Snapshot, group: str) -> list[Pod]:
        if id(snap) != self._snap_id or snap.generation != self._generation:
            self._refresh(snap)
        return list(self._by_group.get(group, {}).values())

    def _refresh(self, snap: Snapshot) -> None:
        log = getattr(snap, "change_log", None)
        if id(snap) == self._snap_id and log is not None and snap.change_epoch == self._epoch:
            for name in dict.fromkeys(log[self._log_pos:]):
                info = snap.node_info_map.get(name)
                if info is None:
                    cached = self._per_node.pop(name, None)
                    if cached is not None:
                        self._drop(cached[1])
                else:
                    self._read(info)
        else:
            self._read_all(snap)
        self._snap_id = id(snap)
        self._generation = snap.generation
        self._epoch = getattr(snap, "change_epoch", -1)
        self._log_pos = len(log) if log is not None else 0

    def _read_all(self, snap: Snapshot) -> None:
        if id(snap) != self._snap_id:
            self._per_node, self._by_group = {}, {}
        seen = set()
        for info in snap.node_info_list:
            seen.add(info.name)
            self._read(info)
        for name in [n for n in self._per_node if n not in seen]:
            self._drop(self._per_node.pop(name)[1])

    def _read(self, info: NodeInfo) -> None:
        cached = self._per_node.get(info.name)
        if cached is not None and cached[0] is info:
            return
        if cached is not None:
            self._drop(cached[1])
        groups: dict[str, list[Pod]] = {}
        for pi in info.pods:
            g = group_full_name(pi.pod)
            if g:
                groups.setdefault(g, []).append(pi.pod)
                self._by_group.setdefault(g, {})[pi.pod.key] = pi.pod
        self._per_node[info.name] = (info, groups)

    def _drop(self, groups: dict[str, list[Pod]]) -> None:
        for g, pods in groups.items():
            members = self._by_group.get(g)
            if members is None:
                continue
            for p in pods:
                if members.get(p.key) is p:
                    del members[p.key]
            if not members:
                del self._by_group[g]


class PodGroupManager:
    """Groups, their members and the caches upstream keeps (permittedPG,
    backedOffPG, lastFailedSchedulePG). One per plugin instance; its methods run
    on the scheduling cycle or in a binding cycle, never concurrently."""

    def __init__(self, handle: Handle, args: CoschedulingArgs) -> None:
        self.handle = handle
        self.args = args
        self.permitted_pg = TTLCache()
        self.backed_off_pg = TTLCache()
        self.last_failed: dict[str, int] = {}  # group -> clock nanoseconds
        # Bumped whenever a group's sort time changes, so a queue that keeps pods
        # in a heap knows to re-heapify (Less is not stable while pods wait).
        self.sort_generation = 0
        self._index = _SnapshotGroupIndex()
        # uids of members Permit allowed (the current pod on Success, the waiting
        # siblings it released) that may not be bound yet.
        self.allowed: dict[str, set[str]] = {}  # group -> uids

    # lookups
    def now(self) -> float:
        return self.handle.now()

    def get_pod_group(self, pod: Pod) -> tuple[str, PodGroup | None]:
        label = pod.labels.get(POD_GROUP_LABEL, "")
        if not label:
            return "", None
        return f"{pod.namespace}/{label}", self.handle.get_object("PodGroup", pod.namespace, label)

    def group_pods(self, namespace: str, label: str) -> list[Pod]:
        """Non-terminal pods of the namespace carrying the group label (what the
        scheduler's pod informer lists: terminal pods are filtered out)."""
        pods = self.handle.list_objects_with_label("Pod", namespace, POD_GROUP_LABEL, label)
        return [p for p in pods if not p.is_terminal]

    def placed_members(self, group: str) -> list[Pod]:
        """Members on a node of the current snapshot, bound or assumed."""
        return self._index.members(self.handle.snapshot(), group)

    def assigned_members(self, group: str, exclude: Pod | None = None) -> list[Pod]:
        """Members that hold a node for the group: bound (per the store), allowed
        at Permit and on their way to binding, or waiting at Permit undecided.

        A member the cache still holds after its wait was rejected (its binding
        cycle has not yet forgotten it) does not count: the count is derived from
        who decided what, never from a list someone else must remember to clean.
        The pod `exclude` is left out."""
        out = []
        skip = exclude.key if exclude is not None else ""
        placed = self.placed_members(group)
        on_nodes = {p.uid for p in placed}
        allowed = self.allowed.get(group)
        if allowed:
            allowed &= on_nodes  # a forgotten pod is no longer on its way to bind
        else:
            allowed = set()
        for p in placed:
            if p.key == skip:
                continue
            stored = self.handle.get_object("Pod", p.namespace, p.name)
            if stored is not None and stored.is_terminal:
                continue
            if stored is not None and stored.node_name:
                allowed.discard(p.uid)
                out.append(p)
                continue
            if p.uid in allowed:
                out.append(p)
                continue
            wp = self.handle.get_waiting_pod(p.uid)
            if wp is not None and wp.decided is None:
                out.append(p)
        return out

    def mark_allowed(self, pod: Pod) -> None:
        self.allowed.setdefault(group_full_name(pod), set()).add(pod.uid)

    def forget_allowed(self, pod: Pod) -> None:
        group = group_full_name(pod)
        allowed = self.allowed.get(group)
        if allowed is not None:
            allowed.discard(pod.uid)
            if not allowed:
                del self.allowed[group]

    def waiting_members(self, group: str) -> list[Any]:
        out: list[Any] = []
        self.handle.iterate_waiting_pods(
            lambda wp: out.append(wp) if group_full_name(wp.pod) == group else None
        )
        return out

    # queue sort
    def creation_timestamp(self, pod: Pod, initial_attempt: int) -> int:
        """The time a queued pod sorts by (GetCreationTimestamp), in nanoseconds."""
        label = pod.labels.get(POD_GROUP_LABEL, "")
        if not label:
            return initial_attempt
        failed = self.last_failed.get(f"{pod.namespace}/{label}")
        if failed is not None:
            return failed
        pg = self.handle.get_object("PodGroup", pod.namespace, label)
        if pg is None:
            return initial_attempt
        return pg.meta.creation_timestamp

    def mark_failed(self, group: str, pg: PodGroup | None = None) -> None:
        """The sort penalty: the group sorts as if created now. "Now" is never
        earlier than the newest PodGroup's creation, so the penalty holds even when
        the injected clock has another time base than creationTimestamp (wall
        time, set by the API layer): a failed group goes behind every group that
        exists when it fails, as upstream's time.Now() puts it."""
        mark = int(self.now() * NS_PER_S)
        newest = max((g.meta.creation_timestamp for g in self.handle.list_objects("PodGroup")), default=0)
        if pg is not None:
            newest = max(newest, pg.meta.creation_timestamp)
        self.last_failed[group] = max(mark, newest + 1)
        self.sort_generation += 1

    def clear_failed(self, group: str) -> None:
        if self.last_failed.pop(group, None) is not None:
            self.sort_generation += 1

    # PreFilter (upstream order: backoff, count, gated, minResources)
    def pre_filter(self, pod: Pod) -> str | None:
        """None to pass, else the error upstream returns."""
        group, pg = self.get_pod_group(pod)
        if pg is None:
            return None
        now = self.now()
        if self.backed_off_pg.contains(group, now):
            return f"podGroup {group} failed recently"
        pods = self.group_pods(pod.namespace, pg.name)
        if len(pods) < pg.min_member:
            return (f"pre-filter pod {pod.name} cannot find enough sibling pods, "
                    f"current pods number: {len(pods)}, minMember of group: {pg.min_member}")
        ungated = sum(1 for p in pods if not p.scheduling_gates)
        if ungated < pg.min_member:
            return f"pre-filter pod {pod.name} cannot proceed due to gated pods in the same PodGroup"
        if pg.min_resources is None:
            return None
        if self.permitted_pg.contains(group, now):
            return None
        err = check_cluster_resource(self.handle.snapshot().node_info_list, min_resources_request(pg), group)
        if err is not None:
            return err
        self.permitted_pg.add(group, self.args.permit_waiting_time_seconds, now)
        return None

    def backoff(self, group: str, pods_count: int, pg: PodGroup) -> None:
        if self.args.pod_group_backoff_seconds > 0 and pods_count >= pg.min_member:
            self.backed_off_pg.add(group, self.args.pod_group_backoff_seconds, self.now())

    def should_reject_group(self, pg: PodGroup, assigned: int) -> bool:
        """PostFilter's rule: reject only when (minMember - assigned)/minMember is
        strictly greater than podGroupRejectPercentage/100, in integers."""
        if assigned >= pg.min_member:
            return False
        return (pg.min_member - assigned) * 100 > self.args.pod_group_reject_percentage * pg.min_member
