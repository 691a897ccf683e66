"""Queue cases (SCHEMA-ADDITIONS.md section 5): one SchedulingQueue (the data
structure, actors/queue/scheduling_queue.py) driven through a case's steps on a
fake clock, using only the operations the schema defines, and the
isPodWorthRequeuing function cases.

Not modelled (no case here depends on them): `requeue`'s `cycle` and
`gatingEvents` (the legacy moveRequestCycle path of SchedulerQueueingHints=false),
and the 1 s backoff window of SchedulerPopFromBackoffQ.
"""
from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from typing import Any, Callable

from actors.queue.backoff_queue import backoff_duration_ns
from actors.queue.handover import handed_over
from actors.queue.scheduling_queue import FORCE_ACTIVATE, UNSCHEDULABLE_TIMEOUT, SchedulingQueue, Strategy
from framework.api.objects import Pod
from framework.interface import ActionType, ClusterEvent, ClusterEventWithHint, Code, QueuedPodInfo, QueueingHint, Status
from framework.plugins.queuesort.priority_sort import PrioritySort

STRATEGY_NAMES = {Strategy.SKIP: "queueSkip", Strategy.AFTER_BACKOFF: "queueAfterBackoff",
                  Strategy.IMMEDIATELY: "queueImmediately"}
_RESOURCES = {"UnscheduledPod": "UnschedulablePod"}


class QueueCaseError(ValueError):
    pass


def parse_event(text: str) -> ClusterEvent:
    """`Resource/Action[|Action]`, or one of the two wildcard events."""
    if text == "UnschedulableTimeout":
        return UNSCHEDULABLE_TIMEOUT
    if text == "ForceActivate":
        return FORCE_ACTIVATE
    resource, _, actions = text.partition("/")
    action = ActionType(0)
    for a in actions.split("|"):
        try:
            action |= ActionType[a]
        except KeyError:
            raise QueueCaseError(f"event {text!r}: unknown action {a!r}") from None
    return ClusterEvent(_RESOURCES.get(resource, resource), action, text)


def _parse_time(text: str) -> int:
    """RFC 3339 with nanoseconds -> Unix nanoseconds."""
    base, _, frac = text.rstrip("Z").partition(".")
    dt = datetime.datetime.fromisoformat(base).replace(tzinfo=datetime.timezone.utc)
    return int(dt.timestamp()) * 1_000_000_000 + int((frac + "000000000")[:9] if frac else 0)


@dataclass
class HintCounter:
    calls: int = 0


def _hint_fn(entry: dict[str, Any], counter: HintCounter) -> Callable[[Pod, Any, Any], QueueingHint]:
    def fn(pod: Pod, old: Any, new: Any) -> QueueingHint:
        counter.calls += 1
        if entry.get("error"):
            raise RuntimeError(entry["error"])
        return QueueingHint.Queue if entry["hint"] == "Queue" else QueueingHint.QueueSkip
    return fn


def hint_map(entries: list[dict[str, Any]], counter: HintCounter) -> dict[str, list[ClusterEventWithHint]]:
    out: dict[str, list[ClusterEventWithHint]] = {}
    for e in entries:
        out.setdefault(e["plugin"], []).append(ClusterEventWithHint(parse_event(e["event"]), _hint_fn(e, counter)))
    return out


def _pre_enqueue(plugins: list[dict[str, Any]]) -> Callable[[Pod], Status] | None:
    if not plugins:
        return None

    def run(pod: Pod) -> Status:
        for p in plugins:
            if p["name"] == "SchedulingGates":
                if pod.scheduling_gates:
                    gates = "[" + " ".join(pod.scheduling_gates) + "]"
                    return Status(Code.UnschedulableAndUnresolvable,
                                  f"waiting for scheduling gates: {gates}", plugin="SchedulingGates")
                continue
            if not any(k in set(p.get("allowLabels") or []) for k in pod.labels):
                return Status(Code.UnschedulableAndUnresolvable, "pod name not in allowlists", plugin=p["name"])
        return Status()
    return run


def _key(pod_raw: dict[str, Any]) -> str:
    meta = pod_raw.get("metadata") or {}
    return f"{meta.get('namespace') or 'default'}/{meta.get('name', '')}"


@dataclass
class QueueRun:
    case: dict[str, Any]
    queue: SchedulingQueue = field(init=False)
    t0_ns: int = 0
    now_ns: int = 0
    vars: dict[str, Any] = field(default_factory=dict)
    popped: dict[str, QueuedPodInfo] = field(default_factory=dict)
    last_object: dict[str, Pod] = field(default_factory=dict)
    counter: HintCounter = field(default_factory=HintCounter)

    def __post_init__(self) -> None:
        qcfg = self.case.get("queue") or {}
        gates = self.case.get("featureGates") or {}
        self.t0_ns = self.now_ns = _parse_time(qcfg["startTime"])
        hints = {**hint_map(qcfg.get("queueingHints") or [], self.counter), **self.hint_registrations()}
        cluster = {_key(p): Pod(p) for p in self.case.get("clusterPods") or []}
        self.queue = SchedulingQueue(
            less=PrioritySort().less,
            pre_enqueue=self.pre_enqueue(_pre_enqueue(qcfg.get("preEnqueuePlugins") or [])),
            hints_for=lambda pod: hints,
            hint_maps=[hints],
            initial_backoff_seconds=qcfg.get("podInitialBackoffSeconds", 1),
            max_backoff_seconds=qcfg.get("podMaxBackoffSeconds", 10),
            max_in_unschedulable_seconds=qcfg.get("podMaxInUnschedulablePodsSeconds", 300),
            pop_from_backoff_q=gates.get("SchedulerPopFromBackoffQ", True),
        )
        self.queue.nominator.accepts = lambda pod: pod.key in cluster and not cluster[pod.key].node_name

    def hint_registrations(self) -> dict[str, list[ClusterEventWithHint]]:
        """Real plugins' event registrations beside the case's hints (none here)."""
        return {}

    def pre_enqueue(self, case_plugins: Callable[[Pod], Status] | None) -> Callable[[Pod], Status] | None:
        """The queue's PreEnqueue: the case's plugins (a subclass may add real ones)."""
        return case_plugins

    # --- names ------------------------------------------------------------------------------------

    @property
    def now(self) -> float:
        # Seconds since T0: small floats keep nanosecond precision.
        return (self.now_ns - self.t0_ns) / 1e9

    def pod(self, alias: str) -> Pod:
        if alias.startswith("$"):
            return self.vars[alias[1:]]
        pods = self.case.get("pods") or {}
        if alias not in pods:
            raise QueueCaseError(f"no pod alias {alias!r}")
        return Pod(pods[alias])

    def name(self, ref: str) -> str:
        if ref.startswith("$"):
            v = self.vars[ref[1:]]
            return v.key if isinstance(v, Pod) else str(v)
        return ref if "/" in ref else f"default/{ref}"

    # --- steps ------------------------------------------------------------------------------------

    def run(self) -> dict[str, Any]:
        """What the queue held: at each step that has an expectation (a pop: what it
        popped; a check: the whole state), at the end, and the variables bound on
        the way. Nothing here reads an expectation; queue_compare.py compares."""
        observed: dict[str, Any] = {}
        for i, step in enumerate(self.case.get("steps") or []):
            popped = self.step(i, step)
            if step.get("expect"):
                observed[str(i)] = popped if step["op"] == "pop" else self.state()
        names = {k: (v.key if isinstance(v, Pod) else v) for k, v in self.vars.items()}
        return {"final": self.state(), "steps": observed, "vars": names}

    def step(self, i: int, s: dict[str, Any]) -> dict[str, Any] | None:
        """Run one step; a pop returns what it popped."""
        q, op = self.queue, s["op"]
        where = f"steps[{i}] ({op})"
        if op == "add":
            pod = self.pod(s["pod"])
            self.last_object[pod.key] = pod
            q.add(pod, self.now)
        elif op == "pop":
            qpi = q.pop()
            if qpi is not None:
                self.popped[qpi.pod.key] = qpi
                if s.get("saveAs"):
                    self.vars[s["saveAs"]] = qpi.pod
            return popped_info(qpi)
        elif op == "requeue":
            self.requeue(s)
        elif op == "event":
            accepts = s.get("preCheckAccepts")
            pre = None if accepts is None else (lambda p, ok={self.name(a) for a in accepts}: p.key in ok)
            q.move_all_to_active_or_backoff(parse_event(s["event"]), None, None, self.now, pre)
        elif op == "update":
            old, new = self.pod(s["old"]), self.pod(s["new"])
            self.last_object[new.key] = new
            q.update(old, new, self.now)
        elif op == "delete":
            q.delete(self.pod(s["pod"]))
        elif op == "activate":
            q.activate([self.pod(a) for a in s["pods"]], self.now)
        elif op == "assignedPodAdded":
            pod = self.pod(s["pod"])
            q.move_all_to_active_or_backoff(parse_event("AssignedPod/Add"), None, pod, self.now,
                                            cross_topology_only=True)
        elif op == "assignedPodUpdated":
            old = self.pod(s["old"]) if s.get("old") else None
            new = self.pod(s["new"])
            ev = parse_event(s["event"])
            q.move_all_to_active_or_backoff(ev, old, new, self.now,
                                            cross_topology_only=not ev.action & ActionType.UpdatePodScaleDown)
        elif op == "nominate":
            pod = self.pod(s["pod"])
            node = s.get("node")
            q.nominator.add(pod, node if node is not None else pod.nominated_node_name)
        elif op == "deleteNominated":
            q.nominator.delete(self.pod(s["pod"]))
        elif op == "advance":
            self.now_ns += int(round(s["seconds"] * 1e9))
        elif op == "flushBackoffQ":
            q.flush_backoff_completed(self.now)
        elif op == "flushUnschedulable":
            q.flush_unschedulable_leftover(self.now)
        elif op == "saveCycle":
            self.vars[s["as"]] = q.scheduling_cycle
        elif op != "check":
            raise QueueCaseError(f"{where}: unknown op")
        return None

    def requeue(self, s: dict[str, Any]) -> None:
        pod = self.pod(s["pod"])
        if s.get("from") == "popped":
            qpi = self.popped.get(pod.key)
            if qpi is None:
                raise QueueCaseError(f"requeue: {pod.key} was never popped")
        else:
            qpi = QueuedPodInfo(pod=pod, attempts=s.get("attempts", 0))
            self.last_object[pod.key] = pod
        if "unschedulablePlugins" in s:
            qpi.unschedulable_plugins = set(s["unschedulablePlugins"])
        if "pendingPlugins" in s:
            qpi.pending_plugins = set(s["pendingPlugins"])
        if s.get("gatedBy"):
            qpi.gated, qpi.gating_plugin = True, s["gatedBy"]
        self.queue.add_unschedulable_if_not_present(handed_over(qpi), self.now)

    # --- observation --------------------------------------------------------------------------------

    def state(self) -> dict[str, Any]:
        """Everything a check key can ask about, as the queue holds it now."""
        q = self.queue
        active = sorted(x.pod.key for x in q.active_q.values())
        backoff = sorted({x.pod.key for x in q.backoff_q.values()} | {x.pod.key for x in q.error_backoff_q.values()})
        unschedulable = sorted(q.unschedulable)
        nominated = {n: [pi.pod.key for pi in q.nominator.pods_for_node(n)] for n in q.nominator.nodes()}
        known = {**self.popped, **{k: qpi for k in (*active, *backoff, *unschedulable) if (qpi := q.get(k))}}
        return {
            "activeQ": active, "backoffQ": backoff, "unschedulable": unschedulable,
            "gated": sorted(k for k, x in q.unschedulable.items() if x.gated),
            "inFlight": sorted(q.in_flight), "inFlightEvents": self.in_flight_events(),
            "counts": {"active": len(q.active_q), "backoff": len(q.backoff_q) + len(q.error_backoff_q),
                       "unschedulableTotal": len(q.unschedulable)},
            "nominated": {n: v for n, v in nominated.items() if v},
            "pendingPods": sorted({*active, *backoff, *unschedulable}),
            "heldObjects": {k: dict(q.get(k).pod.raw) for k in (*active, *backoff, *unschedulable)},  # type: ignore[union-attr]
            "lastGivenObjects": {k: dict(p.raw) for k, p in self.last_object.items()},
            "backoffSeconds": {k: backoff_duration_ns(qpi.attempts, q.initial_backoff_ns, q.max_backoff_ns) / 1e9
                               for k, qpi in known.items()},
        }

    def in_flight_events(self) -> list[str]:
        q = self.queue
        entries: list[tuple[int, int, str]] = []
        for key, seq in q.in_flight.items():
            entries.append((seq, 1, f"pod:{key}"))  # after the events recorded before its pop
        for seq, event in q.recorded_events():
            label = event.label or f"{event.resource}/{event.action.name}"
            entries.append((seq, 0, f"event:{label}"))
        entries.sort(key=lambda e: (e[0], e[1]))
        return [e[2] for e in entries]


def popped_info(qpi: QueuedPodInfo | None) -> dict[str, Any]:
    """What one Pop returned (the queue's clock starts at T0)."""
    if qpi is None:
        return {"pod": None}
    at = qpi.initial_attempt_timestamp
    return {"pod": qpi.pod.key, "attempts": qpi.attempts, "gated": qpi.gated,
            "unschedulablePlugins": sorted(qpi.unschedulable_plugins), "pendingPlugins": sorted(qpi.pending_plugins),
            "initialAttemptAt": None if at is None else at / 1e9}


def run_queue_case(case: dict[str, Any]) -> dict[str, Any]:
    if case.get("function") == "isPodWorthRequeuing":
        return run_is_pod_worth_requeuing(case)
    return QueueRun(case).run()


def run_is_pod_worth_requeuing(case: dict[str, Any]) -> dict[str, Any]:
    inp = case["input"]
    counter = HintCounter()
    hints = hint_map(inp.get("queueingHints") or [], counter)
    q = SchedulingQueue(less=PrioritySort().less, hints_for=lambda pod: hints, hint_maps=[hints])
    info = inp["podInfo"]
    qpi = QueuedPodInfo(pod=Pod(info["pod"]), unschedulable_plugins=set(info.get("unschedulablePlugins") or []),
                        pending_plugins=set(info.get("pendingPlugins") or []))
    old = Pod(inp["oldObj"]) if isinstance(inp.get("oldObj"), dict) and inp["oldObj"].get("spec") is not None else inp.get("oldObj")
    new = Pod(inp["newObj"]) if isinstance(inp.get("newObj"), dict) and inp["newObj"].get("spec") is not None else inp.get("newObj")
    strategy = q.worth_requeuing(qpi, parse_event(inp["event"]), old, new)
    return {"strategy": STRATEGY_NAMES[strategy], "hintCalls": counter.calls}

