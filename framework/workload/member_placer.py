"""CachePlacer: the MemberPlacer of framework/workload/group_cycle.py over a Cache and
its Snapshot, a profile's Framework and the scheduling algorithm. No I/O.

A member is tried as one scheduling attempt without PostFilter (upstream's group
cycle defers preemption to the group), unless the owner sets `post_filter`
(WorkloadAwarePreemption off: upstream 1.36 then runs each member's own PostFilter
inside the group algorithm, and a member it nominates is assumed and Reserved on that
node, so the members after it see it there): the snapshot is brought up to date (the
members assumed before it are in it), the algorithm runs (batching's hint included,
so same-signature members reuse the previous member's ranking; node-local Filter
verdicts and raw scores read from the group's columns, computed once per signature
and again only on the nodes the group assumed on), and a member that
finds a node is assumed into the cache and Reserved. `undo` Unreserves it and
forgets it. What each try left (its CycleState, the assumed copy, the algorithm's
result or FitError) stays in `tries` for the owner: the scheduler actor binds from
it or hands its FitError to the failure handler."""
from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Callable, Collection, Hashable, Sequence

from framework.algorithm import SchedulingAlgorithm
from framework.api.groups import POD_GROUP_KEY, WORKLOAD_KEY
from framework.api.objects import Pod
from framework.attempt_outcome import FitError, NoNodesAvailable, ScheduleResult, SchedulingError
from framework.batching import batching_signer
from framework.cache import Cache, Snapshot
from framework.node_table import ColumnarNodes
from framework.runtime import Framework
from framework.runtime.node_local import NodeLocalColumns
from framework.types import Code, CycleState, Status
from framework.workload.group_cycle import MemberTry


# The gang API's kinds: read by the gang plugins, never by a node-local one
# (FilterReadsPlugin, NodeLocalScorePlugin), and written once or twice a group.
GANG_API_KINDS = frozenset({POD_GROUP_KEY, WORKLOAD_KEY})


def columns_world(objects: object) -> Hashable:
    """The world a group's node-local columns hold for (CachePlacer.start_group): the
    lister's revision beside the gang API's objects (None, starting afresh, for a
    lister that cannot tell)."""
    beside = getattr(objects, "revision_beside", None)
    return None if beside is None else beside(GANG_API_KINDS)


@dataclass(slots=True)
class Try:
    """One member's try: its CycleState, and either the assumed copy and node or the
    FitError (None for other failures)."""

    state: CycleState
    assumed: Pod | None = None
    node: str = ""
    result: ScheduleResult | None = None
    fit_error: FitError | None = None
    preempting: bool = False  # assumed on the node its own PostFilter nominated
    nominated: str | None = None  # its own PostFilter's nomination ("" clears; None: it did not run)


# The member's own PostFilter (the owner's, WorkloadAwarePreemption off): run with the
# try's CycleState, the pod and its FitError on the view the try saw; the node it
# nominated ("" or None: none). It sets the FitError's PostFilter message.
MemberPostFilter = Callable[[CycleState, Pod, FitError], "str | None"]


def domain_positions(snapshot: Snapshot, node_names: Collection[str]) -> list[int]:
    """The positions of these nodes in the snapshot's node list, in snapshot order."""
    wanted = set(node_names)
    index = snapshot.index
    positions = [index[name] for name in wanted if name in index] if index else \
        [i for i, n in enumerate(snapshot.node_info_list) if n.name in wanted]
    positions.sort()
    return positions


def restricted_to(snapshot: Snapshot, positions: Sequence[int]) -> Snapshot:
    """The snapshot with only the nodes at these positions to filter; the affinity
    lists and the node map stay whole, as a placement narrows where members go, not
    what they see."""
    view = copy.copy(snapshot)
    nodes = snapshot.node_info_list
    view.node_info_list = nodes.take(positions) if isinstance(nodes, ColumnarNodes) else [nodes[i] for i in positions]
    return view


def restricted(snapshot: Snapshot, node_names: Collection[str]) -> Snapshot:
    """The snapshot with only these nodes to filter (in snapshot order)."""
    return restricted_to(snapshot, domain_positions(snapshot, node_names))


class CachePlacer:
    def __init__(self, fwk: Framework, algorithm: SchedulingAlgorithm, cache: Cache, snapshot: Snapshot,
                 *, has_extenders: bool = False) -> None:
        self.fwk = fwk
        self.algorithm = algorithm
        self.cache = cache
        self.snapshot = snapshot
        self.signer = batching_signer(fwk, has_extenders)
        self.tries: dict[str, Try] = {}  # uid -> its last try
        # The group's node-local Filter verdicts and raw scores (framework/runtime/node_local.py);
        # None: every member runs its own Filter and Score passes
        self.columns: NodeLocalColumns | None = NodeLocalColumns()
        self._members = 0  # the group's members to try (start_group); 0: unknown
        self.on_attempt = lambda pod: None  # the owner counts each algorithm run (batching's cycle)
        self.on_assumed = lambda pod: None  # the owner forgets the member's nomination (upstream's assume)
        self.post_filter: MemberPostFilter | None = None  # per member, inside the group (see above)
        # (node names, the snapshot index they were looked up in, their positions): a
        # domain's members are tried one after another with the same names
        self._domain: tuple[Collection[str], dict[str, int], list[int]] | None = None

    def start_group(self, members: int = 0, world: Hashable = None) -> None:
        """Forget the previous group's tries: the next group has `members` to try (0:
        unknown). `world`: what, besides the pods and the nodes, a node-local plugin
        could read, as of this group (the lister's revision beside the gang API's
        objects, which only the gang plugins read); while it holds the columns of the
        groups before are kept (a gang of a template seen before computes only the
        nodes whose generation moved since), None starts them afresh."""
        self.tries.clear()
        if self.columns is not None:
            self.columns.begin_group(world)
        self._members = members

    def signature(self, pod: Pod) -> Hashable | None:
        return self.signer.sign(pod, nominated=bool(pod.nominated_node_name))

    def try_member(self, pod: Pod, node_names: Collection[str] | None) -> MemberTry:
        self.cache.update_snapshot(self.snapshot)
        self.fwk.handle.set_snapshot(self.snapshot)
        view = self.snapshot if node_names is None else restricted_to(self.snapshot, self._positions(node_names))
        t = self.tries[pod.uid] = Try(CycleState())
        self.on_attempt(pod)
        if self.columns is not None:
            self.columns.begin_member(pod, max(1, self._members - len(self.tries) + 1) if self._members else 0)
            self.algorithm.node_local = self.columns
        try:
            result = self.algorithm.schedule_pod(self.fwk, t.state, pod, view)
        except FitError as e:
            t.fit_error = e
            nominated = t.nominated = self.post_filter(t.state, pod, e) if self.post_filter is not None else None
            if nominated:  # upstream's requiresPreemption: assumed where it preempted
                return self._assume(t, pod, nominated, None, Status(Code.Unschedulable, e.message()))
            return MemberTry(status=Status(Code.Unschedulable, e.message()))
        except NoNodesAvailable as e:
            return MemberTry(status=Status(Code.UnschedulableAndUnresolvable, str(e)))
        except SchedulingError as e:
            return MemberTry(status=Status(Code.Error, str(e)))
        finally:
            self.algorithm.node_local = None
        return self._assume(t, pod, result.suggested_host, result, None)

    def _assume(self, t: Try, pod: Pod, host: str, result: ScheduleResult | None,
                preempting: Status | None) -> MemberTry:
        """Assume and Reserve the member on `host` (upstream's assumeAndReserve); a
        member that preempts carries its FitError's status (`preempting`)."""
        assumed = pod.with_node_name(host)
        self.cache.assume_pod(assumed, host)
        self.on_assumed(pod)
        st = self.fwk.run_reserve(t.state, assumed, host)
        if not st.is_success():
            self.fwk.run_unreserve(t.state, assumed, host)
            self.cache.forget_pod(assumed)
            return MemberTry(status=Status(st.code, st.message(), plugin=st.plugin))
        t.assumed, t.node, t.result, t.preempting = assumed, host, result, preempting is not None
        if preempting is not None:
            return MemberTry(node=host, status=preempting, preempting=True)
        return MemberTry(node=host)

    def _positions(self, node_names: Collection[str]) -> list[int]:
        got = self._domain
        if got is None or got[0] is not node_names or got[1] is not self.snapshot.index:
            got = self._domain = (node_names, self.snapshot.index, domain_positions(self.snapshot, node_names))
        return got[2]

    def undo(self, pod: Pod, node: str) -> None:
        t = self.tries[pod.uid]
        assert t.assumed is not None, f"{pod.key} was not assumed"
        self.fwk.run_unreserve(t.state, t.assumed, node)
        self.cache.forget_pod(t.assumed)
        t.assumed, t.node = None, ""


__all__ = ["CachePlacer", "GANG_API_KINDS", "columns_world", "MemberPostFilter", "Try", "domain_positions", "restricted", "restricted_to"]
