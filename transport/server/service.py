"""What the msgpack server needs from the running system: the Service protocol,
and StoreService, its implementation over the Store actor and the scheduler.

Errors leave here as wire.ApiError (reason + message); the server turns them into
error replies. Every method may be called concurrently from many connections.
"""
from __future__ import annotations

from typing import Any, Awaitable, Callable, Protocol

from transport.protocol.wire import ApiError, Reason

# sink(event_type, kind, object, resourceVersion): called on the event loop, must not block.
EventSink = Callable[[str, str, dict[str, Any], int], None]
# As EventSink, with the store's parsed object (framework.api.objects.KubeObject) instead
# of a copy of its manifest. Stored objects are never changed in place: read, never modify.
ObjectSink = Callable[[str, str, Any, int], None]


class Service(Protocol):
    def ready(self) -> bool:
        """True once the store is loaded and the actors run (GET /readyz)."""
        ...

    async def apply(self, objects: list[dict[str, Any]], field_validation: str | None = None,
                    warnings: list[str] | None = None) -> tuple[list[dict[str, Any]], list[str]]:
        """Create or replace every object, all or nothing, in order: the stored
        objects, and for each "created", "configured" or "unchanged". With
        field_validation the objects are a client's manifests (actors.store.front_door);
        what the client should be told is added to `warnings`."""
        ...

    async def create(self, obj: dict[str, Any], field_validation: str | None = None,
                     warnings: list[str] | None = None) -> dict[str, Any]: ...

    async def delete(self, kind: str, namespace: str, name: str, uid: str = "", resource_version: str = ""
                     ) -> dict[str, Any]: ...

    async def get(self, kind: str, namespace: str, name: str) -> dict[str, Any]: ...

    async def list(self, kind: str, namespace: str, label_selector: str, field_selector: str,
                   limit: int = 0, continue_token: str = "", max_bytes: int = 0
                   ) -> tuple[list[dict[str, Any]], int, str]:
        """One page of committed objects in key order: (items, resourceVersion,
        continue token or ""), of at most `limit` objects (0: any number) and, with
        `max_bytes`, ending before their msgpack encodings pass it (one object at
        least), whatever `limit` says. A token older than the kept history raises
        ApiError(Expired)."""
        ...

    async def events(self, kind: str, namespace: str, name: str) -> list[dict[str, Any]]:
        """Events recorded about one object (Scheduled, FailedScheduling, Preempted...), oldest first."""
        ...

    async def watch(self, kinds: tuple[str, ...], from_rv: int, sink: EventSink) -> tuple[int, int]:
        """Register sink; events after from_rv (0: current objects as ADDED) are
        replayed first. Returns (watch id, resourceVersion now). A from_rv older
        than the kept history raises ApiError(Expired)."""
        ...

    async def watch_objects(self, kinds: tuple[str, ...], from_rv: int, sink: ObjectSink) -> tuple[int, int]:
        """As watch, handing over the parsed objects (the page reads requests from
        them rather than parsing each manifest again)."""
        ...

    def unwatch(self, watch_id: int) -> None:
        """Stop a watch; takes effect before the store's next turn. Never fails."""
        ...

    async def explain(self, pod: dict[str, Any]) -> dict[str, Any]: ...

    async def stats(self) -> dict[str, Any]: ...


Call = Callable[[], Awaitable[Any]]


async def call_store(fn: Call) -> Any:
    """Run one store request, turning the store's and the mailbox's errors into ApiError."""
    from actors.base import MailboxClosed
    from actors.store import StoreError

    try:
        return await fn()
    except StoreError as err:
        raise ApiError(_store_reason(err.reason), err.message, causes=getattr(err, "causes", ())) from None
    except MailboxClosed:
        raise ApiError(Reason.UNAVAILABLE, "the daemon is shutting down") from None


def _store_reason(reason: str) -> Reason:
    try:
        return Reason(reason)
    except ValueError:
        return Reason.INTERNAL


Explainer = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]
StatsSource = Callable[[], Awaitable[dict[str, Any]]]


class StoreService:
    """Service over the Store actor (actors.store.messages.StoreClient). `explain`
    asks the scheduler for a dry run on its live snapshot; `more_stats` adds the
    scheduler's and queue's counters; `ready` says whether the actors run. The
    fields the server owns (uid, creationTimestamp, what a re-apply keeps) are the
    store's to fill."""

    def __init__(self, store: Any, *, ready: Callable[[], bool] = lambda: True,
                 explain: Explainer | None = None, more_stats: StatsSource | None = None,
                 clock: Callable[[], float] = lambda: 0.0) -> None:
        from actors.store import StoreClient

        # Writes, watches and events go to the Store actor by message; reads at once
        # through the read-only interface it hands out, never its fields.
        self.client = StoreClient(store)
        self.reads = store.reader()
        self._ready = ready
        self._explain = explain
        self._more_stats = more_stats
        self._clock = clock  # the store's clock: event times are on it

    def ready(self) -> bool:
        return self._ready()

    async def apply(self, objects: list[dict[str, Any]], field_validation: str | None = None,
                    warnings: list[str] | None = None) -> tuple[list[dict[str, Any]], list[str]]:
        # The store validates each object (its errors name it: objects[3] (Pod default/web-3)),
        # a slice at a time between turns of the event loop; nothing is validated twice.
        return await call_store(lambda: self.client.apply_with_actions(
            objects, field_validation=field_validation, warnings=warnings))

    async def create(self, obj: dict[str, Any], field_validation: str | None = None,
                     warnings: list[str] | None = None) -> dict[str, Any]:
        return await call_store(lambda: self.client.create(obj, field_validation=field_validation, warnings=warnings))

    async def delete(self, kind: str, namespace: str, name: str, uid: str = "", resource_version: str = ""
                     ) -> dict[str, Any]:
        """Conflict when a precondition (uid, resourceVersion; "" for none) does not hold."""
        return await call_store(lambda: self.client.delete(_kind(kind), namespace, name, uid, resource_version))

    async def update(self, obj: dict[str, Any], field_validation: str | None = None,
                     warnings: list[str] | None = None) -> dict[str, Any]:
        """Replace a stored object; a metadata.resourceVersion that is not the stored one is
        Conflict. field_validation and warnings: as create's."""
        return await call_store(lambda: self.client.update(obj, field_validation=field_validation, warnings=warnings))

    async def update_status(self, obj: dict[str, Any], field_validation: str | None = None,
                            warnings: list[str] | None = None) -> dict[str, Any]:
        """The status subresource: only `obj`'s status is written (the stored spec and
        metadata kept), as kube-apiserver's status strategies do; as update's otherwise."""
        return await call_store(lambda: self.client.update_status(obj, field_validation=field_validation,
                                                                  warnings=warnings))

    async def bind(self, namespace: str, name: str, node_name: str, uid: str = "") -> dict[str, Any]:
        """The pods/binding subresource: spec.nodeName and PodScheduled=True; Conflict when bound."""
        return await call_store(lambda: self.client.bind(namespace, name, node_name, uid))

    async def get(self, kind: str, namespace: str, name: str) -> dict[str, Any]:
        # Reads come from the committed state at once, not through the store's inbox
        # (where they would wait behind a batch's fsync).
        return await call_store(lambda: _now(lambda: self.reads.read(_kind(kind), namespace, name).raw))

    async def list(self, kind: str, namespace: str, label_selector: str, field_selector: str,
                   limit: int = 0, continue_token: str = "", max_bytes: int = 0
                   ) -> tuple[list[dict[str, Any]], int, str]:
        def read() -> tuple[list[dict[str, Any]], int, str]:
            objs, rv, token = self.reads.read_list(_kind(kind), namespace, label_selector or None,
                                                   field_selector or None, limit=limit, continue_token=continue_token,
                                                   max_bytes=max_bytes)
            return [o.raw for o in objs], rv, token

        return await call_store(lambda: _now(read))

    async def events(self, kind: str, namespace: str, name: str) -> list[dict[str, Any]]:
        from framework.api.objects import KINDS

        key = f"{namespace or 'default'}/{name}" if KINDS[_kind(kind)].namespaced else name
        records = await call_store(lambda: self.client.events(kind, key))
        now = self._clock()
        return [{"type": r.type, "reason": r.reason, "message": r.message, "ageSeconds": max(0.0, now - r.time),
                 "count": r.count, "firstAgeSeconds": max(0.0, now - (r.first_time if r.first_time is not None
                                                                        else r.time)),
                 "source": r.source, "name": r.name}
                for r in records]

    async def watch(self, kinds: tuple[str, ...], from_rv: int, sink: EventSink) -> tuple[int, int]:
        return await self.watch_objects(kinds, from_rv, lambda t, kind, obj, rv: sink(t, kind, dict(obj.raw), rv))

    async def watch_objects(self, kinds: tuple[str, ...], from_rv: int, sink: ObjectSink) -> tuple[int, int]:
        def on_event(ev: Any) -> None:
            sink(ev.type, ev.kind, ev.obj, ev.resource_version)

        wanted = frozenset(_kind(k) for k in kinds) if kinds else None
        return await call_store(lambda: self.client.watch(on_event, wanted, from_rv))

    def unwatch(self, watch_id: int) -> None:
        from actors.store.messages import Unwatch

        self.client.send(Unwatch(watch_id=watch_id))  # a stopped store has no watch left

    async def explain(self, pod: dict[str, Any]) -> dict[str, Any]:
        if self._explain is None:
            raise ApiError(Reason.UNAVAILABLE, "explain: the scheduler is not running")
        return await self._explain(pod)

    async def stats(self) -> dict[str, Any]:
        from framework.api.objects import KINDS

        counts = {k: self.reads.count(k) for k in KINDS}
        out: dict[str, Any] = {
            "resourceVersion": self.reads.resource_version,
            "objects": {k: n for k, n in counts.items() if n},
            "storeCommits": self.reads.commits,
        }
        if self._more_stats is not None:
            out.update(await self._more_stats())
        return out


async def _now(read: Callable[[], Any]) -> Any:
    return read()


def _kind(kind: str) -> str:
    """Check a kind name early, so a typo is Invalid naming the field."""
    from framework.api.objects import KINDS

    if kind not in KINDS:
        raise ApiError(Reason.INVALID, f"kind: unsupported kind {kind!r}; expected one of {', '.join(sorted(KINDS))}")
    return kind
