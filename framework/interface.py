"""The plugin contract: what a plugin author imports.

Mirrors kube-scheduler's framework/interface.go. A plugin is a plain class with a
`name` and any of the methods of the Protocols below; the runtime calls a method
only if the plugin is enabled at that extension point. Plugins are built by a
factory `(args: dict | None, handle: Handle) -> plugin`.

Statuses: any method that returns a Status may return None for Success. An
exception raised by a plugin is a bug: the runtime turns it into an Error status
that names the plugin and the extension point.

Concurrency: the scheduling-cycle methods (PreEnqueue..Permit) run one pod at a
time on the scheduler's task; binding-cycle methods (PreBind, Bind, PostBind,
Unreserve after Permit) may run for many pods at once, interleaved at awaits.
"""
from __future__ import annotations

import enum
import random
from typing import (TYPE_CHECKING, Any, Awaitable, Callable, ClassVar, Collection, Hashable, Iterable, Protocol,
                    Sequence, runtime_checkable)

# The values and events of the contract live beside it; plugins import them from here.
from framework.events import ActionType, ClusterEvent, ClusterEventWithHint, QueueingHint, QueueingHintFn
from framework.types import (
    MAX_NODE_SCORE,
    MAX_PERMIT_TIMEOUT_SECONDS,
    MAX_TOTAL_SCORE,
    MIN_NODE_SCORE,
    SKIP, Code,
    CycleState,
    NodePluginScores,
    NodeScore,
    NodeToStatus,
    PostFilterAnswer,
    PostFilterResult,
    PreFilterResult,
    QueuedPodInfo,
    Status,
    is_success,
)

if TYPE_CHECKING:
    from framework.api.objects import Pod
    from framework.cache import NodeInfo, PodInfo, Snapshot
    from framework.features import FeatureGates

__all__ = [
    "MAX_NODE_SCORE", "MAX_PERMIT_TIMEOUT_SECONDS", "MAX_TOTAL_SCORE", "MIN_NODE_SCORE", "SKIP",
    "ActionType", "Binder", "BindPlugin", "ClusterEvent", "ClusterEventWithHint", "Code",
    "ColumnarFilterPlugin", "ColumnarScoreExtensions", "ColumnarScorePlugin", "CycleState",
    "EnqueueExtensions", "FilterPlugin", "FilterReads", "FilterReadsPlugin", "Handle", "MonotoneEventsPlugin", "NodeLocalScorePlugin", "NodePluginScores", "NodeScore", "NodeToStatus",
    "PermitPlugin", "Plugin", "PluginFactory", "PostBindPlugin", "PostFilterPlugin", "PostFilterResult",
    "PreBindPlugin", "PreEnqueuePlugin", "PreFilterExtensions", "PreFilterPlugin", "PreFilterResult",
    "PreScorePlugin", "QueueSortPlugin", "QueuedPodInfo", "QueueingHint", "QueueingHintFn",
    "ReservePlugin", "ScoreExtensions", "ScorePlugin", "SignPlugin", "SignPurpose", "Status", "WaitingPod",
    "is_success",
]


class WaitingPod(Protocol):
    """A pod held at Permit (upstream's WaitingPod). Allow/Reject record the
    first decision at once (later calls are ignored) and the waiting room
    learns it by message; `decided` is None until then."""

    @property
    def pod(self) -> "Pod": ...

    @property
    def decided(self) -> Status | None: ...

    def pending_plugins(self) -> list[str]: ...

    def allow(self, plugin_name: str) -> None: ...

    def reject(self, plugin_name: str, message: str) -> None: ...


class Handle(Protocol):
    """What the framework gives plugins (upstream's framework.Handle): everything
    an in-tree plugin calls, so none needs getattr. Everything here is safe to
    call from any scheduling-cycle extension point and none of it blocks, except
    `bind_pod`, which Bind plugins await in the binding cycle."""

    features: "FeatureGates"  # the feature gates the profile was built with
    rand: random.Random  # the scheduler's seeded random (tie-breaks, sampling)
    pod_backoff_seconds: tuple[float, float]  # the queue's (podInitialBackoffSeconds, podMaxBackoffSeconds)

    def snapshot(self) -> "Snapshot":
        """The node snapshot of the current scheduling cycle (SnapshotSharedLister)."""
        ...

    def set_snapshot(self, snap: "Snapshot") -> None:
        """The owner (scheduler, explain) sets the snapshot a cycle runs on."""
        ...

    def iterate_waiting_pods(self, fn: Callable[[WaitingPod], None]) -> None: ...

    def get_waiting_pod(self, uid: str) -> WaitingPod | None: ...

    def reject_waiting_pod(self, uid: str) -> bool: ...

    def now(self) -> float:
        """The injected clock's time in seconds."""
        ...

    def list_objects(self, kind: str, namespace: str | None = None) -> list[Any]:
        """Objects of `kind` the cluster holds (pods, PodGroups, Services, PDBs ...)."""
        ...

    def changed_objects(self, kind: str, since: int | None) -> tuple[int, list[str] | None]:
        """(the object view's revision now, the keys ("ns/name") of `kind` added, changed or
        deleted after revision `since`). None for the keys: cannot tell (since None, an
        old revision, a lister without a journal): list them all. Not for Pods."""
        ...

    def list_objects_with_label(self, kind: str, namespace: str, label: str, value: str) -> list[Any]:
        """list_objects of one namespace whose label `label` equals `value`."""
        ...

    def get_object(self, kind: str, namespace: str, name: str) -> Any | None: ...

    def scheduling_group_pods(self, namespace: str, group: str) -> list["Pod"]:
        """The pods of `namespace` whose spec.schedulingGroup names `group`."""
        ...

    def nominated_pods_for_node(self, node_name: str) -> list["PodInfo"]: ...

    def nodes_with_nominated_pods(self) -> Collection[str] | None:
        """Every node some pod is nominated to (more is harmless); None when the
        owner cannot say (callers then ask node by node)."""
        ...

    def nominations_version(self) -> int | None:
        """A number that moves with every change of the nominations (so column
        forms of them can be kept between cycles); None when the owner cannot say."""
        ...

    def nominated_nodes_changed_since(self, version: int) -> Collection[str] | None:
        """The nodes whose nominated pods changed since nominations_version() was
        `version`; None when the owner cannot say (callers read them all again)."""
        ...

    def activate_pods(self, pods: Iterable["Pod"]) -> None:
        """Move these pending pods to activeQ (upstream's PodsToActivate)."""
        ...

    def preempting_extenders(self) -> "Callable[[Pod, list[Any]], Awaitable[list[Any]]] | None":
        """The configured preempting extenders as one candidate filter (upstream's
        Handle.Extenders() as callExtenders uses them); None when none is configured."""
        ...

    def being_evicted(self, uid: str) -> bool: ...  # a chosen victim not yet seen deleted

    def evict_pod(self, victim: "Pod", preemptor: "Pod", message: str) -> None:
        """Delete a preemption victim (upstream's PreemptPod via the API); may raise."""
        ...

    def nominate_pods(self, pairs: list[tuple["Pod", str]]) -> None: ...

    def clear_nominated_node_names(self, pods: list["Pod"]) -> None:
        """Clear status.nominatedNodeName of these pods (preemption does this for
        lower-priority pods nominated to the node it chose)."""
        ...

    async def bind_pod(self, pod: "Pod", node_name: str, with_updates: Sequence[Any] = ()) -> list[dict[str, Any]]:
        """Write the binding (DefaultBinder) and `with_updates` in the same write, all or
        none (framework/bind_writes.py); returns those objects as stored; raises on failure."""
        ...

    async def update_object(self, obj: Any) -> dict[str, Any]:
        """Write an object (with its resourceVersion) to the store; raises on failure."""
        ...

    def update_object_later(self, obj: Any) -> None:
        """update_object started from a synchronous extension point."""
        ...

    def parallelizer_run(self, n: int, fn: Callable[[int], None]) -> None:
        """Run fn(0..n-1). Kept for parity with upstream's Parallelizer."""
        ...


# --- Extension points ------------------------------------------------------------------------

class Plugin(Protocol):
    name: str


@runtime_checkable
class QueueSortPlugin(Protocol):
    name: str

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        """Whether queued pod `a` goes before `b`. Pure, no side effects."""
        ...


@runtime_checkable
class PreEnqueuePlugin(Protocol):
    name: str

    def pre_enqueue(self, pod: "Pod") -> Status | None:
        """Success lets the pod into activeQ; anything else keeps it gated."""
        ...


@runtime_checkable
class PodOnlyPreEnqueuePlugin(Protocol):
    """A PreEnqueue plugin that declares when its verdict for `pod` reads nothing but
    the pod object itself (`pre_enqueue_reads_pod_only`): no other object, no state
    kept elsewhere, so no cluster event about something else can change it. The
    queue then knows that a pod gated by a later plugin, whose gate still holds,
    would be gated by that plugin again (actors/queue: such a pod is not taken out
    of the unschedulable pool and put back on every event). Pure; asked per event."""

    name: str

    def pre_enqueue_reads_pod_only(self, pod: "Pod") -> bool: ...


class PreFilterExtensions(Protocol):
    def add_pod(self, state: CycleState, pod_to_schedule: "Pod", pod_info_to_add: "PodInfo", node_info: "NodeInfo") -> Status | None: ...

    def remove_pod(self, state: CycleState, pod_to_schedule: "Pod", pod_info_to_remove: "PodInfo", node_info: "NodeInfo") -> Status | None: ...


@runtime_checkable
class PreFilterPlugin(Protocol):
    name: str

    def pre_filter(self, state: CycleState, pod: "Pod", nodes: list["NodeInfo"]) -> tuple[PreFilterResult | None, Status | None]:
        """May return Skip (its Filter is then not called for this pod), a
        PreFilterResult narrowing the nodes, Unschedulable(AndUnresolvable) or Error."""
        ...

    def pre_filter_extensions(self) -> PreFilterExtensions | None: ...


@runtime_checkable
class FilterPlugin(Protocol):
    name: str

    def filter(self, state: CycleState, pod: "Pod", node_info: "NodeInfo") -> Status | None:
        """Success, Unschedulable, UnschedulableAndUnresolvable or Error for one node.
        Must not change `state` except through values it owns; called for many nodes."""
        ...


@runtime_checkable
class PostFilterPlugin(Protocol):
    name: str

    def post_filter(self, state: CycleState, pod: "Pod", filtered: NodeToStatus
                    ) -> "PostFilterAnswer | Awaitable[PostFilterAnswer]":
        """Called when no node fits. Success with a nominated node ends PostFilter.
        May be a coroutine (DefaultPreemption awaits preempting extenders); one that
        does not suspend still runs under run_unsuspended."""
        ...


@runtime_checkable
class PreScorePlugin(Protocol):
    name: str

    def pre_score(self, state: CycleState, pod: "Pod", nodes: list["NodeInfo"]) -> Status | None:
        """Success, Skip (its Score is then not called) or Error."""
        ...


class ScoreExtensions(Protocol):
    def normalize_score(self, state: CycleState, pod: "Pod", scores: list[NodeScore]) -> Status | None: ...


@runtime_checkable
class ScorePlugin(Protocol):
    name: str

    def score(self, state: CycleState, pod: "Pod", node_info: "NodeInfo") -> tuple[int, Status | None]:
        """An integer score for one node; NormalizeScore (if any) must bring every
        score into [0, 100]."""
        ...

    def score_extensions(self) -> ScoreExtensions | None: ...


# --- Columnar forms (optional, for speed) ---------------------------------------------------
# A plugin may offer these beside its per-node methods. The runtime uses them when
# the plugin's class has them (or the object sets them itself), and the results
# must be exactly what the per-node methods give, node by node: tests hold the
# in-tree plugins to it. Without them a plugin is called node by node as before.
#
# `nodes` is usually a framework.node_table.ColumnarNodes: a list of the snapshot's
# NodeInfos that also carries their rows in the snapshot's NodeTable (numpy columns
# of allocatable, requested, pod counts, taint/image/port flags, label codes), so a
# columnar form can decide for all nodes at once with numpy (`columnar_table(nodes)`)
# and call its per-node method only for the rare nodes a flag column points at.
# One formula per plugin: where the columnar form computes what the per-node method
# computes, both call one function written over values that are one node's numbers
# or numpy columns alike (framework/plugins/helper/elementwise.py), never two copies.
# Snapshot NodeInfos are read-only: changes go through the Cache, which keeps the
# table in step. score_nodes may return a numpy integer array.

@runtime_checkable
class ColumnarFilterPlugin(Protocol):
    name: str

    def filter_nodes(self, state: CycleState, pod: "Pod", nodes: list["NodeInfo"]) -> Sequence[Status | None]:
        """filter() for each node, in order: one status per node. The runtime calls it
        only when every Filter plugin running for the pod has one, each plugin on the
        nodes the plugins before it passed, and may ask about a few nodes more than
        it ends up needing (those verdicts are dropped), so, like filter(), it must
        have no effects. An exception makes the runtime call filter() per node."""
        ...


@runtime_checkable
class ColumnarScorePlugin(Protocol):
    name: str

    def score_nodes(self, state: CycleState, pod: "Pod", nodes: list["NodeInfo"]) -> tuple[Sequence[int], Status | None]:
        """score() for each node, in order, and one status for the call: an Error (or
        an exception) fails the cycle as it would from score()."""
        ...


class ColumnarScoreExtensions(Protocol):
    def normalize_scores(self, state: CycleState, pod: "Pod", nodes: list["NodeInfo"],
                         scores: list[int]) -> tuple[Sequence[int], Status | None]:
        """normalize_score() on plain integers (scores[i] belongs to nodes[i]),
        returning the normalized scores instead of changing NodeScores."""
        ...


@runtime_checkable
class ReservePlugin(Protocol):
    name: str

    def reserve(self, state: CycleState, pod: "Pod", node_name: str) -> Status | None: ...

    def unreserve(self, state: CycleState, pod: "Pod", node_name: str) -> None:
        """Must be idempotent and must not fail."""
        ...


@runtime_checkable
class PermitPlugin(Protocol):
    name: str

    def permit(self, state: CycleState, pod: "Pod", node_name: str) -> tuple[Status | None, float]:
        """Success, Wait (with a timeout in seconds, capped at 15 minutes), or a rejection."""
        ...


@runtime_checkable
class PreBindPlugin(Protocol):
    name: str

    async def pre_bind(self, state: CycleState, pod: "Pod", node_name: str) -> Status | None: ...


@runtime_checkable
class BindPlugin(Protocol):
    name: str

    async def bind(self, state: CycleState, pod: "Pod", node_name: str) -> Status | None:
        """Success, Skip (let the next Bind plugin decide) or Error."""
        ...


@runtime_checkable
class PostBindPlugin(Protocol):
    name: str

    def post_bind(self, state: CycleState, pod: "Pod", node_name: str) -> None: ...


@runtime_checkable
class EnqueueExtensions(Protocol):
    def events_to_register(self) -> list[ClusterEventWithHint]:
        """The events that may make a pod this plugin rejected schedulable, each with an
        optional QueueingHintFn (called for one pod and one event; Queue or QueueSkip;
        an exception counts as Queue). A registration may also give hint keys
        (ClusterEventWithHint.event_keys / pod_keys, framework/events.py): a promise that
        the hint skips every pod whose keys miss the event's, so the queue offers the
        event only to the pods filed under its keys (actors/queue/hint_index.py)."""
        ...


# --- What the speed-ups may assume (optional, declared by each plugin) ----------------------
# ksched reuses work between pods and skips work that cannot change a verdict: a
# failure repeated for a pod of the same signature in the same cluster state
# (actors/failure_reuse.py), opportunistic batching (framework/batching.py), queue
# equivalence classes (actors/queue/pod_classes.py), the columnar filter pass with
# nominated pods (framework/runtime/columnar.py). Each rests on promises only the
# plugin can make, so each plugin makes its own below; the runtime keeps no table
# of plugin names. A plugin that declares nothing gets none of these speed-ups for
# the pods or profiles it takes part in, and loses nothing else.

class SignPurpose(enum.Enum):
    """What a pod signature is for; the promise differs by extension point."""

    # PreFilter, Filter, PostFilter and the plugin's QueueingHints: the results for
    # two pods of equal signatures are the same in the same cluster state (a
    # failure is reused; equal pods wait in the queue as one equivalence class).
    FAILURE = "failure"
    # PreFilter, Filter, PreScore and Score (upstream's SignPod, OpportunisticBatching):
    # the scored node list of one pod serves the next pod of an equal signature.
    PLACEMENT = "placement"


@runtime_checkable
class SignPlugin(Protocol):
    """upstream's SignPlugin. `sign_pod` returns the plugin's fragment of the pod's
    signature: a hashable value (() when everything the plugin reads of the pod is
    already signed: its scheduler name, namespace, labels, annotations, owner
    references and whole spec), or None to refuse to sign this pod (it then gets
    no speed-up). Signing promises that, for `purpose`, the plugin's results for
    the pod depend only on the signed pod, the snapshot, the nominated pods and
    the lister's objects other than Pods, never on the pod's name, uid or history
    (a QueueingHint may still look at whether the changed pod is the pod itself:
    the queue offers such events pod by pod). Pure; called once per pod attempt."""

    name: str

    def sign_pod(self, pod: "Pod", purpose: SignPurpose) -> Hashable | None: ...


@runtime_checkable
class MonotoneEventsPlugin(Protocol):
    """`monotone_events(pod)`: the cluster events that can only make this plugin's
    PreFilter/Filter reject `pod` more (or leave it as it is), never let it pass
    where it was rejected: for NodeResourcesFit, a pod added to a node. The queue
    does not wake a pod of an equivalence class whose every rejecting plugin
    declares the event monotone for it (a bind of one class member does not wake
    the others). Pure; it may be asked once per class, not per pod."""

    name: str

    def monotone_events(self, pod: "Pod") -> Sequence[ClusterEvent]: ...


class FilterReads(enum.Enum):
    """What a Filter plugin's verdict on one node reads (FilterReadsPlugin)."""

    # Only the node (its spec, labels, taints): never the pods on it. It rejects with
    # UnschedulableAndUnresolvable (a pod-independent filter).
    NODE = "node"
    # The node, the list of its pods and their summed requests (NodeInfo.pods and
    # .requested), nothing else of them; a node that passes with some pods passes
    # with any subset of them.
    NODE_AND_POD_REQUESTS = "node_and_pod_requests"


@runtime_checkable
class FilterReadsPlugin(Protocol):
    """A Filter plugin that declares what its verdict on one node reads (`filter_reads`): that
    node (and its pods), the pod (never its labels or spec.schedulingGroup) and a PreFilter
    state made from the pod alone, never other nodes or scheduling.k8s.io Workloads and
    PodGroups (a group cycle keeps its verdicts across gangs of one template). Nodes with
    nominated pods are then filtered in columns (framework/runtime/columnar.py), and a retry of
    a pod class re-filters only the nodes whose generation moved since the class's last failure
    (framework/incremental_failure.py)."""

    name: str
    filter_reads: ClassVar[FilterReads]


@runtime_checkable
class NodeLocalScorePlugin(Protocol):
    """A Score plugin declaring `score_node_local = True`: its raw score of a node (before
    NormalizeScore) reads that node's NodeInfo (the node, its pods), the pod (never its labels
    or spec.schedulingGroup) and a PreScore state made from the pod alone: never other nodes,
    the node list PreScore was given, the snapshot's size or the lister's objects. A node's raw
    score then holds while its generation does not move, so a group cycle computes it once, in
    columns, for the members of one signature and slices it per member's window
    (framework/runtime/node_local.py); normalisation stays per window, over the nodes scored. It
    must sign the pod too (SignPlugin, PLACEMENT): the signature says which members are alike."""

    name: str
    score_node_local: ClassVar[bool]


@runtime_checkable
class TableFilterPlugin(Protocol):
    """A Filter plugin declaring FilterReads.NODE_AND_POD_REQUESTS whose columnar form
    can say, per cycle, that it reads the pods on a node only through the NodeTable's
    req_cpu, req_mem, req_eph and num_pods columns. The nominated-pods pass then adds
    the nominated pods' requests to those columns instead of copying the nodes."""

    def filter_nodes_reads_table(self, state: CycleState) -> bool: ...


class Binder(Protocol):
    """What DefaultBinder calls to write a binding (the store, or a recording fake)."""

    def bind(self, pod: "Pod", node_name: str) -> Awaitable[None]: ...


PluginFactory = Callable[[dict[str, Any] | None, Handle], Any]
