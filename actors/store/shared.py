"""SharedStore: the Store actor over a backend other daemons write to (etcd).

What changes from Store (everything else, the write path's checks and the turn
loop with its per-message undo included, is Store's own code; SharedStore holds
two duties of its own: EtcdFeed here and EtcdCommit, the loop's commit duty, in
actors/store/etcd_commit.py):

- Memory follows etcd, not the other way round. A follower task reads the
  backend's change feed (etcd's watch, from the revision the store loaded at) and
  the store applies each change in revision order: memory, the watch history
  and the fan-out to watchers come only from there, so every watcher of every
  daemon sees the same events in the same order, and resourceVersion is etcd's
  mod revision.
- A group of writes is still applied in memory first (so each write sees the
  ones before it and the checks run as usual), then written as one etcd
  transaction that compares every key on the revision it was based on. On
  success the in-memory changes are undone and the store catches up through the
  feed to the transaction's revision before it answers, so a reply's
  resourceVersion is the one any daemon will report. On a stale key the store
  catches up and runs the group again (another daemon wrote first; a client's
  stale resourceVersion then gets its Conflict from the usual check).
- A group is split between transactions where etcd's limits demand it, only at
  request boundaries: one request too large for a transaction is refused, never
  half-applied.
- A binding is fenced on the leader's election key (actors.store.etcd); once the
  fence is lost this store refuses every later binding.
- When etcd has compacted the revision the feed needs, the store relists and
  turns the difference into events; its history restarts, so a client resuming
  from an older resourceVersion gets Expired and relists.
"""
from __future__ import annotations

import asyncio
import collections
import logging
from dataclasses import dataclass
from typing import Any

from actors.store.actor import Store, encoded_size
from actors.store.etcd_commit import EtcdCommit, Observed
from actors.store.turns import TurnRecord
from actors.store.history import DELETE_WEIGHT, PastEvent
from actors.store.backend import LoadedState
from actors.store.etcd import Change, Compacted, EtcdBackend
from actors.store.etcd_errors import Retry
from actors.store.messages import Conflict, WatchEvent
from framework.api.errors import ValidationError
from framework.api.objects import KubeObject, parse_object

log = logging.getLogger("ksched.store.shared")

CATCH_UP_SECONDS = 10.0
FEED_RETRY_SECONDS = (0.1, 2.0)  # the change feed's first and longest pause after an etcd failure


class NotLeader(Conflict):
    """A binding from a daemon that no longer holds the leader lease."""


@dataclass(frozen=True, slots=True)
class _Step:
    """The feed's changes up to one revision."""

    changes: list[Change]
    revision: int


@dataclass(frozen=True, slots=True)
class _Relisted:
    """The feed restarted from a fresh listing (after a compaction)."""

    state: LoadedState


class EtcdFeed:
    """Memory, the watch history and the watchers follow etcd's change feed (one of
    SharedStore's duties): a follower task queues the feed's changes, the store's
    turns apply them in revision order."""

    def __init__(self, store: SharedStore, etcd: EtcdBackend) -> None:
        self._s = store  # the SharedStore: its memory, history, watchers and inbox
        self.etcd = etcd
        self._pending: collections.deque[_Step | _Relisted] = collections.deque()
        self._arrived = asyncio.Event()
        self._revision_reads = Retry(log, "reading etcd's revision", initial=0.0, cap=0.0)

    async def follow(self, after: int) -> None:
        """Feed the store from etcd's watch; a failure (the watch's own breaks are
        resumed inside changes()) is logged once an episode and retried with backoff."""
        retry = Retry(log, "store change feed", initial=FEED_RETRY_SECONDS[0], cap=FEED_RETRY_SECONDS[1])
        while True:
            try:
                async for changes, revision in self.etcd.changes(after):
                    self.queue(_Step(changes, revision))
                    after = revision
                return
            except Compacted as e:
                log.warning("%s; relisting", e)
                try:
                    state = await self.etcd.load_all()
                except Exception as e:  # noqa: BLE001 - changes() says Compacted again: relist again
                    await asyncio.sleep(retry.failed(e))
                    continue
                retry.succeeded()
                self.queue(_Relisted(state))
                after = state.resource_version
            except asyncio.CancelledError:
                raise
            except Exception as e:  # noqa: BLE001 - every failure is retried (etcd_errors.Retry logs it)
                await asyncio.sleep(retry.failed(e))

    def queue(self, item: _Step | _Relisted) -> None:
        poke = not self._pending
        self._pending.append(item)
        self._arrived.set()
        if poke and not self._s.inbox.closed:
            self._s.tell(Observed())

    def drain(self) -> None:
        while self._pending:
            item = self._pending.popleft()
            if isinstance(item, _Relisted):
                self.relist(item.state)
            else:
                for change in item.changes:
                    self.observe(change)
                self._s._rv = self._s._committed_rv = max(self._s._rv, item.revision)
        self._arrived.clear()

    def observe(self, c: Change) -> None:
        objs = self._s._objects[c.kind]
        current = objs.get(c.key)
        ev: WatchEvent | None = None
        size = DELETE_WEIGHT
        if c.raw is None:
            if current is not None:
                del objs[c.key]
                self._s._sorted_keys.pop(c.kind, None)
                ev = WatchEvent("DELETED", c.kind, current, current, c.revision)
        else:
            obj = _parse(c.raw)
            if obj is not None:
                objs[c.key] = obj
                if current is None:
                    self._s._sorted_keys.pop(c.kind, None)
                ev = WatchEvent("ADDED" if current is None else "MODIFIED", c.kind, obj, current, c.revision)
                size = encoded_size(c.raw)
        self._s._rv = self._s._committed_rv = max(self._s._rv, c.revision)
        if ev is not None:
            self._s._history.append(PastEvent.of(ev), size)
            self._s._fan_out(ev)

    def relist(self, state: LoadedState) -> None:
        fresh: dict[tuple[str, str], KubeObject] = {}
        for raw in state.objects:
            obj = _parse(raw)
            if obj is not None:
                fresh[(obj.kind, obj.key)] = obj
        events = []
        for kind, objs in self._s._objects.items():
            for key, old in list(objs.items()):
                if (kind, key) not in fresh:
                    del objs[key]
                    events.append(WatchEvent("DELETED", kind, old, old, state.resource_version))
        for (kind, key), obj in fresh.items():
            old = self._s._objects[kind].get(key)
            if old is None or old.meta.resource_version != obj.meta.resource_version:
                self._s._objects[kind][key] = obj
                events.append(WatchEvent("ADDED" if old is None else "MODIFIED", kind, obj, old,
                                         state.resource_version))
        self._s._rv = self._s._committed_rv = state.resource_version
        self._s._sorted_keys.clear()
        self._s._history.reset(self._s._rv)  # resuming from before the relist cannot be answered exactly: Expired
        for ev in events:
            self._s._fan_out(ev)

    async def sync(self) -> None:
        """Catch up to etcd's revision now, so a request sees every write any daemon
        acknowledged before it arrived (kube-apiserver's consistent reads)."""
        try:
            revision = await self.etcd.current_revision()
        except Exception as e:  # noqa: BLE001 - the write itself will fail and say why
            self._revision_reads.failed(e)  # logged once an episode; the next request tries again
            self.drain()
            return
        self._revision_reads.succeeded()
        await self.catch_up(revision)

    async def catch_up(self, revision: int) -> bool:
        """Apply the feed until it reaches `revision`; False if it did not in time."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + CATCH_UP_SECONDS
        self.drain()
        while self._s._rv < revision:
            try:
                await asyncio.wait_for(self._arrived.wait(), max(0.0, deadline - loop.time()))
            except TimeoutError:
                log.warning("store feed did not reach revision %d within %.0fs", revision, CATCH_UP_SECONDS)
                return False
            self.drain()
        return True


class SharedStore(Store):
    name = "store"

    def __init__(self, backend: EtcdBackend, **kwargs: Any) -> None:
        super().__init__(backend, **kwargs)
        self.etcd: EtcdBackend = backend
        self._feed = EtcdFeed(self, backend)  # memory follows etcd's change feed
        self._fence_lost = False
        self._commit = EtcdCommit(self, backend)  # one etcd transaction a group (actors.store.etcd_commit)
        self.retries = 0  # groups run again after a stale key, for stats and tests
        self.fence_refusals = 0  # bindings refused because this daemon could not prove it leads (_bind)

    # --- the change feed ------------------------------------------------------------------------

    async def run(self) -> None:
        async with asyncio.TaskGroup() as tg:
            follower = tg.create_task(self._feed.follow(self._rv), name="ksched-store-follower")
            try:
                await super().run()
            finally:
                follower.cancel()

    def _bind(self, ns: str, name: str, node: str, uid: str, batch: TurnRecord) -> KubeObject:
        if self._fence_lost:
            self.fence_refusals += 1
            raise NotLeader(f'binding pod "{ns}/{name}": this daemon is no longer the leader')
        obj = super()._bind(ns, name, node, uid, batch)
        self._commit.fenced.add(obj.key)
        return obj


def _parse(raw: dict[str, Any]) -> KubeObject | None:
    try:
        return parse_object(raw)
    except ValidationError as e:
        log.warning("skipping an object etcd holds that does not parse: %s", e)
        return None

