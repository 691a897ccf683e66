"""Health and metrics over real HTTP, and the metrics' upstream names."""
from __future__ import annotations

import aiohttp

from transport.http.app import HttpDeps, make_http_app, start_http
from transport.http.metrics import SchedulerMetrics


async def serve(deps: HttpDeps) -> tuple[object, str]:
    runner, (host, port) = await start_http(make_http_app(deps), "127.0.0.1", 0)
    return runner, f"http://{host}:{port}"


async def test_readyz_is_503_until_ready_and_health_is_always_ok():
    ready = {"now": False}
    runner, base = await serve(HttpDeps(ready=lambda: ready["now"], metrics=SchedulerMetrics()))
    try:
        async with aiohttp.ClientSession() as s:
            seen = []
            for flip in (False, True):
                ready["now"] = flip
                for path in ("/healthz", "/livez", "/readyz"):
                    async with s.get(base + path) as r:
                        seen.append((path, r.status))
        assert seen == [("/healthz", 200), ("/livez", 200), ("/readyz", 503),
                        ("/healthz", 200), ("/livez", 200), ("/readyz", 200)]
    finally:
        await runner.cleanup()  # type: ignore[attr-defined]


async def test_metrics_are_refreshed_on_scrape_and_named_as_kube_scheduler_names_them():
    m = SchedulerMetrics()
    scrapes = []

    async def refresh() -> None:
        scrapes.append(1)
        m.set_pending_pods({"active": 2, "backoff": 1, "unschedulable": 3, "gated": 0})

    m.schedule_attempt("scheduled", "default-scheduler", 0.003)
    m.schedule_attempt("unschedulable", "default-scheduler", 0.001)
    m.extension_point("Filter", "Success", "default-scheduler", 0.0002)
    m.plugin_execution("NodeResourcesFit", "Filter", "Success", 0.00002)
    m.permit_wait("Success", 0.5)
    m.preemption_attempt()
    m.preemption_victims(2)
    runner, base = await serve(HttpDeps(ready=lambda: True, metrics=m, refresh_metrics=refresh))
    try:
        async with aiohttp.ClientSession() as s:
            async with s.get(base + "/metrics") as r:
                assert r.status == 200
                assert r.headers["Content-Type"].startswith("text/plain")
                text = await r.text()
    finally:
        await runner.cleanup()  # type: ignore[attr-defined]
    assert scrapes == [1]
    for line in [
        'scheduler_schedule_attempts_total{profile="default-scheduler",result="scheduled"} 1.0',
        'scheduler_schedule_attempts_total{profile="default-scheduler",result="unschedulable"} 1.0',
        'scheduler_scheduling_attempt_duration_seconds_count{profile="default-scheduler",result="scheduled"} 1.0',
        'scheduler_pending_pods{queue="unschedulable"} 3.0',
        'scheduler_framework_extension_point_duration_seconds_count{extension_point="Filter",profile="default-scheduler",status="Success"} 1.0',
        'scheduler_plugin_execution_duration_seconds_count{extension_point="Filter",plugin="NodeResourcesFit",status="Success"} 1.0',
        'scheduler_permit_wait_duration_seconds_count{result="Success"} 1.0',
        "scheduler_preemption_attempts_total 1.0",
        "scheduler_preemption_victims_sum 2.0",
    ]:
        assert line in text, line
    assert "_created" not in text


def test_two_daemons_in_one_process_do_not_share_counters():
    a, b = SchedulerMetrics(), SchedulerMetrics()
    a.schedule_attempt("scheduled", "p", 0.1)
    assert a.sample("scheduler_schedule_attempts_total", {"result": "scheduled", "profile": "p"}) == 1.0
    assert b.sample("scheduler_schedule_attempts_total", {"result": "scheduled", "profile": "p"}) is None


async def test_readyz_is_503_from_the_moment_an_actor_breaches_and_the_daemon_is_asked_to_stop():
    from actors.base import InvariantBreach
    from framework.config import load_config
    from transport.daemon.serve import Daemon
    from transport.daemon.config import DaemonConfig

    daemon = Daemon(load_config(None), DaemonConfig())
    daemon._ready = True  # as after a start
    runner, base = await serve(HttpDeps(ready=daemon.ready, metrics=daemon.metrics))
    try:
        async with aiohttp.ClientSession() as s:
            async with s.get(base + "/readyz") as r:
                before = r.status
            daemon._on_breach(InvariantBreach("queue", "AddPod", "RuntimeError('boom')"))
            async with s.get(base + "/readyz") as r:
                after = r.status
        assert (before, after) == (200, 503)
        assert daemon.stop_requested.is_set() and "queue" in str(daemon.breach)
    finally:
        await runner.cleanup()  # type: ignore[attr-defined]


async def test_with_a_token_everything_but_the_health_checks_needs_it_as_a_bearer_token():
    refused = []
    runner, base = await serve(HttpDeps(ready=lambda: True, metrics=SchedulerMetrics(), token="s3cret",
                                        on_reject=refused.append))
    try:
        async with aiohttp.ClientSession() as s:
            seen = []
            for headers in ({}, {"Authorization": "Bearer nope"}, {"Authorization": "Bearer s3cret"}):
                for path in ("/healthz", "/livez", "/readyz", "/metrics", "/anything"):
                    async with s.get(base + path, headers=headers) as r:
                        seen.append(r.status)
        assert seen == [200, 200, 200, 401, 401, 200, 200, 200, 401, 401, 200, 200, 200, 200, 404]
        assert refused == ["http_auth_failed"] * 4
    finally:
        await runner.cleanup()  # type: ignore[attr-defined]
