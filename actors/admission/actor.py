"""AdmissionActor: owns the quota model (framework.kueue.manager.AdmissionState) and
runs Kueue's admission cycle in front of the scheduling queue.

It watches the store: Kueue's objects, Workloads, Namespaces, PodGroups and the pods
labelled kueue.x-k8s.io/queue-name (which the store gates with kueue.x-k8s.io/admission
on create). A pod, or a pod group once all its pods exist, becomes a Workload. After
each batch of events it runs cycles; each admission is written to the store (durable)
before the pods are released: the gate removed, the flavor's nodeSelector and
tolerations merged. A preempted workload's running pods are replaced by gated ones (the
store's Recreate), then its quota is released. After a restart the quota is rebuilt from the stored
Workloads (the watch replays them) and admitted workloads' pods are released again.
ClusterQueue and LocalQueue status are written after each batch (queue_status.py).
waitForPodsReady: a workload whose pods are not all placed `pods_ready_timeout` after
admission is evicted (PodsReadyTimeout), its quota released, and it waits a backoff
before it queues again.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from actors.admission.messages import AdmissionMsg, ReadyCheck, StoreChanged, Unpark
from actors.admission.queue_status import QueueStatusWriter
from actors.admission.queue_view import queues_view
from actors.admission.workloads import PodIndex, is_gated, is_placed, is_terminal, pod_key
from actors.base import Actor, MailboxClosed
from actors.clock import Clock, now_ns
from actors.metrics_sink import KueueMetrics, NoKueueMetrics
from actors.store import AlreadyExists, Conflict, NotFound, StoreClient, StoreError, WatchEvent
from framework.api.errors import ValidationError
from framework.kueue.api import API_VERSION
from framework.kueue.cycle import Config
from framework.kueue.fairsharing import DEFAULT_STRATEGIES
from framework.kueue.manager import AdmissionState
from framework.kueue.pods import QUEUE_LABEL, admitted_pod, made_from_pods, regated_pod
from framework.kueue.workload import WorkloadInfo, parse_workload, status_of

log = logging.getLogger(__name__)
QUEUE_KINDS = ("ResourceFlavor", "ClusterQueue", "Cohort", "LocalQueue")
WATCHED = frozenset({*QUEUE_KINDS, "Workload", "WorkloadPriorityClass", "Namespace", "PodGroup", "Pod"})


@dataclass(frozen=True)
class AdmissionConfig:
    fair_sharing: bool = False
    preemption_strategies: tuple[str, ...] = DEFAULT_STRATEGIES
    # waitForPodsReady.timeout: on, 30 minutes, as Kueue's Configuration v1beta2 defaults it
    # (apis/config/v1beta2/defaults.go: DefaultWaitForPodsReadyTimeout, on since Kueue 0.19)
    pods_ready_timeout_seconds: float | None = 1800.0
    backoff_base_seconds: float = 60.0  # requeuingStrategy.backoffBaseSeconds
    backoff_max_seconds: float = 3600.0


@dataclass
class _Pending:
    workloads: set[str] = field(default_factory=set)  # workload keys whose pods changed


class AdmissionActor(Actor[AdmissionMsg]):
    name = "admission"
    batched = True

    def __init__(self, store: StoreClient, clock: Clock, config: AdmissionConfig = AdmissionConfig(),
                 metrics: KueueMetrics | None = None, timer: Callable[[], float] = time.perf_counter) -> None:
        super().__init__()
        self.store, self.clock, self.config, self._timer = store, clock, config, timer
        self.metrics = metrics if metrics is not None else NoKueueMetrics()
        self.state = AdmissionState(Config(fair_sharing=config.fair_sharing, strategies=config.preemption_strategies))
        self.objects: dict[str, dict[str, Any]] = {k: {} for k in QUEUE_KINDS}
        self.index = PodIndex()
        self.stored: dict[str, dict[str, Any]] = {}  # workload key -> last raw we know is stored
        self.written_rv: dict[str, int] = {}
        self.attempts: dict[str, int] = {}  # PodsReady evictions per workload (backoff)
        self.tokens: dict[str, int] = {}
        self.unfinished_evictions: set[str] = set()
        self.cycles = 0
        self._dirty = _Pending()
        self.queue_status = QueueStatusWriter(store)

    @classmethod
    async def attach(cls, client: StoreClient, clock: Clock, config: AdmissionConfig = AdmissionConfig(),
                     metrics: KueueMetrics | None = None) -> "AdmissionActor":
        actor = cls(client, clock, config, metrics)
        await client.watch(actor.observe, kinds=WATCHED)
        return actor

    def observe(self, ev: WatchEvent) -> None:
        """Store watch sink: only what concerns admission goes to the mailbox. A pod
        that names no LocalQueue, before or after, is left out by one read each:
        queue_name's test on the parsed labels, which are the raw's own map
        (framework.api.meta keeps it, every value a str), as most pods are."""
        if ev.kind == "Pod":
            old = ev.old
            if not ev.obj.labels.get(QUEUE_LABEL) and (old is None or not old.labels.get(QUEUE_LABEL)):
                return
        try:
            self.tell(StoreChanged(event=ev))
        except MailboxClosed:
            pass

    def close(self) -> None:
        self.inbox.close(drain=True)

    # --- the loop ---
    async def handle_turn(self, msgs: list[AdmissionMsg]) -> None:
        changed = False
        for m in msgs:
            if isinstance(m, StoreChanged):
                changed = self._on_event(m.event) or changed
            elif isinstance(m, ReadyCheck):
                changed = await self._ready_check(m) or changed
            elif isinstance(m, Unpark):
                self.state.unpark(m.key)
                changed = True
        if changed:
            await self._finish_evictions()
            await self._materialize()
            await self._cycles()
            await self.queue_status.write(self.state, self._now(), self.config.fair_sharing)
            self.metrics.queues(queues_view(self.state))

    def _now(self) -> int:
        return now_ns(self.clock)

    # --- events ---
    def _on_event(self, ev: WatchEvent) -> bool:
        kind, obj = ev.kind, ev.obj
        if kind in QUEUE_KINDS:
            if self.queue_status.observe(ev):
                return False  # a status the actor wrote
            if ev.type == "DELETED":
                self.objects[kind].pop(obj.key, None)
            else:
                self.objects[kind][obj.key] = obj.spec
            o = self.objects
            self.state.set_objects(o["ResourceFlavor"].values(), o["ClusterQueue"].values(), o["Cohort"].values(),
                                   o["LocalQueue"].values())
            return True
        if kind == "WorkloadPriorityClass":
            if ev.type == "DELETED":
                self.index.priority_classes.pop(obj.name, None)
            else:
                self.index.priority_classes[obj.name] = obj.spec.value
            return False
        if kind == "Namespace":
            self.state.namespaces[obj.name] = dict(obj.labels)
            return False
        if kind == "PodGroup":
            self.index.group_sizes[(obj.namespace, obj.name)] = obj.min_member
            self._dirty.workloads.add(f"{obj.namespace}/{obj.name}")
            return True
        if kind == "Workload":
            return self._on_workload(ev)
        return self._on_pod(ev)

    def _on_workload(self, ev: WatchEvent) -> bool:
        key = ev.obj.key
        if ev.type == "DELETED":
            self.stored.pop(key, None)
            self.state.delete_workload(key)
            return True
        if ev.resource_version <= self.written_rv.get(key, -1):
            return False  # our own write (or an older one) coming back
        self._adopt(key, dict(ev.obj.raw))
        return True

    def _adopt(self, key: str, raw: dict[str, Any]) -> None:
        """Take a stored Workload as this actor's; one stored Evicted while still holding
        quota is an eviction a kill -9 cut short, finished by the next batch."""
        self.stored[key] = raw
        wl = parse_workload(raw, strict=False)
        self.state.add_workload(wl)
        if wl.holds_quota and wl.cond_true("Evicted"):
            self.unfinished_evictions.add(key)

    def _on_pod(self, ev: WatchEvent) -> bool:
        raw, key = ev.obj.raw, ev.obj.key
        if ev.type == "DELETED":
            wk = self.index.drop(key)
            if wk is not None:
                self._dirty.workloads.add(wk)
            return wk is not None
        wk = self.index.put(dict(raw))
        self._dirty.workloads.add(wk)
        return True

    # --- pods -> workloads ---
    async def _materialize(self) -> None:
        dirty, self._dirty = self._dirty.workloads, _Pending()
        for wk in sorted(dirty):
            members = self.index.members(wk)
            wl = self.state.workloads.get(wk)
            if wl is None and wk not in self.stored:
                built = self.index.build(wk)
                if built is not None:
                    await self._create_workload(built)
                continue
            if wl is None or (not members and not made_from_pods(self.stored.get(wk))):
                continue  # (a Workload a client wrote, whose name a PodGroup or pod group shares)
            if not members or (wl.holds_quota and all(is_terminal(p) for p in members)):
                await self._finish(wl, deleted=not members)
            elif wl.holds_quota and not wl.cond_true("Evicted") and any(is_gated(p) for p in members):
                await self._release_pods(wl)

    async def _create_workload(self, raw: dict[str, Any]) -> None:
        try:
            stored = await self.store.create(raw)
        except AlreadyExists:
            stored = await self.store.get("Workload", raw["metadata"]["namespace"], raw["metadata"]["name"])
        except StoreError as e:
            log.warning("admission: cannot create Workload %s: %s", raw["metadata"]["name"], e)
            return
        key = f"{stored['metadata']['namespace']}/{stored['metadata']['name']}"
        self.written_rv[key] = int(stored["metadata"].get("resourceVersion") or 0)
        self._adopt(key, stored)  # (found stored: a restart's replay may bring pods before their Workload)

    async def _finish(self, wl: WorkloadInfo, deleted: bool) -> None:
        if deleted:
            self.state.delete_workload(wl.key)
            try:
                await self.store.delete("Workload", wl.namespace, wl.name)
            except NotFound:
                pass
            self.stored.pop(wl.key, None)
            return
        self.state.finish(wl.key, self._now())
        await self._persist(wl)

    # --- the cycle ---
    async def _cycles(self) -> None:
        while True:
            active_before = self.state.active_pending()
            now = self._now()
            started = self._timer()
            report = self.state.schedule(now)
            self.cycles += 1
            if not report.heads:
                return
            self.metrics.cycle("success" if report.admitted else "inadmissible", self._timer() - started)
            for wl in report.admitted:
                self.metrics.admitted(wl.admission.cluster_queue)
            for wl in report.evicted:
                self.metrics.evicted(wl.admission.cluster_queue, "Preempted", *report.preempted_by[wl.key])
            for wl in sorted(report.changed, key=lambda w: w.admission is None):  # admissions first
                await self._persist(wl)
            for wl in report.admitted:
                await self._release_pods(wl)
                self._arm_ready_timer(wl)
            for wl in report.evicted:
                await self._evict_pods(wl)
                self.state.release(wl.key, self._now())
                await self._persist(wl)
            if not report.admitted and not report.evicted and self.state.active_pending() >= active_before:
                return  # no progress: what is left waits for an event (StrictFIFO heads stay blocked)

    async def _persist(self, wl: WorkloadInfo) -> None:
        base = self.stored.get(wl.key) or {"apiVersion": API_VERSION, "kind": "Workload",
                                           "metadata": {"name": wl.name, "namespace": wl.namespace}}
        status = status_of(wl)
        if base.get("status") == status:
            return
        raw = {**base, "status": status, "metadata": {k: v for k, v in base["metadata"].items() if k != "resourceVersion"}}
        try:
            stored = await self.store.update(raw)
        except NotFound:
            return
        self.written_rv[wl.key] = int(stored["metadata"].get("resourceVersion") or 0)
        self.stored[wl.key] = stored

    async def _release_pods(self, wl: WorkloadInfo) -> None:
        if wl.admission is None:
            return
        for raw in self.index.members(wl.key):
            if not is_gated(raw):
                continue
            try:
                new = admitted_pod(raw, wl, wl.admission, self.state.flavors)
                await self.store.update({**new, "metadata": {k: v for k, v in new["metadata"].items()
                                                             if k != "resourceVersion"}})
            except (ValidationError, StoreError) as e:
                log.warning("admission: cannot release pod %s of %s: %s", pod_key(raw), wl.key, e)

    async def _evict_pods(self, wl: WorkloadInfo) -> None:
        """Replace each running pod of the workload by its gated form (Kueue stops plain
        pods; ksched creates them again gated, to wait for the workload's next admission).
        Each replacement is one store write (Recreate), so neither a reader nor a restart
        after kill -9 ever finds an acknowledged pod absent. As Kueue's pod Stop, pods
        already suspended are left alone: a finished pod keeps its acknowledged
        Succeeded/Failed, a gated one is gated already."""
        templates = {ps.name: ps.spec for ps in wl.pod_sets}
        spec = templates.get("main") if len(templates) == 1 else None
        for raw in await self._running_members(wl):
            try:
                await self._regate(raw, spec)
            except StoreError as e:
                log.warning("admission: cannot re-gate pod %s of %s: %s", pod_key(raw), wl.key, e)

    async def _finish_evictions(self) -> None:
        """Workloads stored Evicted but still holding quota (a kill -9 cut their eviction
        short): re-gate their pods, then release the quota, as the cycle would have."""
        keys, self.unfinished_evictions = self.unfinished_evictions, set()
        for key in sorted(keys):
            wl = self.state.workloads.get(key)
            if wl is None or not wl.holds_quota or not wl.cond_true("Evicted"):
                continue
            await self._evict_pods(wl)
            self.state.release(key, self._now())
            await self._persist(wl)

    async def _running_members(self, wl: WorkloadInfo) -> list[dict[str, Any]]:
        """The workload's pods that run, as the store holds them now: the index may lag
        the store by a watch event (a pod this actor released a moment ago still looks
        gated to it; one its client finished still looks running)."""
        running = []
        for raw in list(self.index.members(wl.key)):
            m = raw["metadata"]
            try:
                current = await self.store.get("Pod", m.get("namespace") or "default", m["name"])
            except NotFound:
                continue
            if not is_terminal(current) and not is_gated(current):
                running.append(current)
        return running

    async def _regate(self, raw: dict[str, Any], spec: dict[str, Any] | None) -> None:
        """Replace the pod as this actor last read it (a resourceVersion precondition): a
        pod its client finished meanwhile (an acknowledged Succeeded the index has not seen
        yet) is read again and left alone."""
        m = raw["metadata"]
        namespace, name = m.get("namespace") or "default", m["name"]
        for _ in range(3):
            try:
                await self.store.recreate(regated_pod(raw, spec), resource_version=str(m.get("resourceVersion") or ""))
                return
            except Conflict:
                raw = await self.store.get("Pod", namespace, name)
                m = raw["metadata"]
                if is_terminal(raw) or is_gated(raw):
                    return
        raise Conflict(f'pod "{namespace}/{name}" kept changing while its workload was evicted')

    # --- waitForPodsReady ---
    def _arm_ready_timer(self, wl: WorkloadInfo) -> None:
        t = self.config.pods_ready_timeout_seconds
        if t is None:
            return
        token = self.tokens[wl.key] = self.tokens.get(wl.key, 0) + 1
        self.clock.call_at(self.clock.now() + t, lambda: self._post(ReadyCheck(key=wl.key, token=token)))

    def _post(self, msg: AdmissionMsg) -> None:
        try:
            self.tell(msg)
        except MailboxClosed:
            pass

    async def _ready_check(self, m: ReadyCheck) -> bool:
        wl = self.state.workloads.get(m.key)
        if wl is None or not wl.holds_quota or self.tokens.get(m.key) != m.token:
            return False
        pods = self.index.members(m.key)
        if pods and all(is_placed(p) for p in pods):
            self.attempts.pop(m.key, None)
            return False
        now = self._now()
        self.state.evict(m.key, "PodsReadyTimeout", f"Exceeded the PodsReady timeout {m.key}", now)
        self.metrics.evicted(wl.admission.cluster_queue, "PodsReadyTimeout")
        await self._persist(wl)
        await self._evict_pods(wl)
        self.state.release(m.key, now)
        n = self.attempts[m.key] = self.attempts.get(m.key, 0) + 1
        delay = min(self.config.backoff_base_seconds * 2 ** (n - 1), self.config.backoff_max_seconds)
        self.state.park(m.key)
        self.clock.call_at(self.clock.now() + delay, lambda: self._post(Unpark(key=m.key)))
        await self._persist(wl)
        return True
