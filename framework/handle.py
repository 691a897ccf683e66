"""A Handle built from parts: what the framework gives plugins (interface.Handle).

Pure: every part is a value or a callback supplied by the owner (the Scheduler
actor, the conformance runner, tests). Nothing here does I/O.
"""
from __future__ import annotations

import asyncio
import logging
import random
from typing import Any, Awaitable, Callable, Collection, Iterable, Mapping, Protocol, Sequence

from framework.api.objects import KINDS, KubeObject, Pod
from framework.bind_writes import StatusWrite, Update as BindUpdate
from framework.cache import PodInfo, Snapshot
from framework.features import FeatureGates
from framework.preemption_inflight import InFlightPreemptions, PreemptionJob, VictimsInFlight
from framework.waiting import WaitingPod, WaitingPodsMap

_log = logging.getLogger(__name__)


class NominatorView(Protocol):
    """Read access to the pods preemption nominated to nodes (the owner keeps it)."""

    def pods_for_node(self, node_name: str) -> list[PodInfo]: ...

    def nodes(self) -> Collection[str]: ...


class ObjectLister(Protocol):
    def list(self, kind: str, namespace: str | None = None) -> list[Any]: ...

    def get(self, kind: str, namespace: str, name: str) -> Any | None: ...


# Labels InMemoryObjects indexes, so plugins can list by them without a scan
# (Coscheduling lists a group's pods on every PreFilter).
INDEXED_LABELS = ("scheduling.x-k8s.io/pod-group",)


class InMemoryObjects:
    """kind -> {key: object}; the lister the runner and tests use."""

    def __init__(self, objects: Iterable[KubeObject] = ()) -> None:
        self._by_kind: dict[str, dict[str, KubeObject]] = {}
        self._by_label: dict[tuple[str, str, str, str], dict[str, KubeObject]] = {}
        # (namespace, spec.schedulingGroup.podGroupName) -> its pods (GangScheduling reads them)
        self._by_group: dict[tuple[str, str], dict[str, Pod]] = {}
        # Moves with every change of an object other than a Pod (plugins read pods
        # from the snapshot; framework.failure_memo keys on this).
        self.revision = 0
        # kind (not Pod) -> key -> the revision of its last change, oldest first; and per
        # kind the revision before which the journal was trimmed (changed_since)
        self._journal: dict[str, dict[str, int]] = {}
        self._trimmed: dict[str, int] = {}
        self._kind_revision: dict[str, int] = {}  # kind (not Pod) -> the revision of its last change
        for o in objects:
            self.put(o)

    def put(self, obj: KubeObject) -> None:
        if obj.kind != "Pod":
            self.revision += 1
            self._note(obj.kind, obj.key)
        objs = self._by_kind.setdefault(obj.kind, {})
        old = objs.get(obj.key)
        if old is not None:
            self._unindex(old)
        objs[obj.key] = obj
        for label in INDEXED_LABELS:
            value = obj.labels.get(label)
            if value is not None:
                self._by_label.setdefault((obj.kind, obj.namespace, label, value), {})[obj.key] = obj
        if isinstance(obj, Pod) and obj.scheduling_group:
            self._by_group.setdefault((obj.namespace, obj.scheduling_group), {})[obj.key] = obj

    def delete(self, kind: str, key: str) -> None:
        if kind != "Pod":
            self.revision += 1
            self._note(kind, key)
        old = self._by_kind.get(kind, {}).pop(key, None)
        if old is not None:
            self._unindex(old)

    def _note(self, kind: str, key: str) -> None:
        self._kind_revision[kind] = self.revision
        journal = self._journal.setdefault(kind, {})
        journal.pop(key, None)
        journal[key] = self.revision
        if len(journal) > 2 * len(self._by_kind.get(kind, ())) + 1024:  # keys deleted long ago
            for old in list(journal)[:len(journal) // 2]:
                self._trimmed[kind] = journal.pop(old)

    def revision_beside(self, kinds: Collection[str]) -> int:
        """The revision of the last change of an object (not a Pod) of a kind not in
        `kinds` (0: none): what `revision` says, for readers that read none of `kinds`."""
        return max((r for k, r in self._kind_revision.items() if k not in kinds), default=0)

    def changed_since(self, kind: str, revision: int) -> list[str] | None:
        """Keys of `kind` (not Pod) put or deleted after `revision`, newest first; None
        when the journal no longer reaches back that far."""
        if revision < self._trimmed.get(kind, 0):
            return None
        out = []
        journal = self._journal.get(kind, {})
        for key in reversed(journal):
            if journal[key] <= revision:
                break
            out.append(key)
        return out

    def _unindex(self, obj: KubeObject) -> None:
        if isinstance(obj, Pod) and obj.scheduling_group:
            members = self._by_group.get((obj.namespace, obj.scheduling_group))
            if members is not None:
                members.pop(obj.key, None)
                if not members:
                    del self._by_group[(obj.namespace, obj.scheduling_group)]
        for label in INDEXED_LABELS:
            value = obj.labels.get(label)
            if value is not None:
                idx = self._by_label.get((obj.kind, obj.namespace, label, value))
                if idx is not None:
                    idx.pop(obj.key, None)

    def list_with_label(self, kind: str, namespace: str, label: str, value: str) -> list[Any]:
        """Objects of `kind` in `namespace` whose label `label` is `value` (indexed)."""
        if label in INDEXED_LABELS:
            return list(self._by_label.get((kind, namespace, label, value), {}).values())
        return [o for o in self.list(kind, namespace) if o.labels.get(label) == value]

    def scheduling_group_pods(self, namespace: str, group: str) -> list[Pod]:
        """The pods naming `group` in spec.schedulingGroup (indexed)."""
        return list(self._by_group.get((namespace, group), {}).values())

    def list(self, kind: str, namespace: str | None = None) -> list[Any]:
        objs = self._by_kind.get(kind, {}).values()
        if namespace is None:
            return list(objs)
        return [o for o in objs if o.namespace == namespace]

    def get(self, kind: str, namespace: str, name: str) -> Any | None:
        key = f"{namespace}/{name}" if namespace else name
        return self._by_kind.get(kind, {}).get(key)


class FrameworkHandle:
    """interface.Handle assembled from parts. The owner that runs the plugins
    (the Scheduler actor) plugs its own nominator and requests in with `connect`."""

    def __init__(
        self,
        *,
        snapshot: Snapshot | None = None,
        objects: ObjectLister | None = None,
        waiting_pods: WaitingPodsMap | None = None,
        clock: Callable[[], float] = lambda: 0.0,
        features: FeatureGates | None = None,
        nominated: Callable[[str], list[PodInfo]] | None = None,
        activate: Callable[[list[Pod]], None] | None = None,
        evict: Callable[[Pod, Pod, str], None] | None = None,
        rand: random.Random | None = None,
        binder: Callable[[Pod, str], Awaitable[None]] | None = None,
        clear_nominations: Callable[[list[Pod]], None] | None = None,
        nominated_nodes: Callable[[], Collection[str]] | None = None,
        preemptions: InFlightPreemptions | None = None,
        updater: Callable[[Mapping[str, Any]], Awaitable[dict[str, Any]]] | None = None,
        binder_with_updates: Callable[[Pod, str, list[Mapping[str, Any]]], Awaitable[list[dict[str, Any]]]] | None = None,
        pod_backoff_seconds: tuple[float, float] = (1.0, 10.0),
    ) -> None:
        self._snapshot = snapshot if snapshot is not None else Snapshot()
        self.pod_backoff_seconds = pod_backoff_seconds
        # Whether gangs are placed by the whole-group cycle (False with scheduler
        # extenders: the pod-by-pod path, where GangScheduling's PreFilter keeps a
        # member in its group's topology domain).
        self.group_cycle = True
        self.objects: ObjectLister = objects if objects is not None else InMemoryObjects()
        self.waiting_pods = waiting_pods if waiting_pods is not None else WaitingPodsMap()
        self._clock = clock
        self.features = features if features is not None else FeatureGates()
        self._nominated = nominated
        self._activate = activate
        self._evict = evict
        self.rand = rand if rand is not None else random.Random()
        self._binder = binder
        self._updater = updater  # writes an object to the store (DynamicResources' claim status)
        self._binder_with_updates = binder_with_updates  # the binding and updates in one store write
        self._later: set[asyncio.Task[Any]] = set()
        self._clear_nominations = clear_nominations
        self._nominated_nodes = nominated_nodes
        self._nominator: NominatorView | None = None
        # Preemptions whose evictions run outside the cycle (SchedulerAsyncPreemption):
        # read by DefaultPreemption's PreEnqueue; in the running system written only
        # by the queue actor, which runs PreEnqueue (actors/queue/actor.py).
        self.preemptions = preemptions if preemptions is not None else InFlightPreemptions()
        # Victims chosen but not yet seen deleted; the owner shares its record (connect).
        self.victims_in_flight = VictimsInFlight()
        self._start_preemption: Callable[[PreemptionJob], None] | None = None
        self._nominate: Callable[[list[tuple[Pod, str]]], None] | None = None
        self._preempting_extenders: Callable[[Pod, list[Any]], Awaitable[list[Any]]] | None = None
        # What plugins asked for, recorded only where no owner callback takes it
        # (tests, the conformance driver): a running scheduler must not keep every
        # pod it ever bound, activated or evicted.
        self.cleared_nominations: list[Pod] = []
        self.bound: list[tuple[Pod, str]] = []
        self.activated: list[Pod] = []
        self.evicted: list[tuple[Pod, Pod, str]] = []
        self.preemption_jobs: list[PreemptionJob] = []
        self.nominations: list[tuple[Pod, str]] = []
        self.updated: list[dict[str, Any]] = []

    def connect(
        self,
        *,
        nominator: NominatorView | None = None,
        activate: Callable[[list[Pod]], None] | None = None,
        evict: Callable[[Pod, Pod, str], None] | None = None,
        clear_nominations: Callable[[list[Pod]], None] | None = None,
        start_preemption: Callable[[PreemptionJob], None] | None = None,
        nominate: Callable[[list[tuple[Pod, str]]], None] | None = None,
        preempting_extenders: Callable[[Pod, list[Any]], Awaitable[list[Any]]] | None = None,
        victims_in_flight: VictimsInFlight | None = None,
    ) -> None:
        """The owner's parts, given after the plugins were built (they need the
        handle first). Parts left None keep what the constructor gave."""
        if nominator is not None:
            self._nominator = nominator
        self._activate = activate or self._activate
        self._evict = evict or self._evict
        self._clear_nominations = clear_nominations or self._clear_nominations
        self._start_preemption = start_preemption or self._start_preemption
        self._nominate = nominate or self._nominate
        self._preempting_extenders = preempting_extenders or self._preempting_extenders
        if victims_in_flight is not None:
            self.victims_in_flight = victims_in_flight

    def preempting_extenders(self) -> Callable[[Pod, list[Any]], Awaitable[list[Any]]] | None:
        return self._preempting_extenders

    # snapshot
    def snapshot(self) -> Snapshot:
        return self._snapshot

    def set_snapshot(self, snap: Snapshot) -> None:
        self._snapshot = snap

    # waiting pods
    def iterate_waiting_pods(self, fn: Callable[[WaitingPod], None]) -> None:
        for wp in self.waiting_pods:
            fn(wp)

    def get_waiting_pod(self, uid: str) -> WaitingPod | None:
        return self.waiting_pods.get(uid)

    def reject_waiting_pod(self, uid: str) -> bool:
        wp = self.waiting_pods.get(uid)
        if wp is None:
            return False
        for plugin in wp.pending_plugins() or [""]:
            wp.reject(plugin, "removed")
            break
        return True

    # time
    def now(self) -> float:
        return self._clock()

    # objects
    def list_objects(self, kind: str, namespace: str | None = None) -> list[Any]:
        return self.objects.list(kind, namespace)

    def get_object(self, kind: str, namespace: str, name: str) -> Any | None:
        return self.objects.get(kind, namespace, name)

    def changed_objects(self, kind: str, since: int | None) -> tuple[int, list[str] | None]:
        """(the view's revision now, the keys of `kind` changed after revision `since`);
        None for the keys when the lister cannot tell (then read them all)."""
        if not isinstance(self.objects, InMemoryObjects):
            return 0, None
        now = self.objects.revision
        return now, None if since is None else self.objects.changed_since(kind, since)

    def list_objects_with_label(self, kind: str, namespace: str, label: str, value: str) -> list[Any]:
        """list_objects filtered by one label, indexed when the lister offers it."""
        if isinstance(self.objects, InMemoryObjects):
            return self.objects.list_with_label(kind, namespace, label, value)
        return [o for o in self.objects.list(kind, namespace) if o.labels.get(label) == value]

    # queue
    def scheduling_group_pods(self, namespace: str, group: str) -> list[Pod]:
        """The pods of `namespace` naming `group` in spec.schedulingGroup, indexed when
        the lister offers it."""
        if isinstance(self.objects, InMemoryObjects):
            return self.objects.scheduling_group_pods(namespace, group)
        return [p for p in self.objects.list("Pod", namespace) if p.scheduling_group == group]

    def nominated_pods_for_node(self, node_name: str) -> list[PodInfo]:
        if self._nominator is not None:
            return self._nominator.pods_for_node(node_name)
        return self._nominated(node_name) if self._nominated is not None else []

    def nominations_version(self) -> int | None:
        """A number that moves with every change of who is nominated where (the
        owner's nominator's version); None when the owner cannot say."""
        if self._nominator is not None:
            version = getattr(self._nominator, "version", None)
            return version if isinstance(version, int) else None
        return None

    def nominated_nodes_changed_since(self, version: int) -> Collection[str] | None:
        """The nodes whose nominated pods changed after nominations_version() was
        `version`; None when the owner cannot say."""
        since = getattr(self._nominator, "nodes_changed_since", None) if self._nominator is not None else None
        return since(version) if since is not None else None

    def nodes_with_nominated_pods(self) -> Collection[str] | None:
        """Every node some pod is nominated to (more is harmless), so the filter pass
        can skip asking node by node; None when the owner did not say."""
        if self._nominator is not None:
            return self._nominator.nodes()
        if self._nominated is None:
            return ()
        return self._nominated_nodes() if self._nominated_nodes is not None else None

    def activate_pods(self, pods: Iterable[Pod]) -> None:
        pods = list(pods)
        if self._activate is None:
            self.activated.extend(pods)
        else:
            self._activate(pods)

    # preemption
    def being_evicted(self, uid: str) -> bool:
        """Whether a preemption chose this bound pod as a victim and its deletion is
        not seen yet (it no longer counts toward its gang's quorum)."""
        return uid in self.victims_in_flight

    def evict_pod(self, victim: Pod, preemptor: Pod, message: str) -> None:
        """Delete a preemption victim (the owner writes it to the store)."""
        if self._evict is None:
            self.evicted.append((victim, preemptor, message))
        else:
            self._evict(victim, preemptor, message)

    def clear_nominated_node_names(self, pods: list[Pod]) -> None:
        """Clear status.nominatedNodeName of these pods (preemption does this for
        lower-priority pods nominated to the node it chose; the owner writes it
        and lets the queue retry them)."""
        if self._clear_nominations is None:
            self.cleared_nominations.extend(pods)
        else:
            self._clear_nominations(pods)

    def nominate_pods(self, pairs: list[tuple[Pod, str]]) -> None:
        """Nominate each pod to its node (a gang preemptor's other members: the
        owner records each in its nominator and writes status.nominatedNodeName)."""
        if self._nominate is None:
            self.nominations.extend(pairs)
        else:
            self._nominate(pairs)

    def start_preemption(self, job: PreemptionJob) -> None:
        """Hand an asynchronous preemption to the owner, which marks the preemptor
        in `preemptions` (its owner's record) and starts the evictions; without an
        owner the mark is made here and the job recorded."""
        if self._start_preemption is None:
            self.preemptions.begin(job.uid)
            self.preemption_jobs.append(job)
        else:
            self._start_preemption(job)

    # binding
    async def bind_pod(self, pod: Pod, node_name: str, with_updates: Sequence[BindUpdate] = ()
                       ) -> list[dict[str, Any]]:
        """Write the binding (DefaultBinder calls this) and `with_updates` (objects carrying
        their resourceVersion, or StatusWrites) in the same write, all or none (framework/bind_writes.py);
        returns those objects as stored; raises on failure. A binder that cannot carry
        updates gets them written first, one by one."""
        if with_updates and self._binder_with_updates is not None:
            return await self._binder_with_updates(pod, node_name, list(with_updates))
        if self._binder is None:  # tests, conformance: the objects in memory
            stored = [self._update_in_memory(obj) for obj in with_updates]
            self.bound.append((pod, node_name))
            return stored
        stored = [await self.update_object(obj) for obj in with_updates]
        await self._binder(pod, node_name)
        return stored

    async def update_object(self, obj: BindUpdate) -> dict[str, Any]:
        """Write `obj` (an update carrying its resourceVersion; a StatusWrite: its status
        alone, as UpdateStatus) and return it as stored; raises on failure. Without a store
        (tests, conformance) it replaces the object in `objects`."""
        if self._updater is not None:
            return await self._updater(obj)
        return self._update_in_memory(obj)

    def _update_in_memory(self, obj: BindUpdate) -> dict[str, Any]:
        stored = _next_version(obj.as_object() if isinstance(obj, StatusWrite) else obj)
        put = getattr(self.objects, "put", None)
        if put is not None:
            put(KINDS[str(stored.get("kind", ""))](stored))
        self.updated.append(stored)
        return stored

    def update_object_later(self, obj: BindUpdate) -> None:
        """update_object from a synchronous extension point (PostFilter, Unreserve): started
        now, finished by the store; a failure is retried by the pod's next attempt."""
        if self._updater is None:
            self._update_in_memory(obj)
            return
        task = asyncio.get_running_loop().create_task(self._updater(obj))
        self._later.add(task)
        task.add_done_callback(self._later_done)

    def _later_done(self, task: "asyncio.Task[Any]") -> None:
        self._later.discard(task)
        if not task.cancelled() and task.exception() is not None:
            _log.info("deferred update failed: %s", task.exception())

    def parallelizer_run(self, n: int, fn: Callable[[int], None]) -> None:
        for i in range(n):
            fn(i)


def _next_version(obj: Mapping[str, Any]) -> dict[str, Any]:
    meta = dict(obj.get("metadata") or {})
    meta["resourceVersion"] = str(int(meta.get("resourceVersion") or 0) + 1)
    return {**obj, "metadata": meta}
