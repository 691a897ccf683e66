"""Timing a profile's Framework from the scheduler's side, as upstream's runtime does.

The Scheduler builds two timed siblings of each profile's Framework
(`Framework.timed`: the same plugins, handle and settings) whose whole extension
points are timed into scheduler_framework_extension_point_duration_seconds by an
ExtensionPointTimer (PreFilter, PostFilter, PreScore, Score, Reserve, Unreserve,
Permit, PreBind, Bind, PostBind; Filter runs per node and is not timed as a whole,
as upstream).

The plain sibling times only the extension points (which PostFilter plugins ran is
part of run_post_filter's own result). The sampled one, used for a fraction of
scheduling cycles (upstream: 10%, its pluginMetricsSamplePercent), is built with a
timing proxy in front of every plugin (`timed_plugin`, chosen when it is built), so
each plugin call lands in scheduler_plugin_execution_duration_seconds with its
extension point and status. The runtime knows none of this: it calls its
PointTimer and the plugins it was given.
"""
from __future__ import annotations

import inspect
from bisect import bisect_left
from types import MappingProxyType
from typing import Any, Awaitable, Callable, Mapping, TypeVar

from actors.metrics_sink import MetricsSink
from framework.runtime import Framework
from framework.runtime.timing import StatusOf, no_status, status_first, status_itself, status_second

T = TypeVar("T")
_NO_CELLS: Mapping[Any, Any] = MappingProxyType({})
Timer = Callable[[], float]
# plugin, extension point, status name, seconds
PluginRecord = Callable[[str, str, str, float], None]


def _first_failure(r: Any) -> Any:
    """A columnar Filter's verdicts: the first that is not Success, if any."""
    for st in r or ():
        if st is not None and not st.is_success():
            return st
    return None


# The labels of the extension points timed as a whole (the Framework's doors name them).
EXTENSION_POINT_LABELS = ("PreFilter", "PostFilter", "PreScore", "Score", "Reserve", "Unreserve", "Permit",
                          "PreBind", "Bind", "PostBind")

# Extension point (framework.runtime.EXTENSION_POINTS) -> {plugin method: (its label, where its
# Status is, async?)}: the plugin calls a sampled cycle times. The queue's points are not timed.
PLUGIN_METHODS: dict[str, dict[str, tuple[str, Callable[[Any], Any], bool]]] = {
    "preFilter": {"pre_filter": ("PreFilter", status_second, False)},
    # Columnar forms are timed as one call over all the nodes they are given.
    "filter": {"filter": ("Filter", status_itself, False), "filter_nodes": ("Filter", _first_failure, False)},
    # A coroutine post_filter (DefaultPreemption's) is timed as async (TimedPlugin).
    "postFilter": {"post_filter": ("PostFilter", status_second, False)},
    "preScore": {"pre_score": ("PreScore", status_itself, False)},
    "score": {"score": ("Score", status_second, False), "score_nodes": ("Score", status_second, False)},
    "reserve": {"reserve": ("Reserve", status_itself, False), "unreserve": ("Unreserve", no_status, False)},
    "permit": {"permit": ("Permit", status_first, False)},
    "preBind": {"pre_bind": ("PreBind", status_itself, True)},
    "bind": {"bind": ("Bind", status_itself, True)},
    "postBind": {"post_bind": ("PostBind", no_status, False)},
}


def _sync_method(plugin: Any, method: str, point: str, status_of: StatusOf, record: PluginRecord,
                 timer: Timer) -> Callable[..., Any]:
    """The plugin's `method`, looked up at each call, reporting (plugin, point, status
    name, seconds) after it; an exception is reported as Error and raised on. One
    frame a call (a sampled cycle's every plugin call goes through it)."""
    name = plugin.name

    def call(*args: Any, **kw: Any) -> Any:
        start = timer()
        try:
            result = getattr(plugin, method)(*args, **kw)
        except Exception:
            record(name, point, "Error", timer() - start)
            raise
        # code_name's, written out: the enum's `name` property is two Python calls; `_name_` is what it reads.
        st = status_of(result)
        record(name, point, "Success" if st is None else st.code._name_, timer() - start)
        return result
    return call


async def _call_async(fn: Callable[..., Awaitable[T]], args: tuple, kw: dict[str, Any], status_of: StatusOf,
                      report: Callable[[str, float], None], timer: Timer) -> T:
    """`await fn(*args, **kw)`, reporting (status name, seconds until its result) after
    it; an exception is reported as Error and raised on."""
    start = timer()
    try:
        result = await fn(*args, **kw)
    except Exception:
        report("Error", timer() - start)
        raise
    st = status_of(result)
    report("Success" if st is None else st.code._name_, timer() - start)
    return result


def _async_method(plugin: Any, method: str, point: str, status_of: StatusOf, record: PluginRecord,
                  timer: Timer) -> Callable[..., Any]:
    """_sync_method for a coroutine method (a post_filter, pre_bind or bind)."""
    name = plugin.name

    def report(status: str, seconds: float) -> None:
        record(name, point, status, seconds)

    def call_async(*args: Any, **kw: Any) -> Any:
        return _call_async(getattr(plugin, method), args, kw, status_of, report, timer)
    return call_async


class TimedPlugin:
    """A plugin behind a proxy that reports each call of the given methods; every
    other attribute is the plugin's own. The plugin's method is looked up at each
    call, so one replaced on the plugin object (tests record calls that way) runs."""

    def __init__(self, plugin: Any, methods: dict[str, tuple[str, Callable[[Any], Any], bool]],
                 record: PluginRecord, timer: Timer) -> None:
        self._plugin = plugin
        self.name = plugin.name
        for method, (point, status_of, is_async) in methods.items():
            if hasattr(plugin, method):
                awaited = is_async or inspect.iscoroutinefunction(getattr(plugin, method))
                made = _async_method if awaited else _sync_method
                setattr(self, method, made(plugin, method, point, status_of, record, timer))

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._plugin, attr)


class ExtensionPointTimer:
    """A PointTimer (framework/runtime/timing.py) reporting each whole extension
    point of one profile to the metrics sink: (point, status name, profile,
    seconds); a door that raises is reported as Error and raises on."""

    __slots__ = ("_sink", "_profile", "_timer", "_cells")

    def __init__(self, sink: MetricsSink, profile: str, timer: Timer) -> None:
        self._sink = sink
        self._profile = profile
        self._timer = timer
        # The sink's histogram cells by (point, status, profile) when it keeps them
        # (SchedulerMetrics.extension_point_cells): a label set seen before is observed
        # in place, and the sink's call makes a new one. Another sink: always its call.
        self._cells: Mapping[tuple[str, str, str], Any] = getattr(sink, "extension_point_cells", _NO_CELLS)

    def run(self, point: str, status_of: StatusOf, fn: Callable[..., T], *args: Any) -> T:
        # _call's work written out: this runs for every cycle's PreFilter, PreScore, Score,
        # Reserve, Permit and PostBind, a frame and a closure fewer each time.
        timer = self._timer
        start = timer()
        try:
            result = fn(*args)
        except Exception:
            self._sink.extension_point(point, "Error", self._profile, timer() - start)
            raise
        # status_of's rule written out for the four a cycle's doors pass (PreFilter's and
        # Score's second, PreScore's and Reserve's itself, Permit's first, PostBind's none),
        # a frame fewer each; any other is called (tests/actors/test_framework_timing.py).
        if status_of is status_second:
            st = result[1] if result is not None else None
        elif status_of is status_itself:
            st = result
        elif status_of is status_first:
            st = result[0] if result is not None else None
        elif status_of is no_status:
            st = None
        else:
            st = status_of(result)
        status = "Success" if st is None else st.code._name_
        seconds = timer() - start
        cell = self._cells.get((point, status, self._profile))
        if cell is None:  # no cells kept, or the label set's first observation: the sink's own call
            self._sink.extension_point(point, status, self._profile, seconds)
        else:  # SchedulerMetrics.extension_point's observe, written out: a frame fewer a door
            cell.sum += seconds
            if seconds == seconds:
                cell.counts[bisect_left(cell.bounds, seconds)] += 1
        return result

    async def run_async(self, point: str, status_of: StatusOf, fn: Callable[..., Awaitable[T]], *args: Any) -> T:
        # _call_async's work written out, reporting straight to the sink (every binding
        # cycle's PreBind and Bind): two frames a point fewer than the coroutine and a
        # reporter closure. The clock starts when the door's coroutine is first awaited, as there.
        timer = self._timer
        start = timer()
        try:
            result = await fn(*args)
        except Exception:
            self._sink.extension_point(point, "Error", self._profile, timer() - start)
            raise
        st = result if status_of is status_itself else status_of(result)  # (both doors': itself)
        status = "Success" if st is None else st.code._name_
        seconds = timer() - start
        cell = self._cells.get((point, status, self._profile))
        if cell is None:  # as in run
            self._sink.extension_point(point, status, self._profile, seconds)
        else:
            cell.sum += seconds
            if seconds == seconds:
                cell.counts[bisect_left(cell.bounds, seconds)] += 1
        return result


def timed_frameworks(fwk: Framework, sink: MetricsSink, timer: Timer,
                     plugin_record: PluginRecord) -> tuple[Framework, Framework]:
    """The plain and the sampled timed siblings of one profile's Framework; the
    sampled one's plugins report every call to `plugin_record`."""
    points = ExtensionPointTimer(sink, fwk.profile_name, timer)

    def wrap(point: str, plugin: Any) -> Any:
        methods = PLUGIN_METHODS.get(point)
        return plugin if methods is None else TimedPlugin(plugin, methods, plugin_record, timer)

    return fwk.timed(points), fwk.timed(points, wrap)
