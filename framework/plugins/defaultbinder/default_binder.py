"""DefaultBinder: writes the binding through the handle (upstream posts a
v1.Binding with the client)."""
from __future__ import annotations

from typing import Any

from framework.api.objects import Pod
from framework.interface import CycleState, Status


class DefaultBinder:
    name = "DefaultBinder"

    def __init__(self, handle: Any) -> None:
        self._handle = handle

    @classmethod
    def new(cls, args: dict[str, Any] | None, handle: Any) -> "DefaultBinder":
        return cls(handle)

    async def bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """Success, or Error carrying the failure; never Skip."""
        try:
            await self._handle.bind_pod(pod, node_name)
        except Exception as err:  # noqa: BLE001 - a failed write is an expected outcome here
            return Status.error_of(err)
        return None


PLUGINS = [DefaultBinder]
