"""After real scheduling (a gang that waits at Permit and preempts its way in),
GET /metrics has samples in every series kube-scheduler's dashboards read, all
recorded by the actors themselves."""
from __future__ import annotations

from pathlib import Path

import aiohttp
import yaml
from prometheus_client.parser import text_string_to_metric_families

from actors.clock import FakeClock
from actors.pipeline import Pipeline
from tests.gang.harness import node, pod, pod_group
from transport.http.app import HttpDeps, make_http_app, start_http
from transport.http.metrics import SchedulerMetrics

CONFIG = Path(__file__).resolve().parents[2] / "configs" / "coscheduling.yaml"

# series -> the sample that must be there and above zero
SERIES = {
    "scheduler_schedule_attempts_total": "scheduler_schedule_attempts_total",
    "scheduler_scheduling_attempt_duration_seconds": "scheduler_scheduling_attempt_duration_seconds_count",
    "scheduler_pending_pods": "scheduler_pending_pods",
    "scheduler_framework_extension_point_duration_seconds":
        "scheduler_framework_extension_point_duration_seconds_count",
    "scheduler_plugin_execution_duration_seconds": "scheduler_plugin_execution_duration_seconds_count",
    "scheduler_permit_wait_duration_seconds": "scheduler_permit_wait_duration_seconds_count",
    "scheduler_preemption_attempts_total": "scheduler_preemption_attempts_total",
    "scheduler_preemption_victims": "scheduler_preemption_victims_count",
}


def kinded(kind: str, raws: list[dict]) -> list[dict]:
    api = "scheduling.x-k8s.io/v1alpha1" if kind == "PodGroup" else "v1"
    return [{"apiVersion": api, "kind": kind, **r} for r in raws]


async def scrape(metrics: SchedulerMetrics) -> str:
    runner, (host, port) = await start_http(make_http_app(HttpDeps(ready=lambda: True, metrics=metrics)),
                                            "127.0.0.1", 0)
    try:
        async with aiohttp.ClientSession() as s, s.get(f"http://{host}:{port}/metrics") as r:
            assert r.status == 200
            return await r.text()
    finally:
        await runner.cleanup()


async def test_every_scheduler_series_has_samples_after_scheduling_over_the_pipeline() -> None:
    metrics = SchedulerMetrics()
    async with Pipeline(yaml.safe_load(CONFIG.read_text()), clock=FakeClock(1767225600.0), metrics=metrics) as p:
        await p.client.apply(kinded("Node", [node("n0", 4)]))
        await p.client.apply(kinded("Pod", [pod(f"low-{i}", 1) for i in range(4)]))
        await p.run_until_quiescent(max_seconds=5)
        await p.client.apply(kinded("PodGroup", [pod_group("vip", 2, timeout=60)]))
        await p.client.apply(kinded("Pod", [pod(f"vip-{i}", 2, "vip", priority=100) for i in range(2)]))
        await p.run_until_quiescent(max_seconds=120)
        bound = {o.name: o.node_name for o in p.store.peek_all("Pod")}
        assert bound == {"vip-0": "n0", "vip-1": "n0"}
        text = await scrape(metrics)

    samples: dict[str, list] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            samples.setdefault(s.name, []).append(s)
    missing = [series for series, sample in SERIES.items()
               if series != "scheduler_pending_pods" and not any(s.value > 0 for s in samples.get(sample, []))]
    assert missing == []
    assert {s.labels["queue"] for s in samples["scheduler_pending_pods"]} == {"active", "backoff", "unschedulable",
                                                                               "gated"}
    results = {s.labels["result"]: s.value for s in samples["scheduler_schedule_attempts_total"]}
    assert results["scheduled"] == 6 and results["unschedulable"] >= 1
    assert {s.labels["profile"] for s in samples["scheduler_schedule_attempts_total"]} == {"default-scheduler"}
    # Asynchronous preemption (the default): vip-1's cycle sees vip-0 nominated on n0 and
    # its two victims not yet deleted, so it needs all four low pods gone and counts them
    # (2 + 4), as upstream's prepareCandidateAsync observes its candidate's victims.
    assert [s.value for s in samples["scheduler_preemption_victims_sum"]] == [6.0]
    assert {s.labels["result"] for s in samples["scheduler_permit_wait_duration_seconds_count"]} == {"Success"}
