"""The msgpack server's handlers, one per op, as a part of each Connection
(transport.server.tcp): what a request does, the watch's event path (encoded as
queued, bounded per watch in bytes) and the shape of long replies (encoded in
slices; an apply's compact reply)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, Sized

import msgpack

from actors.pacing import Pacer
from transport.protocol import wire
from transport.protocol.framing import FrameTooLarge, encode_frame, encode_reply_steps
from transport.protocol.wire import ApiError, Reason
from transport.server.replies import compact_apply_result, with_warnings

if TYPE_CHECKING:
    from transport.server.limits import ServerLimits
    from transport.server.outbox import Outbox
    from transport.server.service import Service

NO_REPLY = object()  # a handler that sent its own reply (watch: the reply precedes its events)
PACED_ITEMS = 256  # a reply with this many items is encoded in slices
LIST_MARGIN = 4096  # a list page's envelope: ids, resourceVersion, continue token, array headers
_PENDING_WATCH = -1  # a watch's store id before the store has registered it


class ServerView(Protocol):
    """What a connection's handlers ask of the server that accepted it."""

    connections: Sized

    def reject(self, limit: str) -> None: ...


class Ops:
    server: ServerView
    service: "Service"
    limits: "ServerLimits"
    out: "Outbox"
    watches: dict[int, int]  # watch request id -> store watch id

    def send(self, msg: dict[str, Any] | bytes) -> None:
        raise NotImplementedError

    # --- handlers (one per op) -------------------------------------------------------------

    async def on_hello(self, req: wire.Hello) -> dict[str, Any]:
        from importlib.metadata import PackageNotFoundError, version

        try:
            v = version("ksched")
        except PackageNotFoundError:
            v = "dev"
        stats = await self.service.stats()
        return {"server": "ksched", "version": v, "resourceVersion": stats.get("resourceVersion", 0)}

    async def on_apply(self, req: wire.Apply) -> object:
        warnings: list[str] = []
        items, actions = await self.service.apply(list(req.objects), req.field_validation, warnings)
        if req.compact:  # the client prints names and actions only (ksched apply): nothing more is encoded
            return with_warnings(compact_apply_result(items, actions, self.limits.max_frame_bytes), warnings)
        if await self._send_items(req.id, with_warnings({"items": items, "actions": actions}, warnings)):
            return NO_REPLY
        return with_warnings(compact_apply_result(items, actions, self.limits.max_frame_bytes), warnings)

    async def _send_items(self, rid: int, result: dict[str, Any]) -> bool:
        """Send a reply with a long `items` list, encoded in slices; False (nothing
        sent) when it is above the frame limit, with a margin for its envelope."""
        items = result["items"]
        if len(items) < PACED_ITEMS:
            if len(msgpack.packb(result, use_bin_type=True)) + 1024 > self.limits.max_frame_bytes:
                return False
            self.send(wire.ok_reply(rid, result))
            return True
        frame = await Pacer().drive(encode_reply_steps(rid, result, self.limits.max_frame_bytes - 1024))
        if frame is None:
            return False
        self.send(frame)
        return True

    async def on_create(self, req: wire.Create) -> dict[str, Any]:
        warnings: list[str] = []
        return with_warnings({"object": await self.service.create(req.object, req.field_validation, warnings)},
                             warnings)

    async def on_delete(self, req: wire.Delete) -> dict[str, Any]:
        return {"object": await self.service.delete(req.kind, req.namespace, req.name)}

    async def on_get(self, req: wire.Get) -> dict[str, Any]:
        return {"object": await self.service.get(req.kind, req.namespace, req.name)}

    async def on_events(self, req: wire.Events) -> dict[str, Any]:
        return {"items": await self.service.events(req.kind, req.namespace, req.name)}

    async def on_list(self, req: wire.List) -> object:
        # A page ends before the frame limit whatever the objects' sizes; the client
        # follows `continue` (the reply's envelope and keys take less than the margin).
        items, rv, token = await self.service.list(req.kind, req.namespace, req.label_selector, req.field_selector,
                                                   req.limit, req.continue_token,
                                                   max_bytes=self.limits.max_frame_bytes - LIST_MARGIN)
        result = {"items": items, "resourceVersion": rv, "continue": token}
        if len(items) >= PACED_ITEMS and await self._send_items(req.id, result):
            return NO_REPLY
        return result

    async def on_watch(self, req: wire.Watch) -> object:
        if req.id in self.watches:
            raise ApiError(Reason.ALREADY_EXISTS, f"id: watch {req.id} is already open on this connection")
        if len(self.watches) >= self.limits.max_watches:
            self.server.reject("watches")
            raise ApiError(Reason.TOO_MANY_REQUESTS,
                           f"watch: {len(self.watches)} watches are open on this connection (limit {self.limits.max_watches})")
        ns = req.namespace
        # The reply must go out before the first event: hold events until it is queued.
        held: list[dict[str, Any]] | None = []

        def sink(event_type: str, kind: str, obj: dict[str, Any], rv: int) -> None:
            if ns and (obj.get("metadata") or {}).get("namespace", "default") != ns:
                return
            frame = self._event_bytes(req.id, event_type, obj, rv)
            if held is not None:
                held.append(frame)
            elif req.id in self.watches:
                self._send_event(req.id, frame)

        self.watches[req.id] = _PENDING_WATCH  # holds its slot against the limit while it starts
        try:
            wid, rv = await self.service.watch(req.kinds, req.resource_version, sink)
        except BaseException:
            self.watches.pop(req.id, None)
            raise
        self.watches[req.id] = wid
        self.send(wire.ok_reply(req.id, {"watch": req.id, "resourceVersion": rv}))
        for frame in held:  # the replay: bounded by what the store holds, not counted against the backlog
            self.send(frame)
        held = None
        return NO_REPLY

    def _event_bytes(self, watch_req_id: int, event_type: str, obj: dict[str, Any], rv: int) -> bytes | dict[str, Any]:
        """A watch event encoded now, so that its bytes count (a map when it is above
        the frame limit: the writer answers TooLarge for it)."""
        msg = wire.event_frame(watch_req_id, event_type, obj, rv)
        try:
            return encode_frame(msg, self.limits.max_frame_bytes)
        except FrameTooLarge:
            return msg

    def _send_event(self, watch_req_id: int, frame: bytes | dict[str, Any]) -> None:
        """Queue one event, or end the watch when its client has fallen too far
        behind: more than max_queued_frames frames or max_watch_backlog_bytes of
        this watch's events unread. Its queued events are dropped then (the client
        resumes from the last resourceVersion it saw)."""
        limits = self.limits
        if self.out.qsize() > limits.max_queued_frames:
            self.server.reject("watch_backlog")
            self._end_watch(watch_req_id, ApiError(
                Reason.UNAVAILABLE, f"watch fell behind: {self.out.qsize()} frames unread (limit "
                                    f"{limits.max_queued_frames}); resume from the last resourceVersion"))
        elif isinstance(frame, bytes) and self.out.watch_bytes.get(watch_req_id, 0) + len(frame) > limits.max_watch_backlog_bytes:
            self.server.reject("watch_backlog_bytes")
            self._end_watch(watch_req_id, ApiError(
                Reason.UNAVAILABLE, f"watch fell behind: {self.out.watch_bytes.get(watch_req_id, 0)} bytes of events "
                                    f"unread (limit {limits.max_watch_backlog_bytes}); resume from the last resourceVersion"))
        elif isinstance(frame, bytes):
            self.out.put(frame, watch_req_id)
        else:
            self.send(frame)

    def _end_watch(self, watch_req_id: int, err: ApiError) -> None:
        wid = self.watches.pop(watch_req_id, None)
        if wid is None:
            return
        self.out.drop_watch(watch_req_id)
        self.send(wire.error_reply(watch_req_id, err))
        self.service.unwatch(wid)

    async def on_cancel(self, req: wire.Cancel) -> dict[str, Any]:
        wid = self.watches.pop(req.watch, None)
        if wid is None:
            raise ApiError(Reason.NOT_FOUND, f"watch: no open watch {req.watch} on this connection")
        self.service.unwatch(wid)
        return {}

    async def on_explain(self, req: wire.Explain) -> dict[str, Any]:
        return await self.service.explain(req.pod)

    async def on_stats(self, req: wire.Stats) -> dict[str, Any]:
        stats = await self.service.stats()
        return {**stats, "connections": len(self.server.connections)}

    def _drop_watches(self) -> None:
        watches, self.watches = self.watches, {}
        for wid in watches.values():
            self.service.unwatch(wid)
