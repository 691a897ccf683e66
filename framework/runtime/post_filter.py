"""PostFilter, folded as upstream's RunPostFilterPlugins (PostFilterRun says what
ran). A part the Framework holds (framework.runtime.framework)."""
from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any

from framework.api.objects import Pod
from framework.interface import Code, CycleState, NodeToStatus, PostFilterResult, Status
from framework.runtime.common import _error


class PostFiltering:
    """The PostFilter extension point of one profile's Framework."""

    def __init__(self, post_filter_plugins: list[Any]) -> None:
        self.post_filter_plugins = post_filter_plugins

    def has_post_filter_plugins(self) -> bool:
        return bool(self.post_filter_plugins)

    async def run_post_filter(self, state: CycleState, pod: Pod, filtered: NodeToStatus) -> "PostFilterRun":
        """The one PostFilter door: every plugin's post_filter, awaited when it is a
        coroutine (DefaultPreemption's, which awaits preempting extenders when the
        handle has them); without extenders nothing suspends (run_unsuspended can
        drive it)."""
        outcome = _PostFilterOutcome()
        for pl in self.post_filter_plugins:
            try:
                answer = pl.post_filter(state, pod, filtered)
                r, st = await answer if inspect.isawaitable(answer) else answer
            except Exception as e:  # noqa: BLE001
                return outcome.raised(pl.name, f'running PostFilter plugin "{pl.name}": {e}')
            done = outcome.add(pl.name, r, st)
            if done is not None:
                return done
        return outcome.final()


@dataclass(frozen=True, slots=True)
class PostFilterRun:
    """What one PostFilter run gave: the nomination and status folded as upstream's
    RunPostFilterPlugins, and each plugin that ran, in order, with its code (Error
    for one that raised). The scheduler counts a preemption attempt when
    DefaultPreemption is among them (`code_of`)."""

    result: PostFilterResult | None
    status: Status
    ran: tuple[tuple[str, Code], ...] = ()

    def code_of(self, plugin: str) -> Code | None:
        """The code `plugin` answered in this run; None when it did not run."""
        for name, code in self.ran:
            if name == plugin:
                return code
        return None


class _PostFilterOutcome:
    """Folds PostFilter plugins' answers as upstream's RunPostFilterPlugins: the first
    Success or UnschedulableAndUnresolvable (or an Error) ends the run; otherwise
    the reasons add up and the last nomination given (even an empty one) stands."""

    __slots__ = ("reasons", "rejector", "result", "ran")

    def __init__(self) -> None:
        self.reasons: list[str] = []
        self.rejector = ""
        self.result: PostFilterResult | None = None
        self.ran: list[tuple[str, Code]] = []

    def raised(self, plugin: str, message: str) -> PostFilterRun:
        self.ran.append((plugin, Code.Error))
        return PostFilterRun(None, _error(plugin, message), tuple(self.ran))

    def add(self, plugin: str, r: PostFilterResult | None, st: Status | None) -> PostFilterRun | None:
        st = st if st is not None else Status()
        self.ran.append((plugin, st.code))
        if st.is_success():
            return PostFilterRun(r, st, tuple(self.ran))
        if st.code == Code.UnschedulableAndUnresolvable:
            return PostFilterRun(r, st.with_plugin(plugin), tuple(self.ran))
        if not st.is_rejected():
            return PostFilterRun(None, Status(Code.Error, *st.reasons, plugin=plugin), tuple(self.ran))
        if r is not None:
            # Even an empty nomination counts: it clears the pod's stale one.
            self.result = r
        self.reasons.extend(st.reasons)
        if not self.rejector:
            self.rejector = plugin
        return None

    def final(self) -> PostFilterRun:
        return PostFilterRun(self.result, Status(Code.Unschedulable, *self.reasons, plugin=self.rejector), tuple(self.ran))
