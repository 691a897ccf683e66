"""Failure handling: one message's failure is that message's; an invariant breach
stops the system cleanly. The failures come from plugins that raise
(tests/actors/raising_plugins.py), loaded by import path as a user's would be."""
from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from actors.base import new_reply
from actors.clock import FakeClock
from actors.pipeline import Pipeline
from actors.scheduler import Explain
from actors.store.sqlite import SQLiteBackend
from framework.api.objects import Pod
from tests.actors.helpers import config, node, pod

SORT = "tests.actors.raising_plugins:RaisingSort"
SCORE = "tests.actors.raising_plugins:RaisingScore"


def raising_profile(point: str) -> dict:
    plugins: dict = {
        "multiPoint": {"disabled": [{"name": "*"}]},
        "queueSort": {"enabled": [{"name": "PrioritySort"}]},
        "preFilter": {"enabled": [{"name": "NodeResourcesFit"}]},
        "filter": {"enabled": [{"name": "NodeResourcesFit"}]},
        "bind": {"enabled": [{"name": "DefaultBinder"}]},
    }
    if point == "queueSort":
        plugins["queueSort"] = {"enabled": [{"name": SORT}]}
    else:
        plugins["score"] = {"enabled": [{"name": SCORE, "weight": 1}]}
    return {"schedulerName": "default-scheduler", "plugins": plugins}


async def test_a_plugin_raising_in_explain_is_the_error_a_cycle_would_give_and_the_scheduler_goes_on() -> None:
    async with Pipeline(config(raising_profile("score")), clock=FakeClock()) as p:
        await p.client.apply([node("n1"), node("n2")])
        await p.settle()
        probe = pod("probe", labels={"boom": "yes"})
        report = await p.scheduler.ask(Explain(pod=Pod(probe), reply=new_reply()))
        assert report["chosen"] is None and "RaisingScore cannot score probe" in report["error"]
        assert p.scheduler.failures == 0 and not p.broken
        await p.client.apply([probe])  # the cycle fails the attempt with the same words
        await p.settle()
        [condition] = [c for c in p.store.peek("Pod", "default", "probe").raw["status"]["conditions"]
                       if c["type"] == "PodScheduled"]
        assert condition["message"] == report["error"]
        await p.client.apply([pod("after")])
        await p.settle()
        stored = Pod(await p.client.get("Pod", "default", "after"))
        assert stored.node_name in ("n1", "n2")


async def test_a_queue_sort_plugin_that_raises_is_an_error_for_its_pod_which_is_retried_with_backoff(caplog) -> None:
    caplog.set_level(logging.ERROR, logger="ksched.queue")
    clock = FakeClock()
    async with Pipeline(config(raising_profile("queueSort")), clock=clock) as p:
        # No node yet: the pods wait in activeQ, where "boom" is compared with them
        # and the QueueSort plugin raises.
        await p.client.apply([pod("a"), pod("b"), pod("boom", labels={"boom": "yes"}), pod("c")])
        await p.settle()
        assert not p.broken
        assert any("default/boom" in r.getMessage() and 'QueueSort plugin "RaisingSort"' in r.getMessage()
                   and "RaisingSort cannot order" in r.getMessage() for r in caplog.records)
        await p.client.apply([node("n1")])
        await p.settle()
        for _ in range(10):  # the error backoff runs out; alone in activeQ, boom is compared with nobody
            clock.advance(10)
            await p.settle()
        bound = {raw["metadata"]["name"]: raw["spec"].get("nodeName") for raw in (await p.client.list("Pod"))[0]}
    assert bound == {"a": "n1", "b": "n1", "boom": "n1", "c": "n1"} and not p.broken


async def test_a_pre_enqueue_plugin_that_raises_keeps_its_pod_gated_and_logs_the_plugin(caplog) -> None:
    caplog.set_level(logging.ERROR, logger="ksched.queue")
    profile = raising_profile("score")
    profile["plugins"]["preEnqueue"] = {"enabled": [{"name": "tests.actors.raising_plugins:RaisingPreEnqueue"}]}
    async with Pipeline(config(profile), clock=FakeClock()) as p:
        await p.client.apply([node("n1"), pod("ok"), pod("boom", labels={"boom": "yes"})])
        await p.settle()
        counts = await p.pending_counts()
        bound = {raw["metadata"]["name"]: raw["spec"].get("nodeName") for raw in (await p.client.list("Pod"))[0]}
    assert not p.broken and bound == {"ok": "n1", "boom": None} and counts["gated"] == 1
    assert any('pod default/boom: running PreEnqueue plugin "RaisingPreEnqueue": RaisingPreEnqueue cannot admit boom'
               in r.getMessage() for r in caplog.records)
