"""The unschedulable pool (upstream's unschedulablePods), with what the queue asks
of it often kept as entries come and go instead of by walking it.

- the number of gated entries (pending_counts, published after every message);
- the oldest timestamp among the entries not gated (the 5-minute leftover timer),
  from a heap with stale entries dropped lazily;
- the entries a cluster event can move: every entry except those gated by
  SchedulingGates, which only their own gate removal (or the leftover timeout)
  moves, so thousands of gated pods cost a Move nothing.

Entries rejected by plugins may be grouped into equivalence classes
(pod_classes.py; `class_key` says which, None: none): a class is offered to
events through its first member only, and a member leaving the pool takes its
share of the class's failures.

An entry's gated flag is read once, when it is put; the queue changes a pod's
gating only while it is out of the pool (it pops, re-runs PreEnqueue, puts back).
Every operation here is O(1) or O(log n) in the pool's size, amortised, except
the ones that hand back many entries (items, values, movable, take_expired),
which are proportional to what they hand back.
"""
from __future__ import annotations

import bisect
import heapq
import itertools
from typing import Any, Callable, Hashable, Iterable, Iterator

from actors.queue.hint_index import HintIndex
from actors.queue.interest import HintMap
from actors.queue.pod_classes import ClassIndex
from framework.api.objects import Pod
from framework.interface import ClusterEvent, QueuedPodInfo

SCHEDULING_GATES = "SchedulingGates"


class UnschedulablePool:
    """Pods rejected by plugins, and pods PreEnqueue holds back (gated)."""

    def __init__(self, class_key: Callable[[QueuedPodInfo], Hashable | None] | None = None,
                 backoff_of: Callable[[int], int] = lambda attempts: attempts,
                 less: Callable[[QueuedPodInfo, QueuedPodInfo], bool] | None = None,
                 hints: tuple[Callable[[Pod], HintMap], Iterable[HintMap]] | None = None) -> None:
        self._class_key = class_key
        self.classes = ClassIndex(backoff_of, less)
        self._entries: dict[str, QueuedPodInfo] = {}
        self._seq_of: dict[str, int] = {}  # key -> when put (insertion order)
        self._gated: set[str] = set()
        self._movable: dict[str, QueuedPodInfo] = {}  # not gated by SchedulingGates nor in a class, in put order
        self._timeouts: list[tuple[int, int, str]] = []  # (timestamp, seq, key) of entries not gated
        self._seq = itertools.count(1)
        # The plain entries filed by what events can move them (hint_index.py; from the
        # queue's hint maps); None: every plain entry is offered every event.
        self.hint_index: HintIndex | None = HintIndex(*hints) if hints is not None else None

    # --- size and lookup -------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def get(self, key: str) -> QueuedPodInfo | None:
        return self._entries.get(key)

    def is_gated(self, key: str) -> bool:
        return key in self._gated

    @property
    def gated_count(self) -> int:
        return len(self._gated)

    def items(self) -> list[tuple[str, QueuedPodInfo]]:
        return list(self._entries.items())

    def values(self) -> list[QueuedPodInfo]:
        return list(self._entries.values())

    # --- entries coming and going ----------------------------------------------------------------

    def put(self, qpi: QueuedPodInfo) -> None:
        """Add (or replace) the entry for qpi's pod, as the newest one."""
        key = qpi.pod.key
        self.pop(key)
        seq = next(self._seq)
        self._entries[key] = qpi
        self._seq_of[key] = seq
        if qpi.gated:
            self._gated.add(key)
        else:
            heapq.heappush(self._timeouts, (qpi.timestamp, seq, key))
        class_key = self._class_key(qpi) if self._class_key is not None and not qpi.gated else None
        if class_key is not None:
            self.classes.join(key, class_key, seq, qpi.attempts)
        elif not (qpi.gated and qpi.gating_plugin == SCHEDULING_GATES):
            self._movable[key] = qpi
            if self.hint_index is not None:
                self.hint_index.add(key, qpi)

    def pop(self, key: str, default: QueuedPodInfo | None = None, upto: int | None = None) -> QueuedPodInfo | None:
        """Remove the entry; a class member takes its share of its class's
        failures (up to round `upto`, if given)."""
        qpi = self._entries.pop(key, None)
        if qpi is None:
            return default
        del self._seq_of[key]
        self._gated.discard(key)
        if self._movable.pop(key, None) is not None and self.hint_index is not None:
            self.hint_index.discard(key)
        share = self.classes.leave(key, qpi, upto)
        if share is not None:
            share.apply(qpi)
        # Its timeout entry goes stale; dropped when it reaches the top or on compaction.
        if len(self._timeouts) > 64 and len(self._timeouts) > 2 * (len(self._entries) - len(self._gated)):
            self._compact()
        return qpi

    # --- what timers and events ask --------------------------------------------------------------

    def oldest_ungated_timestamp(self) -> int | None:
        """The smallest timestamp among entries not gated (None: there are none)."""
        top = self._live_top()
        return top[0] if top is not None else None

    def take_expired(self, before_ns: int) -> list[QueuedPodInfo]:
        """Remove and return the entries not gated whose timestamp is before
        `before_ns`, oldest first (ties: the earlier put first)."""
        out: list[QueuedPodInfo] = []
        while True:
            top = self._live_top()
            if top is None or top[0] >= before_ns:
                return out
            heapq.heappop(self._timeouts)
            share = self.classes.share_of(top[2], self._entries[top[2]])
            if share is not None and share.rounds > 0 and share.timestamp > top[0]:
                # Its class failed since (as it would have): it waits from then.
                heapq.heappush(self._timeouts, (share.timestamp, top[1], top[2]))
                continue
            qpi = self.pop(top[2])
            assert qpi is not None
            out.append(qpi)

    def replace_pod(self, qpi: QueuedPodInfo, pod: Pod) -> None:
        """The entry's pod object changed (an update): filed again by its new keys."""
        qpi.pod = pod
        if self.hint_index is not None and self._movable.get(pod.key) is qpi:
            self.hint_index.add(pod.key, qpi)

    def movable(self, also: str | None = None,
                event: tuple[ClusterEvent, Any, Any] | None = None) -> list[tuple[str, QueuedPodInfo]]:
        """The entries a cluster event is offered to, in put order: every entry not
        gated by SchedulingGates nor in a class (given the `event`, only those the hint
        index names), the first member of every parked class, plus the entry `also`
        whatever its gating or class."""
        if not self._entries:  # nothing to offer (a burst's binds, with every pod placed)
            return []
        only = self.hint_index.candidates(*event) if event is not None and self.hint_index is not None else None
        if only is None:
            out = list(self._movable.items())
        else:
            seqs = self._seq_of
            out = sorted(((k, self._movable[k]) for k in only if k in self._movable), key=lambda kv: seqs[kv[0]])
        firsts = [(k, self._entries[k]) for k in (self.classes.first(c) for c in list(self.classes.parked()))
                  if k is not None]
        if firsts:
            seqs = self._seq_of
            out = sorted(out + firsts, key=lambda kv: seqs[kv[0]])
        if also is not None and also in self._entries and also not in self._movable \
                and not any(k == also for k, _ in firsts):
            seqs = self._seq_of
            seq = seqs[also]
            at = bisect.bisect_left(out, seq, key=lambda kv: seqs[kv[0]])
            out.insert(at, (also, self._entries[also]))
        return out

    # --- internals --------------------------------------------------------------------------------

    def _live_top(self) -> tuple[int, int, str] | None:
        heap = self._timeouts
        while heap:
            ts, seq, key = heap[0]
            if self._seq_of.get(key) == seq:
                return heap[0]
            heapq.heappop(heap)
        return None

    def _compact(self) -> None:
        self._timeouts = [e for e in self._timeouts if self._seq_of.get(e[2]) == e[1]]
        heapq.heapify(self._timeouts)
