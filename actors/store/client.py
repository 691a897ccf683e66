"""StoreClient: the ref other actors and the wire service hold to talk to the Store actor."""
from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

from actors.base import Actor, MailboxClosed, new_reply
from framework.api.groups import kind_key
from framework.api.objects import KubeObject
from actors.store.premise import DERIVED_FROM
from actors.store.messages import (
    Apply, Bind, BindWithUpdates, ClaimToMake, Create, Delete, EventRecord, EvictPods, Recreate, Get, GetEvents, ListObjects,
    MakePodClaims, RecordEvent, StoreMsg, Unwatch,
    Update, UpdatePodStatus, Watch, WatchEvent, scheduled_message,
)


class StoreClient:
    """Async calls on a Store actor; each one is an ask (errors are StoreError)."""

    def __init__(self, store: Actor[StoreMsg]) -> None:
        self._store = store
        # Pod uids bound with their Scheduled event in the binding's write (messages.Bind),
        # until the scheduler's record_scheduled finds them.
        self._scheduled_with_bind: set[str] = set()

    async def create(self, obj: Mapping[str, Any], *, field_validation: str | None = None,
                     warnings: list[str] | None = None, template: str = "") -> dict[str, Any]:
        """field_validation, template: see messages.Create; what the client should be told
        is added to `warnings` (the caller's list, here in the caller's task)."""
        return await self._written(Create, obj, field_validation, warnings, template=template)

    async def apply(self, objects: list[Mapping[str, Any]]) -> list[dict[str, Any]]:
        return await self._store.ask(Apply(objects=list(objects), reply=new_reply()))

    async def apply_with_actions(self, objects: list[Mapping[str, Any]], *, field_validation: str | None = None,
                                 warnings: list[str] | None = None) -> tuple[list[dict[str, Any]], list[str]]:
        """Apply, and say for each object whether it was created, configured or unchanged."""
        items, actions, said = await self._store.ask(Apply(objects=list(objects), with_actions=True,
                                                           field_validation=field_validation, reply=new_reply()))
        if warnings is not None:
            warnings.extend(said)
        return items, actions

    async def update(self, obj: Mapping[str, Any], *, field_validation: str | None = None,
                     warnings: list[str] | None = None) -> dict[str, Any]:
        return await self._written(Update, obj, field_validation, warnings)

    async def update_status(self, obj: Mapping[str, Any], *, field_validation: str | None = None,
                            warnings: list[str] | None = None) -> dict[str, Any]:
        """Write `obj`'s status alone, as the status subresource (the stored spec and
        metadata kept; `obj`'s resourceVersion the precondition): the object as stored.
        field_validation, warnings: as create's (a client's body, REST's PUT .../status)."""
        return await self._written(Update, obj, field_validation, warnings, status_only=True)

    async def _written(self, verb: type[Create] | type[Update], obj: Mapping[str, Any], field_validation: str | None,
                       warnings: list[str] | None, **more: Any) -> dict[str, Any]:
        """A Create or Update (`more`: its other fields); the warnings in its reply go to
        `warnings` when the caller gave a list."""
        told = warnings is not None
        reply = await self._store.ask(verb(obj=obj, field_validation=field_validation, with_warnings=told,
                                           reply=new_reply(), **more))
        if not told:
            return reply
        stored, said = reply
        warnings.extend(said)
        return stored

    async def delete(self, kind: str, namespace: str, name: str, uid: str = "", resource_version: str = ""
                     ) -> dict[str, Any]:
        return await self._store.ask(Delete(kind=kind, namespace=namespace, name=name, uid=uid,
                                            resource_version=resource_version, reply=new_reply()))

    async def recreate(self, obj: Mapping[str, Any], *, uid: str = "", resource_version: str = "") -> dict[str, Any]:
        """Replace the stored object `obj` names by `obj`, created anew (a new uid), in one
        write; uid / resource_version are preconditions on the one deleted (messages.Recreate)."""
        meta = obj.get("metadata") or {}
        return await self._store.ask(Recreate(kind=kind_key(obj) or "", namespace=meta.get("namespace") or "",
                                              name=str(meta.get("name") or ""), obj=obj, uid=uid,
                                              resource_version=resource_version, reply=new_reply()))

    async def get(self, kind: str, namespace: str, name: str) -> dict[str, Any]:
        return await self._store.ask(Get(kind=kind, namespace=namespace, name=name, reply=new_reply()))

    async def list(self, kind: str, namespace: str = "", label_selector: str | Mapping[str, Any] | None = None,
                   field_selector: str | None = None) -> tuple[list[dict[str, Any]], int]:
        return await self._store.ask(ListObjects(kind=kind, namespace=namespace, label_selector=label_selector,
                                                 field_selector=field_selector, reply=new_reply()))

    async def bind(self, namespace: str, name: str, node_name: str, uid: str = "", *,
                   scheduled_event: bool = False) -> dict[str, Any]:
        """`scheduled_event` (the scheduler's binder, with the pod's uid): the Scheduled event
        is written with the binding (messages.Bind), and record_scheduled then records none."""
        bound = await self._store.ask(Bind(namespace=namespace, name=name, node_name=node_name, uid=uid,
                                           derived_from=DERIVED_FROM.get(), scheduled_event=scheduled_event,
                                           reply=new_reply()))
        if scheduled_event:
            self._scheduled_with_bind.add(uid)
        return bound

    async def bind_with_updates(self, namespace: str, name: str, node_name: str, uid: str,
                                updates: list[Mapping[str, Any]], *, scheduled_event: bool = False
                                ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """Update `updates` and bind the pod in one write, both or neither (messages.BindWithUpdates):
        (the updated objects as stored, the bound pod). `scheduled_event`: as bind's."""
        done = await self._store.ask(BindWithUpdates(updates=tuple(updates), namespace=namespace, name=name,
                                                     node_name=node_name, uid=uid, derived_from=DERIVED_FROM.get(),
                                                     scheduled_event=scheduled_event, reply=new_reply()))
        if scheduled_event:
            self._scheduled_with_bind.add(uid)
        return done

    def record_scheduled(self, namespace: str, name: str, node_name: str, uid: str) -> None:
        """The scheduler's Scheduled event for a pod whose binding succeeded: already
        written with the binding when that carried it (bind's `scheduled_event`), else
        recorded now (a binding extender's, another Bind plugin's)."""
        if uid and uid in self._scheduled_with_bind:
            self._scheduled_with_bind.discard(uid)
            return
        self.record_event("Pod", f"{namespace}/{name}", "Normal", "Scheduled",
                          scheduled_message(namespace, name, node_name), uid)

    async def update_pod_status(self, namespace: str, name: str, *, uid: str = "",
                                condition: Mapping[str, Any] | None = None,
                                nominated_node_name: str | None = None, phase: str | None = None,
                                claim_statuses: Mapping[str, str] | None = None) -> dict[str, Any]:
        return await self._store.ask(UpdatePodStatus(namespace=namespace, name=name, uid=uid, condition=condition,
                                                     nominated_node_name=nominated_node_name, phase=phase,
                                                     claim_statuses=claim_statuses, reply=new_reply()))

    async def make_pod_claims(self, namespace: str, name: str, uid: str, creates: Sequence[ClaimToMake],
                              found: Mapping[str, str]) -> tuple[list[KubeObject], KubeObject]:
        """Create `creates` and record them (and `found`) in the pod's status, in one write
        (messages.MakePodClaims): (the created claims, the pod), as stored and parsed."""
        return await self._store.ask(MakePodClaims(namespace=namespace, name=name, uid=uid, creates=tuple(creates),
                                                   found=found, reply=new_reply()))

    async def evict_pods(self, victims: Sequence[tuple[str, str, str]], *, condition: Mapping[str, Any],
                         event_reason: str, event_message: str) -> tuple[bool, ...]:
        """Preemption's evictions in one write (messages.EvictPods): per victim
        (namespace, name, uid), whether it was evicted (False: it was gone)."""
        return await self._store.ask(EvictPods(victims=tuple(victims), condition=condition, event_reason=event_reason,
                                               event_message=event_message, reply=new_reply()))

    def send(self, msg: StoreMsg) -> bool:
        """Fire and forget (no reply); False when the store has stopped."""
        try:
            self._store.tell(msg)
        except MailboxClosed:
            return False
        return True

    def record_event(self, kind: str, key: str, type: str, reason: str, message: str, uid: str = "") -> None:
        """Store a core/v1 Event about the object (fire and forget; `uid`: the object's
        uid as the caller saw it, "" for the stored one's)."""
        self.send(RecordEvent(kind=kind, key=key, type=type, reason=reason, message=message, uid=uid))

    async def events(self, kind: str, key: str) -> list[EventRecord]:
        """The stored Events about the object under `key` in its current life (by uid)."""
        return await self._store.ask(GetEvents(kind=kind, key=key, reply=new_reply()))

    async def watch(self, sink: Callable[[WatchEvent], None], kinds: frozenset[str] | None = None,
                    from_rv: int = 0, *, early: bool = False) -> tuple[int, int]:
        """`early`: told of each turn when it is handed to the disk (actors/store/premise.py)."""
        return await self._store.ask(Watch(kinds=kinds, from_rv=from_rv, sink=sink, early=early,
                                           reply=new_reply()))

    async def unwatch(self, watch_id: int) -> None:
        await self._store.ask(Unwatch(watch_id=watch_id, reply=new_reply()))
