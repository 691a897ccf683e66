"""explain and stats over the wire against the real actor pipeline (fake clock)."""
from __future__ import annotations

import pytest

from actors.clock import FakeClock
from actors.pipeline import Pipeline
from actors.store.memory import InMemoryBackend
from transport.client.tcp import Client
from transport.daemon.serve import pipeline_stats
from transport.server.explain import explain_on_live_snapshot
from transport.server.tcp import Server
from transport.server.service import StoreService
from transport.protocol.wire import ApiError, Reason

from tests.transport.conftest import node, pod


@pytest.fixture
async def cluster():
    pipeline = Pipeline(None, clock=FakeClock(), backend=InMemoryBackend())
    await pipeline.start()
    service = StoreService(pipeline.store, explain=lambda p: explain_on_live_snapshot(pipeline, p),
                           more_stats=lambda: pipeline_stats(pipeline), clock=pipeline.clock.now)
    server = Server(service)
    host, port = await server.start("127.0.0.1", 0)
    client = await Client.connect(f"{host}:{port}")
    yield pipeline, client
    await client.close()
    await server.close()
    await pipeline.stop()


async def test_explain_dry_runs_a_pod_on_the_live_state_without_changing_it(cluster):
    pipeline, c = cluster
    await c.apply([node("small", cpu="1"), node("big", cpu="8"), pod("filler", cpu="500m")])
    await pipeline.settle()
    rv = (await c.stats())["resourceVersion"]
    result = await c.explain(pod("probe", cpu="2"))
    assert result["chosen"] == "big"
    assert result["nodes"]["small"]["feasible"] is False
    assert result["nodes"]["small"]["filters"]["NodeResourcesFit"] == {
        "code": "UnschedulableAndUnresolvable", "reasons": ["Insufficient cpu"]}  # more than the node has at all
    assert result["nodes"]["big"]["scores"]["NodeResourcesFit"]["weight"] == 1
    stats = await c.stats()
    assert stats["resourceVersion"] == rv and stats["objects"]["Pod"] == 1  # nothing was written


async def test_explain_of_a_pod_that_fits_nowhere_gives_upstreams_message(cluster):
    pipeline, c = cluster
    await c.apply([node("n1", cpu="1"), node("n2", cpu="1")])
    await pipeline.settle()
    result = await c.explain(pod("huge", cpu="4"))
    assert result["chosen"] is None
    assert result["message"] == "0/2 nodes are available: 2 Insufficient cpu."


@pytest.mark.parametrize("raw, message", [
    pytest.param({**pod("p"), "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "x"}}}]}},
                 "pod.spec.containers[0].resources.requests[cpu]", id="bad-quantity"),
    pytest.param({**pod("p"), "spec": {"schedulerName": "nope", "containers": []}},
                 "pod.spec.schedulerName: no profile named 'nope'", id="unknown-profile"),
    pytest.param(node("n1"), "pod.kind: must be Pod", id="not-a-pod"),
])
async def test_explain_of_a_bad_pod_is_invalid_naming_the_field(cluster, raw, message):
    _, c = cluster
    with pytest.raises(ApiError) as err:
        await c.explain(raw)
    assert err.value.reason == Reason.INVALID and err.value.message.startswith(message)


async def test_stats_report_objects_queue_and_scheduler_counters(cluster):
    pipeline, c = cluster
    await c.apply([node("n1", cpu="1"), pod("a", cpu="500m"), pod("b", cpu="2")])
    await pipeline.settle()
    stats = await c.stats()
    assert stats["objects"] == {"Node": 1, "Pod": 2, "Event": 2}  # a Scheduled, b FailedScheduling (repeats count up)
    assert stats["scheduler"]["scheduled"] == 1 and stats["scheduler"]["failed"] >= 1
    assert stats["queue"]["unschedulable"] + stats["queue"]["backoff"] == 1
    assert stats["phase"] == "running" and stats["profiles"] == ["default-scheduler"]


async def test_explain_while_the_scheduler_is_stopped_is_unavailable():
    pipeline = Pipeline(None, clock=FakeClock(), backend=InMemoryBackend())
    await pipeline.start()
    await pipeline.stop()
    with pytest.raises(ApiError) as err:
        await explain_on_live_snapshot(pipeline, pod("p"))
    assert err.value.reason == Reason.UNAVAILABLE
