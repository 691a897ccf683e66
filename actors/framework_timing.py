"""Timing a profile's Framework from the scheduler's side, as upstream's runtime does.

TimedFramework is a view of one profile's Framework (same plugins, handle and
configuration; built once per profile by the Scheduler) whose whole extension
points are timed into scheduler_framework_extension_point_duration_seconds
(PreFilter, PostFilter, PreScore, Score, Reserve, Unreserve, Permit, PreBind,
Bind, PostBind; Filter runs per node and is not timed as a whole, as upstream).

Two views exist per profile. The plain one times only the extension points (which
PostFilter plugins ran is part of run_post_filter's own result). The sampled
one, used for a fraction of scheduling cycles (upstream: 10%, its
pluginMetricsSamplePercent), puts a timing proxy in front of every plugin, so each
plugin call lands in scheduler_plugin_execution_duration_seconds with its
extension point and status. The runtime itself is untouched: the views call its
methods; only their plugin lists differ.
"""
from __future__ import annotations

import inspect

from typing import Any, Callable

from actors.metrics_sink import MetricsSink, code_name
from framework.runtime import Framework

Timer = Callable[[], float]
# plugin, extension point, status name, seconds
PluginRecord = Callable[[str, str, str, float], None]


def _status_first(r: Any) -> Any:
    return r[0] if r is not None else None


def _status_second(r: Any) -> Any:
    return r[1] if r is not None else None


def _status_self(r: Any) -> Any:
    return r


def _first_failure(r: Any) -> Any:
    """A columnar Filter's verdicts: the first that is not Success, if any."""
    for st in r or ():
        if st is not None and not st.is_success():
            return st
    return None


def _run_status(r: Any) -> Any:
    """A PostFilterRun's folded Status."""
    return r.status if r is not None else None


def _no_status(r: Any) -> Any:
    return None


# Framework list attribute -> {plugin method: (extension point label, where its Status is, async?)}
PLUGIN_LISTS: dict[str, dict[str, tuple[str, Callable[[Any], Any], bool]]] = {
    "pre_filter_plugins": {"pre_filter": ("PreFilter", _status_second, False)},
    # Columnar forms are timed as one call over all the nodes they are given.
    "filter_plugins": {"filter": ("Filter", _status_self, False), "filter_nodes": ("Filter", _first_failure, False)},
    # A coroutine post_filter (DefaultPreemption's) is timed as async (TimedPlugin).
    "post_filter_plugins": {"post_filter": ("PostFilter", _status_second, False)},
    "pre_score_plugins": {"pre_score": ("PreScore", _status_self, False)},
    "score_plugins": {"score": ("Score", _status_second, False), "score_nodes": ("Score", _status_second, False)},
    "reserve_plugins": {"reserve": ("Reserve", _status_self, False), "unreserve": ("Unreserve", _no_status, False)},
    "permit_plugins": {"permit": ("Permit", _status_first, False)},
    "pre_bind_plugins": {"pre_bind": ("PreBind", _status_self, True)},
    "bind_plugins": {"bind": ("Bind", _status_self, True)},
    "post_bind_plugins": {"post_bind": ("PostBind", _no_status, False)},
}


# Framework method -> (extension point label, where its Status is, async?)
EXTENSION_POINTS: dict[str, tuple[str, Callable[[Any], Any], bool]] = {
    "run_pre_filter": ("PreFilter", _status_second, False),
    "run_post_filter": ("PostFilter", _run_status, True),
    "run_pre_score": ("PreScore", _status_self, False),
    "run_score": ("Score", _status_second, False),
    "run_reserve": ("Reserve", _status_self, False),
    "run_unreserve": ("Unreserve", _no_status, False),
    "run_permit": ("Permit", _status_first, False),
    "run_pre_bind": ("PreBind", _status_self, True),
    "run_bind": ("Bind", _status_self, True),
    "run_post_bind": ("PostBind", _no_status, False),
}


def timed(fn: Callable[..., Any], status_of: Callable[[Any], Any], report: Callable[[str, float], None],
          timer: Timer, is_async: bool) -> Callable[..., Any]:
    """`fn` reporting (status name, seconds) after each call; an exception is reported
    as Error and raised on."""
    if is_async:
        async def call_async(*args: Any, **kw: Any) -> Any:
            start = timer()
            try:
                result = await fn(*args, **kw)
            except Exception:
                report("Error", timer() - start)
                raise
            report(code_name(status_of(result)), timer() - start)
            return result
        return call_async

    def call(*args: Any, **kw: Any) -> Any:
        start = timer()
        try:
            result = fn(*args, **kw)
        except Exception:
            report("Error", timer() - start)
            raise
        report(code_name(status_of(result)), timer() - start)
        return result
    return call


class TimedPlugin:
    """A plugin behind a proxy that reports each call of the given methods; every
    other attribute is the plugin's own. The plugin's method is looked up at each
    call, so one replaced on the plugin object (tests record calls that way) runs."""

    def __init__(self, plugin: Any, methods: dict[str, tuple[str, Callable[[Any], Any], bool]],
                 record: PluginRecord, timer: Timer) -> None:
        self._plugin = plugin
        self.name = name = plugin.name
        for method, (point, status_of, is_async) in methods.items():
            if hasattr(plugin, method):
                def run(*args: Any, _m: str = method, **kw: Any) -> Any:
                    return getattr(plugin, _m)(*args, **kw)

                def report(status: str, seconds: float, _p: str = point) -> None:
                    record(name, _p, status, seconds)

                awaited = is_async or inspect.iscoroutinefunction(getattr(plugin, method))
                setattr(self, method, timed(run, status_of, report, timer, awaited))

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._plugin, attr)


class _FromBase:
    """A view attribute read live from the profile's Framework, for the names the
    cycle reads many times a pod: a class-level lookup instead of a failed one and
    __getattr__. It defines no __set__, so what the view sets on itself (its timed
    methods, its proxied plugin lists) still wins."""

    __slots__ = ("name",)

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, view: Any, owner: type | None = None) -> Any:
        if view is None:
            return self
        return getattr(view.__dict__["_base"], self.name)


class TimedFramework(Framework):
    """One profile's Framework with its extension points timed (see the module doc).
    Build it with `of()`, never through Framework's constructor: the plugins were
    built already and handed their Framework. The runtime's methods run with the
    view as `self`, so they see the view's plugin lists."""

    use_columnar = _FromBase()
    score_weights = _FromBase()
    handle = _FromBase()
    profile_name = _FromBase()
    percentage_of_nodes_to_score = _FromBase()
    pre_filter_plugins = _FromBase()
    filter_plugins = _FromBase()
    pre_score_plugins = _FromBase()
    score_plugins = _FromBase()
    reserve_plugins = _FromBase()
    permit_plugins = _FromBase()
    pre_bind_plugins = _FromBase()
    bind_plugins = _FromBase()
    post_bind_plugins = _FromBase()

    @classmethod
    def of(cls, fwk: Framework, sink: MetricsSink, timer: Timer, *,
           plugin_record: PluginRecord, proxied: tuple[str, ...]) -> "TimedFramework":
        """A view of `fwk`; the plugins of the lists named in `proxied` (keys of
        PLUGIN_LISTS) report every call to `plugin_record`."""
        view = cls.__new__(cls)
        view.__dict__["_base"] = fwk
        profile = fwk.profile_name
        for method, (point, status_of, is_async) in EXTENSION_POINTS.items():
            def report(status: str, seconds: float, _p: str = point) -> None:
                sink.extension_point(_p, status, profile, seconds)

            # The runtime's own method on this view, so the view's plugin lists run.
            run = getattr(Framework, method).__get__(view, cls)
            setattr(view, method, timed(run, status_of, report, timer, is_async))
        for attr in proxied:
            methods = PLUGIN_LISTS[attr]
            setattr(view, attr, [TimedPlugin(pl, methods, plugin_record, timer) for pl in getattr(fwk, attr)])
        return view

    def __getattr__(self, attr: str) -> Any:
        # Everything the view does not replace is read live from the profile's
        # Framework (a setting changed there after start-up holds here too).
        base = self.__dict__.get("_base")
        if base is None:
            raise AttributeError(attr)
        return getattr(base, attr)
