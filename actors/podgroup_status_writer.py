"""PodGroup status, kept by the daemon (upstream has a separate controller,
scheduler-plugins pkg/controllers/podgroup_controller.go).

`compute_status` is pure: from a PodGroup, the pods that carry its label and the
members waiting at Permit, it gives status.phase (Pending, Scheduling, Running,
Finished, Failed), the member counts, scheduleStartTime and one condition that
says why the group waits ("3/4 members reserved, waiting for quorum, 41s left",
"rejected: member p-2: 0/8 nodes are available: ...").

`PodGroupStatusWriter` is the actor that keeps it written: its store watch posts
each Pod and PodGroup change to its inbox; a turn marks the groups they touch
dirty, recomputes each and writes the status back only when it changed.
"""
from __future__ import annotations

import asyncio
import math
import time
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Iterable, Mapping, Sequence, Union, assert_never

from actors.base import Actor, MailboxClosed, resolve
from actors.waiting_room import WaitingSnapshot
from actors.store import Conflict, StoreError
from framework.api.objects import POD_GROUP_LABEL, Pod, PodGroup
from framework.api.timeutil import format_time

WaitingSource = Callable[[], Awaitable[Sequence[WaitingSnapshot]]]
PENDING, SCHEDULING, RUNNING, FINISHED, FAILED = "Pending", "Scheduling", "Running", "Finished", "Failed"
TERMINAL = (FINISHED, FAILED)
CONDITION_TYPE = "GangScheduled"


def _unschedulable_message(pod: Pod) -> str | None:
    for c in pod.conditions:
        if isinstance(c, Mapping) and c.get("type") == "PodScheduled" and c.get("status") == "False":
            return str(c.get("message") or c.get("reason") or "unschedulable")
    return None


def _phase(prev: str, min_member: int, total: int, running: int, succeeded: int, failed: int) -> str:
    if prev in TERMINAL:
        return prev
    if min_member > 0 and succeeded >= min_member:
        return FINISHED
    if failed and failed + running + succeeded >= min_member:
        return FAILED
    if total < min_member:
        return PENDING
    if running + succeeded >= min_member:
        return RUNNING
    return SCHEDULING


def concerns_groups(ev: Any) -> bool:
    """Whether a store event can change a PodGroup's status: a PodGroup's own, or a
    pod's that carries (or carried) a group label. The watch tells the writer only
    these, so the steady state's pods without a group cost it no message."""
    if ev.kind != "Pod":
        return True
    old = getattr(ev, "old", None)
    return bool(ev.obj.labels.get(POD_GROUP_LABEL) or (old is not None and old.labels.get(POD_GROUP_LABEL)))


def compute_status(pg: PodGroup, pods: Iterable[Pod], now: float,
                   waiting: Mapping[str, float] | None = None) -> dict[str, Any]:
    """The status `pg` should have. `pods`: every pod of its namespace carrying
    its label (others are ignored); `waiting`: pod key -> seconds left before the
    Permit timeout of members held at Permit; `now`: wall time (seconds), used
    for scheduleStartTime."""
    members = sorted((p for p in pods if p.namespace == pg.namespace and p.labels.get(POD_GROUP_LABEL) == pg.name),
                     key=lambda p: p.name)
    waiting = {k: d for k, d in (waiting or {}).items() if any(p.key == k for p in members)}
    prev = dict(pg.status or {})
    succeeded = sum(1 for p in members if p.phase == "Succeeded")
    failed = sum(1 for p in members if p.phase == "Failed")
    running = sum(1 for p in members if p.node_name and not p.is_terminal)
    scheduled = sum(1 for p in members if p.node_name)
    mm = pg.min_member
    phase = _phase(str(prev.get("phase") or ""), mm, len(members), running, succeeded, failed)
    status: dict[str, Any] = {
        "phase": phase,
        "scheduled": scheduled,
        "running": running,
        "succeeded": succeeded,
        "failed": failed,
    }
    start = prev.get("scheduleStartTime")
    if start is None and phase != PENDING:
        start = format_time(int(now * 1_000_000_000))
    if start is not None:
        status["scheduleStartTime"] = start
    owners = _occupied_by(members)
    if owners:
        status["occupiedBy"] = owners
    status["conditions"] = [_condition(phase, mm, members, running, succeeded, waiting, now)]
    return status


def _occupied_by(members: list[Pod]) -> str:
    if not members:
        return ""
    refs = members[0].meta.owner_references
    return ",".join(f"{members[0].namespace}/{r.get('name')}" for r in refs if isinstance(r, Mapping) and r.get("name"))


def _condition(phase: str, mm: int, members: list[Pod], running: int, succeeded: int,
               waiting: Mapping[str, float], now: float) -> dict[str, str]:
    if phase in (RUNNING, FINISHED):
        return {"type": CONDITION_TYPE, "status": "True", "reason": "QuorumReached",
                "message": f"{running + succeeded}/{mm} members bound"}
    if phase == FAILED:
        return {"type": CONDITION_TYPE, "status": "False", "reason": "Failed",
                "message": f"{sum(1 for p in members if p.phase == 'Failed')} members failed"}
    if phase == PENDING:
        n = len(members)
        return {"type": CONDITION_TYPE, "status": "False", "reason": "WaitingForMembers",
                "message": f"{n}/{mm} members exist, waiting for {mm - n} more"}
    if waiting:
        reserved = len(waiting) + running
        left = max(0, math.ceil(min(waiting.values())))
        return {"type": CONDITION_TYPE, "status": "False", "reason": "WaitingForQuorum",
                "message": f"{reserved}/{mm} members reserved, waiting for quorum, {left}s left"}
    for p in members:
        if p.node_name or p.is_terminal:
            continue
        msg = _unschedulable_message(p)
        if msg is not None:
            return {"type": CONDITION_TYPE, "status": "False", "reason": "Unschedulable",
                    "message": f"rejected: member {p.name}: {msg}"}
    return {"type": CONDITION_TYPE, "status": "False", "reason": "Scheduling",
            "message": f"{running}/{mm} members bound, scheduling the others"}


# --- the writer --------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Observed:
    """A store watch event on a Pod or PodGroup."""

    ev: Any


@dataclass(frozen=True, slots=True)
class Touch:
    """Recompute a group now (e.g. a member started or stopped waiting at Permit)."""

    namespace: str
    name: str


@dataclass(frozen=True, slots=True)
class Tick:
    """Refresh the groups with members waiting at Permit (their countdown)."""


@dataclass(frozen=True, slots=True)
class Flush:
    """Write every dirty group now; the reply comes when done."""

    reply: asyncio.Future[None]


WriterMsg = Union[Observed, Touch, Tick, Flush]


class PodGroupStatusWriter(Actor[WriterMsg]):
    """Keeps PodGroup status written through the store.

    An actor: its store watch posts Observed messages (the store's loop never
    touches its state); each turn takes every queued message, then writes the
    groups they made dirty, once each. Wiring (actors/pipeline.py):
        writer = await PodGroupStatusWriter.attach(client, lambda: list_waiting(room_ref), clock.now)
        task_group.create_task(writer.run())   # writer.close() to stop, before the store
    `waiting` asks the waiting room who waits at Permit (snapshots whose
    deadlines are on `clock`); `wall_clock` stamps scheduleStartTime.
    """

    name = "podgroup-status"
    batched = True

    def __init__(self, store: Any, waiting: WaitingSource | None = None,
                 clock: Callable[[], float] | None = None, wall_clock: Callable[[], float] | None = None) -> None:
        super().__init__()
        self.store = store
        self._waiting = waiting
        self._left: dict[str, float] = {}
        self.clock = clock or time.monotonic
        self.wall_clock = wall_clock or time.time
        self.dirty: set[tuple[str, str]] = set()
        self._waiting_counts: dict[tuple[str, str], int] = {}
        # group -> member pods, kept from the watch so a recompute lists nothing.
        self._members: dict[tuple[str, str], dict[str, Pod]] = {}
        self.writes = 0

    @classmethod
    async def attach(cls, client: Any, waiting: WaitingSource | None = None,
                     clock: Callable[[], float] | None = None) -> "PodGroupStatusWriter":
        """A writer watching the store's pods and PodGroups (existing ones included)."""
        writer = cls(client, waiting, clock)
        ref = writer.ref()
        await client.watch(lambda ev: concerns_groups(ev) and ref.try_tell(Observed(ev)),
                           kinds=frozenset({"Pod", "PodGroup"}))
        return writer

    def touch(self, namespace: str, name: str) -> None:
        self.ref().try_tell(Touch(namespace, name))

    def close(self) -> None:
        self.inbox.close(drain=True)

    async def run(self, tick_seconds: float | None = 1.0) -> None:  # type: ignore[override]
        """Handle messages; every `tick_seconds` of real time also post a Tick."""
        ticker = asyncio.create_task(self._tick(tick_seconds)) if tick_seconds is not None else None
        try:
            await super().run()
        finally:
            if ticker is not None:
                ticker.cancel()

    async def _tick(self, seconds: float) -> None:
        ref = self.ref()
        while ref.try_tell(Tick()):
            await asyncio.sleep(seconds)

    def idle(self) -> bool:
        """No message queued, no group waiting to be recomputed, no write under way."""
        return super().idle() and not self.dirty

    async def handle_turn(self, msgs: list[WriterMsg]) -> None:
        replies = []
        for msg in msgs:
            match msg:
                case Observed(ev=ev):
                    self._observe(ev)
                case Touch(namespace=ns, name=name):
                    self.dirty.add((ns, name))
                case Tick():
                    self._waiting_counts = {}  # every waiting group is recomputed
                case Flush(reply=reply):
                    replies.append(reply)
                case _:
                    assert_never(msg)
        try:
            await self._write_dirty()
        finally:
            for reply in replies:
                resolve(reply)

    async def flush(self) -> None:
        """For a writer that is not running (tests): handle what is queued, then write."""
        await self.handle_turn(self.inbox.get_nowait_all())

    def _observe(self, ev: Any) -> None:
        """Mark the group a store event touches, and keep its members."""
        obj = ev.obj
        if ev.kind == "PodGroup":
            self.dirty.add((obj.namespace, obj.name))
        elif ev.kind == "Pod":
            old = getattr(ev, "old", None)
            if old is not None and old.labels.get(POD_GROUP_LABEL):
                key = (old.namespace, old.labels[POD_GROUP_LABEL])
                self._members.get(key, {}).pop(old.key, None)
                self.dirty.add(key)
            label = obj.labels.get(POD_GROUP_LABEL)
            if label:
                key = (obj.namespace, label)
                if ev.type == "DELETED":
                    self._members.get(key, {}).pop(obj.key, None)
                else:
                    self._members.setdefault(key, {})[obj.key] = obj
                self.dirty.add(key)

    def _mark_waiting_changes(self, waiting: Sequence[WaitingSnapshot]) -> None:
        # Waits at Permit leave no trace in the store: a group whose number of
        # waiting members changed since the last turn is recomputed too.
        counts: dict[tuple[str, str], int] = {}
        for wp in waiting:
            label = wp.pod.labels.get(POD_GROUP_LABEL)
            if label:
                key = (wp.pod.namespace, label)
                counts[key] = counts.get(key, 0) + 1
        for key in set(counts) | set(self._waiting_counts):
            if counts.get(key) != self._waiting_counts.get(key):
                self.dirty.add(key)
        self._waiting_counts = counts

    async def _write_dirty(self) -> None:
        if not (self.dirty or self._members or self._waiting_counts):
            return  # no group known: no member can be waiting at Permit, nothing to ask or write
        try:
            waiting = await self._waiting() if self._waiting is not None else ()
        except MailboxClosed:
            return  # the waiting room is stopping
        now = self.clock()
        self._left = {w.pod.key: w.deadline - now for w in waiting}
        self._mark_waiting_changes(waiting)
        while self.dirty:
            ns, name = self.dirty.pop()
            try:
                await self._write_one(ns, name)
            except Conflict:
                self.dirty.add((ns, name))  # someone wrote in between: recompute from theirs
            except StoreError:
                continue  # the group went away; nothing to keep
            except MailboxClosed:
                self.dirty.clear()
                return  # the store is stopping
        # Drained: clear() gives the set its smallest table again. pop() leaves the table a
        # burst grew it to, and each later pop() scans it from where the last one stopped.
        self.dirty.clear()

    async def _write_one(self, ns: str, name: str) -> None:
        raw = await self.store.get("PodGroup", ns, name)
        pg = PodGroup(raw)
        pods = list(self._members.get((ns, name), {}).values())
        status = compute_status(pg, pods, self.wall_clock(), self._left)
        if status == dict(raw.get("status") or {}):
            return
        await self.store.update({**raw, "status": status})
        self.writes += 1
