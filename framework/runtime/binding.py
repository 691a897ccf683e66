"""Reserve (and Unreserve), Permit, PreBind, Bind and PostBind: the extension points
that run once a node is chosen, as upstream's RunReservePlugins ... RunPostBindPlugins.
A part the Framework holds (framework.runtime.framework)."""
from __future__ import annotations

from typing import Any

from framework.api.objects import Pod
from framework.interface import MAX_PERMIT_TIMEOUT_SECONDS, Code, CycleState, Status
from framework.runtime.common import _OK, _SKIP, _SKIPPED, _error, _rejected_or_error


class Binding:
    """The extension points of one profile's Framework from Reserve to PostBind."""

    def __init__(self, reserve_plugins: list[Any], permit_plugins: list[Any], pre_bind_plugins: list[Any],
                 bind_plugins: list[Any], post_bind_plugins: list[Any]) -> None:
        self.reserve_plugins = reserve_plugins
        self.permit_plugins = permit_plugins
        self.pre_bind_plugins = pre_bind_plugins
        self.bind_plugins = bind_plugins
        self.post_bind_plugins = post_bind_plugins

    def run_reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        for pl in self.reserve_plugins:
            try:
                st = pl.reserve(state, pod, node_name)
            except Exception as e:  # noqa: BLE001
                return _error(pl.name, f'running Reserve plugin "{pl.name}": {e}')
            if st is not None and not st.is_success():
                return _rejected_or_error(pl.name, st, f'running Reserve plugin "{pl.name}"')
        return _OK

    def run_unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        for pl in reversed(self.reserve_plugins):
            try:
                pl.unreserve(state, pod, node_name)
            except Exception:  # noqa: BLE001 - Unreserve must not fail; the others still run
                continue

    def run_permit(self, state: CycleState, pod: Pod, node_name: str) -> tuple[Status, dict[str, float]]:
        waits: dict[str, float] = {}
        for pl in self.permit_plugins:
            try:
                st, timeout = pl.permit(state, pod, node_name)
            except Exception as e:  # noqa: BLE001
                return _error(pl.name, f'running Permit plugin "{pl.name}": {e}'), {}
            if st is None or st.is_success():
                continue
            if st.is_rejected():
                return st.with_plugin(pl.name), {}
            if st.is_wait():
                waits[pl.name] = min(float(timeout), float(MAX_PERMIT_TIMEOUT_SECONDS))
                continue
            return _error(pl.name, f'running Permit plugin "{pl.name}": {st.message()}'), {}
        if waits:
            return Status(Code.Wait, f'one or more plugins asked to wait and no plugin rejected pod "{pod.name}"'), waits
        return _OK, {}

    async def run_pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        for pl in self.pre_bind_plugins:
            try:
                st = await pl.pre_bind(state, pod, node_name)
            except Exception as e:  # noqa: BLE001
                return _error(pl.name, f'running PreBind plugin "{pl.name}": {e}')
            if st is not None and not st.is_success():
                return _rejected_or_error(pl.name, st, f'running PreBind plugin "{pl.name}"')
        return _OK

    def binder_carries_writes(self) -> bool:
        """Whether the Bind plugin that binds (the first; DefaultBinder never skips) writes
        the updates PreBind plugins hand over with the binding (framework/bind_writes.py)."""
        return bool(self.bind_plugins) and getattr(self.bind_plugins[0], "carries_bind_writes", False) is True

    async def run_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        if not self.bind_plugins:
            return _SKIPPED
        status = _SKIPPED
        for pl in self.bind_plugins:
            try:
                st = await pl.bind(state, pod, node_name)
            except Exception as e:  # noqa: BLE001
                return _error(pl.name, f'running Bind plugin "{pl.name}": {e}')
            status = st if st is not None else _OK
            if status.code == _SKIP:
                continue
            if not status.is_success():
                return _rejected_or_error(pl.name, status, f'running Bind plugin "{pl.name}"')
            return status
        return status

    def run_post_bind(self, state: CycleState, pod: Pod, node_name: str) -> None:
        for pl in self.post_bind_plugins:
            try:
                pl.post_bind(state, pod, node_name)
            except Exception:  # noqa: BLE001 - PostBind is informational
                continue
