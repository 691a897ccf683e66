"""DefaultBinder: writes the binding through the handle (upstream posts a
v1.Binding with the client)."""
from __future__ import annotations

from typing import Any

from framework.api.objects import Pod
from framework.bind_writes import offered
from framework.interface import CycleState, Status


class DefaultBinder:
    name = "DefaultBinder"
    # It writes the updates PreBind plugins hand over (framework/bind_writes.py) in the
    # binding's own store write.
    carries_bind_writes = True

    def __init__(self, handle: Any) -> None:
        self._handle = handle

    @classmethod
    def new(cls, args: dict[str, Any] | None, handle: Any) -> "DefaultBinder":
        return cls(handle)

    async def bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """Success, or Error carrying the failure; never Skip."""
        writes = offered(state)
        pending = writes.take() if writes is not None else []
        try:
            stored = await self._handle.bind_pod(pod, node_name, [obj for obj, _ in pending])
        except Exception as err:  # noqa: BLE001 - a failed write is an expected outcome here
            return Status.error_of(err)
        for written, (_, done) in zip(stored, pending):
            done(written)
        return None


PLUGINS = [DefaultBinder]
