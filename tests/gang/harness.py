"""A deterministic, synchronous scheduler loop for gang tests.

It runs the real Framework (config.build_frameworks), the real scheduling
algorithm, Cache/Snapshot and WaitingPod, with a fake clock. What it simplifies:
one profile; the queue is activeQ + an unschedulable pool + a fixed 1 s backoff;
any pod add, bind or completion moves every unschedulable pod back (a superset of
the events plugins register); binding is immediate. Decisions on waiting pods
(Allow/Reject/timeout) are applied *after* the cycle that made them, as the real
binding cycles run after the scheduling cycle, so a rejected pod stays assumed in
the cache for a while, as it does in the daemon.

`on_cycle` callbacks see the harness after every cycle (invariant checks).
"""
from __future__ import annotations

import functools
import random
from dataclasses import dataclass, field
from typing import Any, Callable

from framework.algorithm import SchedulingAlgorithm
from framework.attempt_outcome import FitError
from framework.api.objects import POD_GROUP_LABEL, Node, Pod, PodGroup
from framework.cache import Cache, Snapshot
from framework.config import build_frameworks, load_config
from framework.handle import FrameworkHandle, InMemoryObjects
from framework.interface import CycleState, QueuedPodInfo, Status
from framework.runtime import run_unsuspended
from framework.waiting import WaitingPod, WaitingPodsMap

NS = "default"
BACKOFF_SECONDS = 1.0
UNSCHEDULABLE_FLUSH_SECONDS = 300.0


def node(name: str, cpu: int | str, pods: int = 110, memory: str = "64Gi") -> dict[str, Any]:
    alloc = {"cpu": str(cpu), "memory": memory, "pods": str(pods)}
    return {"metadata": {"name": name}, "status": {"capacity": alloc, "allocatable": alloc}}


def pod(name: str, cpu: int | str = 1, group: str = "", priority: int = 0, ns: str = NS) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": ns, "uid": f"{ns}/{name}"}
    if group:
        meta["labels"] = {POD_GROUP_LABEL: group}
    return {"metadata": meta, "spec": {"priority": priority, "containers": [
        {"name": "c", "resources": {"requests": {"cpu": str(cpu)}}}]}}


def pod_group(name: str, min_member: int, timeout: int | None = None, min_resources: dict | None = None,
              created: str = "2026-01-01T00:00:00Z", ns: str = NS) -> dict[str, Any]:
    spec: dict[str, Any] = {"minMember": min_member}
    if timeout is not None:
        spec["scheduleTimeoutSeconds"] = timeout
    if min_resources is not None:
        spec["minResources"] = min_resources
    return {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": ns, "creationTimestamp": created}, "spec": spec}


def profile(args: dict[str, Any] | None = None, reserve: bool = True) -> dict[str, Any]:
    """configs/coscheduling.yaml's profile (without DefaultPreemption); with
    reserve=False, upstream's integration-test profile (no Unreserve)."""
    plugins: dict[str, Any] = {
        "queueSort": {"enabled": [{"name": "Coscheduling"}], "disabled": [{"name": "*"}]},
        "multiPoint": {"disabled": [{"name": "DefaultPreemption"}]},
    }
    if reserve:
        plugins["multiPoint"]["enabled"] = [{"name": "Coscheduling"}]
    else:
        for point in ("preFilter", "postFilter", "permit"):
            plugins[point] = {"enabled": [{"name": "Coscheduling"}]}
    return {"schedulerName": "default-scheduler", "plugins": plugins,
            "pluginConfig": [{"name": "Coscheduling", "args": args or {}}]}


@dataclass
class Record:
    events: list[tuple[str, str, str]] = field(default_factory=list)  # (kind, pod key, detail)

    def of(self, kind: str) -> list[tuple[str, str, str]]:
        return [e for e in self.events if e[0] == kind]


class GangHarness:
    def __init__(self, nodes: list[dict[str, Any]], prof: dict[str, Any] | None = None, seed: int = 0) -> None:
        self.clock = 1767225600.0  # 2026-01-01T00:00:00Z
        self.objects = InMemoryObjects()
        self.cache = Cache()
        self.snapshot = Snapshot()
        self.waiting = WaitingPodsMap()
        self.handle = FrameworkHandle(snapshot=self.snapshot, objects=self.objects, waiting_pods=self.waiting,
                                      clock=lambda: self.clock, activate=self._activate)
        cfg = load_config({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                           "profiles": [prof or profile()]})
        self.fwk = build_frameworks(cfg, self.handle)["default-scheduler"]
        self.algo = SchedulingAlgorithm(rand=random.Random(seed))
        self.queued: dict[str, QueuedPodInfo] = {}
        self.active: set[str] = set()
        self.unschedulable: dict[str, float] = {}  # key -> when it went there
        self.backoff: dict[str, float] = {}  # key -> until
        self.decisions: list[tuple[int, WaitingPod, Status]] = []  # (cycles to go, pod, decision)
        self.bind_delay: Callable[[], int] = lambda: 0
        self.record = Record()
        self.cycles = 0
        self.attempts: dict[str, int] = {}
        self.pick: Callable[[list[str]], str] | None = None  # override activeQ order
        self.on_cycle: list[Callable[["GangHarness"], None]] = []
        self.messages: dict[str, str] = {}
        self._states: dict[str, CycleState] = {}
        for n in nodes:
            nd = Node(n)
            self.objects.put(nd)
            self.cache.add_node(nd)

    # --- cluster changes -------------------------------------------------------------------

    def add_group(self, raw: dict[str, Any]) -> None:
        self.objects.put(PodGroup(raw))
        self._move_all()

    def add_pod(self, raw: dict[str, Any]) -> None:
        p = Pod(raw)
        self.objects.put(p)
        self.queued[p.key] = QueuedPodInfo(pod=p, timestamp=self._ns(), initial_attempt_timestamp=self._ns())
        self.active.add(p.key)
        self._move_all()

    def complete(self, key: str) -> None:
        """The pod finished (status.phase Succeeded): it frees its node."""
        p = self.objects.get("Pod", *key.split("/"))
        done = Pod({**p.raw, "status": {"phase": "Succeeded"}})
        self.objects.put(done)
        self.cache.remove_pod(p)
        self.record.events.append(("complete", key, p.node_name))
        self._move_all()

    # --- queries ----------------------------------------------------------------------------

    def pod(self, key: str) -> Pod:
        return self.objects.get("Pod", *key.split("/"))

    def bound(self, group: str | None = None) -> list[str]:
        return sorted(p.key for p in self.objects.list("Pod") if p.node_name
                      and (group is None or p.labels.get(POD_GROUP_LABEL) == group))

    def pending(self) -> list[str]:
        return sorted(p.key for p in self.objects.list("Pod") if not p.node_name)

    def assumed(self) -> list[str]:
        return sorted(self.cache.assumed)

    # --- the loop -----------------------------------------------------------------------------

    def run(self, max_cycles: int = 10_000, max_seconds: float = 900.0) -> None:
        """Schedule until nothing can make progress (advancing the clock through
        backoffs and Permit timeouts), at most `max_seconds` of simulated time."""
        end = self.clock + max_seconds
        while self.cycles < max_cycles:
            self._flush(self.clock)
            if self.active:
                self.schedule_one()
                continue
            if self.decisions:
                self.drain()
                for fn in self.on_cycle:
                    fn(self)
                continue
            nxt = self._next_timer()
            if nxt is None or nxt > end:
                return
            self.clock = max(self.clock, nxt)

    def run_cycles(self, n: int) -> None:
        for _ in range(n):
            self._flush(self.clock)
            if not self.active:
                self.drain()
                return
            self.schedule_one()

    def schedule_one(self) -> None:
        keys = sorted(self.active, key=functools.cmp_to_key(self._cmp))
        key = self.pick(keys) if self.pick is not None else keys[0]
        self.active.discard(key)
        qpi = self.queued[key]
        p = self.pod(key)
        self.cycles += 1
        self.attempts[key] = self.attempts.get(key, 0) + 1
        self.cache.update_snapshot(self.snapshot)
        state = CycleState()
        try:
            result = self.algo.schedule_pod(self.fwk, state, p, self.snapshot)
        except FitError as e:
            pf = run_unsuspended(self.fwk.run_post_filter(state, p, e.diagnosis.node_to_status)).status
            self.messages[key] = e.message()
            self.record.events.append(("unschedulable", key, e.message()))
            self.unschedulable[key] = self.clock
            qpi.pod = p
            self._after_cycle()
            return
        assumed = Pod({**p.raw, "spec": {**p.raw.get("spec", {}), "nodeName": result.suggested_host}})
        self.cache.assume_pod(assumed, result.suggested_host)
        self.record.events.append(("assume", key, result.suggested_host))
        st = self.fwk.run_reserve(state, assumed, result.suggested_host)
        if st.is_success():
            st, waits = self.fwk.run_permit(state, assumed, result.suggested_host)
            if st.is_wait():
                wp = WaitingPod(assumed, result.suggested_host,
                                {pl: self.clock + t for pl, t in waits.items()})
                wp.set_on_decision(lambda s, wp=wp: self._decided(wp, s))
                self._states[wp.pod.uid] = state
                self.waiting.add(wp)
                self.record.events.append(("wait", key, result.suggested_host))
                self._after_cycle()
                return
        if st.is_success():
            self._decided(WaitingPod(assumed, result.suggested_host, {}), st)
        else:
            self._undo(state, assumed, st)
        self._after_cycle()

    # --- internals ------------------------------------------------------------------------------

    def _after_cycle(self) -> None:
        # Binding cycles run concurrently with later scheduling cycles: each
        # decided pod is bound or undone `bind_delay()` cycles after its decision.
        due = [d for d in self.decisions if d[0] <= 0]
        self.decisions = [(n - 1, wp, st) for n, wp, st in self.decisions if n > 0]
        for _, wp, st in due:
            self._finish(wp, st)
        for fn in self.on_cycle:
            fn(self)

    def _finish(self, wp: WaitingPod, st: Status) -> None:
        if self.waiting.get(wp.pod.uid) is wp:
            self.waiting.remove(wp.pod.uid)
        if st.is_success():
            self._bind(wp.pod)
        else:
            self._undo(self._states.pop(wp.pod.uid, CycleState()), wp.pod, st)

    def _decided(self, wp: WaitingPod, st: Status) -> None:
        self.decisions.append((self.bind_delay(), wp, st))

    def in_flight(self) -> list[Pod]:
        """Pods allowed at Permit whose binding has not been written yet."""
        return [wp.pod for _, wp, st in self.decisions if st.is_success()]

    def drain(self) -> None:
        """Let every pending binding cycle finish."""
        while self.decisions:
            _, wp, st = self.decisions.pop(0)
            self._finish(wp, st)

    def _bind(self, assumed: Pod) -> None:
        self.objects.put(assumed)
        self.cache.add_pod(assumed)
        self.record.events.append(("bind", assumed.key, assumed.node_name))
        self._move_all()

    def _undo(self, state: CycleState, assumed: Pod, st: Status) -> None:
        self.fwk.run_unreserve(state, assumed, assumed.node_name)
        self.cache.forget_pod(assumed)
        self.record.events.append(("reject", assumed.key, st.message()))
        self.messages[assumed.key] = st.message()
        self.backoff[assumed.key] = self.clock + BACKOFF_SECONDS

    def _expire_waiting(self, now: float) -> None:
        for wp in list(self.waiting):
            for plugin, deadline in sorted(wp.deadlines.items()):
                if now >= deadline and wp.decided is None:
                    wp.reject(plugin, f"rejected due to timeout at plugin {plugin}")

    def _flush(self, now: float) -> None:
        self._expire_waiting(now)
        for key, until in list(self.backoff.items()):
            if now >= until:
                del self.backoff[key]
                self.active.add(key)
        for key, since in list(self.unschedulable.items()):
            if now >= since + UNSCHEDULABLE_FLUSH_SECONDS:
                del self.unschedulable[key]
                self.active.add(key)

    def _next_timer(self) -> float | None:
        times = [d for wp in self.waiting for d in wp.deadlines.values()]
        times += list(self.backoff.values())
        times += [t + UNSCHEDULABLE_FLUSH_SECONDS for t in self.unschedulable.values()]
        return min(times) if times else None

    def _move_all(self) -> None:
        for key in list(self.unschedulable):
            del self.unschedulable[key]
            self.backoff.setdefault(key, self.clock)

    def _activate(self, pods: list[Pod]) -> None:
        for p in pods:
            if p.key in self.unschedulable or p.key in self.backoff:
                self.unschedulable.pop(p.key, None)
                self.backoff.pop(p.key, None)
                self.active.add(p.key)

    def _cmp(self, a: str, b: str) -> int:
        qa, qb = self.queued[a], self.queued[b]
        if self.fwk.queue_sort_less(qa, qb):
            return -1
        if self.fwk.queue_sort_less(qb, qa):
            return 1
        return 0

    def _ns(self) -> int:
        return int(self.clock * 1_000_000_000)
