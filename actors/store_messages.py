"""Messages the Store actor takes, and StoreClient: the typed way to send them."""
from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Mapping, Union

from actors.base import new_reply

if TYPE_CHECKING:
    from actors.base import Actor
    from actors.store import EventRecord, WatchEvent

Reply = asyncio.Future


@dataclass(frozen=True, slots=True, kw_only=True)
class Create:
    obj: Mapping[str, Any]
    reply: Reply | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Apply:
    """Create or replace many objects at once, all or nothing, in order (each sees
    the ones before it). The reply is the stored objects, or with with_actions
    (stored objects, ["created" | "configured" | "unchanged", ...])."""

    objects: list[Mapping[str, Any]]
    with_actions: bool = False
    reply: Reply | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Update:
    """Replace an object; a stale metadata.resourceVersion gives Conflict."""

    obj: Mapping[str, Any]
    reply: Reply | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Delete:
    kind: str
    namespace: str
    name: str
    reply: Reply | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Get:
    kind: str
    namespace: str
    name: str
    reply: Reply | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ListObjects:
    kind: str
    namespace: str = ""
    label_selector: str | Mapping[str, Any] | None = None
    field_selector: str | None = None  # spec.nodeName=..., status.phase=...
    reply: Reply | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Bind:
    """Write spec.nodeName and PodScheduled=True (the pods/binding subresource)."""

    namespace: str
    name: str
    node_name: str
    uid: str = ""
    reply: Reply | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class UpdatePodStatus:
    namespace: str
    name: str
    uid: str = ""
    condition: Mapping[str, Any] | None = None  # replaces the condition of the same type
    nominated_node_name: str | None = None  # "" clears it
    phase: str | None = None
    reply: Reply | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RecordEvent:
    kind: str
    key: str
    type: str  # Normal | Warning
    reason: str
    message: str
    reply: Reply | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class GetEvents:
    kind: str
    key: str
    reply: Reply | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Watch:
    kinds: frozenset[str] | None
    from_rv: int
    sink: Callable[["WatchEvent"], None]
    reply: Reply | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Unwatch:
    watch_id: int
    reply: Reply | None = None


StoreMsg = Union[Create, Apply, Update, Delete, Get, ListObjects, Bind, UpdatePodStatus, RecordEvent, GetEvents,
                 Watch, Unwatch]


class StoreClient:
    """Async calls on a Store actor; each one is an ask (errors are StoreError)."""

    def __init__(self, store: "Actor[StoreMsg]") -> None:
        self._store = store

    async def create(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        return await self._store.ask(Create(obj=obj, reply=new_reply()))

    async def apply(self, objects: list[Mapping[str, Any]]) -> list[dict[str, Any]]:
        return await self._store.ask(Apply(objects=list(objects), reply=new_reply()))

    async def apply_with_actions(self, objects: list[Mapping[str, Any]]) -> tuple[list[dict[str, Any]], list[str]]:
        """Apply, and say for each object whether it was created, configured or unchanged."""
        return await self._store.ask(Apply(objects=list(objects), with_actions=True, reply=new_reply()))

    async def update(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        return await self._store.ask(Update(obj=obj, reply=new_reply()))

    async def delete(self, kind: str, namespace: str, name: str) -> dict[str, Any]:
        return await self._store.ask(Delete(kind=kind, namespace=namespace, name=name, reply=new_reply()))

    async def get(self, kind: str, namespace: str, name: str) -> dict[str, Any]:
        return await self._store.ask(Get(kind=kind, namespace=namespace, name=name, reply=new_reply()))

    async def list(self, kind: str, namespace: str = "", label_selector: str | Mapping[str, Any] | None = None,
                   field_selector: str | None = None) -> tuple[list[dict[str, Any]], int]:
        return await self._store.ask(ListObjects(kind=kind, namespace=namespace, label_selector=label_selector,
                                                 field_selector=field_selector, reply=new_reply()))

    async def bind(self, namespace: str, name: str, node_name: str, uid: str = "") -> dict[str, Any]:
        return await self._store.ask(Bind(namespace=namespace, name=name, node_name=node_name, uid=uid,
                                          reply=new_reply()))

    async def update_pod_status(self, namespace: str, name: str, *, uid: str = "",
                                condition: Mapping[str, Any] | None = None,
                                nominated_node_name: str | None = None, phase: str | None = None) -> dict[str, Any]:
        return await self._store.ask(UpdatePodStatus(namespace=namespace, name=name, uid=uid, condition=condition,
                                                     nominated_node_name=nominated_node_name, phase=phase,
                                                     reply=new_reply()))

    def send(self, msg: StoreMsg) -> bool:
        """Fire and forget (no reply); False when the store has stopped."""
        from actors.base import MailboxClosed

        try:
            self._store.tell(msg)
        except MailboxClosed:
            return False
        return True

    def record_event(self, kind: str, key: str, type: str, reason: str, message: str) -> None:
        self.send(RecordEvent(kind=kind, key=key, type=type, reason=reason, message=message))

    async def events(self, kind: str, key: str) -> list["EventRecord"]:
        return await self._store.ask(GetEvents(kind=kind, key=key, reply=new_reply()))

    async def watch(self, sink: Callable[["WatchEvent"], None], kinds: frozenset[str] | None = None,
                    from_rv: int = 0) -> tuple[int, int]:
        return await self._store.ask(Watch(kinds=kinds, from_rv=from_rv, sink=sink, reply=new_reply()))

    async def unwatch(self, watch_id: int) -> None:
        await self._store.ask(Unwatch(watch_id=watch_id, reply=new_reply()))
