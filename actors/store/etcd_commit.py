"""EtcdCommit: the etcd store's part of the one turn loop (actors/store/turns.py),
one of SharedStore's duties. A group of writes, applied in memory first (so each
write sees the ones before it and the checks run as usual), is written as one etcd
transaction that compares every key on the revision it was based on; on success
the in-memory changes are undone and the store catches up through the feed to the
transaction's revision before it answers. On a stale key the store catches up and
runs the group again. A group ends where etcd's limits demand it, only at request
boundaries. A binding is fenced on the leader's election key.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Callable, Protocol

from actors.pacing import Pacer
from actors.store.etcd import EtcdBackend, FenceLost, Guarded, RequestTooLarge, StaleWrite, encode
from actors.store.etcd_errors import store_error
from actors.store.messages import Conflict, TooLarge
from actors.store.turns import TurnRecord, answer, before_batch, failed_all



class EtcdHost(Protocol):
    """What EtcdCommit uses of the SharedStore (shared.py) that holds it: its feed,
    fence state, undo log and counters."""

    commits: int
    retries: int
    _committing: Any
    _events: Any
    _feed: Any
    _fence_lost: bool
    _loop: Any
    _rollback: Callable[..., Any]

log = logging.getLogger("ksched.store.shared")

MAX_ATTEMPTS = 8  # a group is retried this often when other daemons keep writing the same keys


@dataclass(frozen=True, slots=True, kw_only=True)
class Observed:
    """The follower has changes queued: apply them (no reply)."""


class EtcdCommit:
    def __init__(self, store: EtcdHost, etcd: EtcdBackend) -> None:
        self._s = store  # the SharedStore (shared.py): its feed, undo log and counters
        self.etcd = etcd
        self.fenced: set[str] = set()  # Pod keys bound in the group being built
        self._group_ops = self._group_bytes = 0  # the group's etcd operations and bytes so far (fits)

    async def before_turn(self, msgs: list[Any]) -> list[Any]:
        """Catch up with etcd before a turn with requests (a turn of feed pokes only drains)."""
        requests = [m for m in msgs if not isinstance(m, Observed)]
        if requests:
            await self._s._feed.sync()
        else:
            self._s._feed.drain()
        return requests

    def new_group(self) -> TurnRecord:
        self.fenced.clear()
        self._group_ops = self._group_bytes = 0
        self._s._events.take_recorded()
        return TurnRecord()

    def overlap(self) -> float | None:
        """None: `finish_group` has already awaited its transaction (nothing in flight)."""
        return None

    async def settle(self, pacer: Pacer) -> None:
        return None

    def fits(self, batch: TurnRecord, mark: tuple[int, int, int, int]) -> bool:
        """Whether the group, with the writes made since `mark`, fits in one etcd transaction."""
        added = batch.writes[mark[1]:]
        if not added:
            return True
        self._group_ops += len(added)
        self._group_bytes += sum(_size(w.raw) for w in added)
        return self.etcd.within_limits(self._group_ops, self._group_bytes)

    async def finish_group(self, group: list[Any], batch: TurnRecord, pacer: Pacer) -> None:
        """Write one group as one transaction and answer its requests; `batch` is the
        group already applied in memory (it is applied again after a stale key).
        Memory, the history and the watchers follow from the feed, not from `batch`."""
        for attempt in range(MAX_ATTEMPTS):
            if attempt:
                batch = await self._apply_all(group)
            if not batch.writes:
                return answer(batch.replies)
            self._s._committing = before_batch(batch)  # committed reads see the state before this group
            try:
                revision = await self.etcd.transact(self._guarded(batch))
            except StaleWrite as e:
                self._s._rollback(batch)
                self._s.retries += 1
                await self._s._feed.catch_up(e.revision)
                continue
            except FenceLost as e:
                self._s._rollback(batch)
                log.warning("binding refused: %s; this store binds no more", e)
                self._s._fence_lost = True  # the group runs again: its bindings are refused (and counted) in _bind
                continue
            except RequestTooLarge as e:
                self._s._rollback(batch)
                return answer(failed_all(batch.replies, TooLarge(str(e))))
            except Exception as e:  # noqa: BLE001 - any etcd failure fails the whole group
                self._s._rollback(batch)  # Unavailable when etcd could not answer (etcd_errors)
                return answer(failed_all(batch.replies, store_error(e, "store commit failed")))
            finally:
                self._s._committing = None
            self._s.commits += 1
            # Memory goes back to what etcd has told us so far; the feed brings the rest, ours included.
            self._s._rollback(batch)
            for w in batch.writes:
                if w.raw is not None:
                    w.raw["metadata"]["resourceVersion"] = str(revision)
            await self._s._feed.catch_up(revision)
            return answer(batch.replies)
        answer(failed_all(batch.replies, Conflict("too many concurrent writers to the same objects; try again")))

    async def _apply_all(self, msgs: list[Any]) -> TurnRecord:
        batch = self.new_group()
        for msg in msgs:
            batch.replies.append((getattr(msg, "reply", None), await self._s._loop.apply_message(msg, batch, None)))
        return batch

    def _guarded(self, batch: TurnRecord) -> list[Guarded]:
        """One change per key (the last), compared on the revision the group started from."""
        base: dict[tuple[str, str], int] = {}
        for kind, key, old in batch.undo:
            base.setdefault((kind, key), int(old.meta.resource_version or 0) if old is not None else 0)
        last = {(w.kind, w.key): w for w in batch.writes}
        return [Guarded(write=w, expected_revision=base.get(k, 0), fenced=w.kind == "Pod" and w.key in self.fenced)
                for k, w in last.items()]


def _size(raw: dict[str, Any] | None) -> int:
    return len(encode(raw)) if raw is not None else 0
