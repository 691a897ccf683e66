"""Failure handling: one message's failure is that message's; an invariant breach
stops the system cleanly. The failures come from plugins that raise
(tests/actors/raising_plugins.py), loaded by import path as a user's would be."""
from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

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


async def test_a_plugin_raising_in_explain_fails_that_ask_only_and_the_scheduler_goes_on(caplog) -> None:
    caplog.set_level(logging.ERROR, logger="ksched.actors")
    async with Pipeline(config(raising_profile("score")), clock=FakeClock()) as p:
        await p.client.apply([node("n1")])
        await p.settle()
        with pytest.raises(RuntimeError, match="RaisingScore cannot score probe"):
            await p.scheduler.ask(Explain(pod=Pod(pod("probe", labels={"boom": "yes"})), reply=new_reply()))
        assert p.scheduler.failures == 1 and not p.broken
        assert any("actor scheduler failed handling Explain" in r.getMessage() for r in caplog.records)
        await p.client.apply([pod("after")])
        await p.settle()
        stored = Pod(await p.client.get("Pod", "default", "after"))
        assert stored.node_name == "n1"


async def test_a_queue_sort_plugin_that_raises_stops_the_pipeline_and_the_store_keeps_every_pod(tmp_path: Path) -> None:
    p = Pipeline(config(raising_profile("queueSort")), clock=FakeClock(), backend=SQLiteBackend(tmp_path))
    await p.start()
    try:
        # No node: the pods stay queued, so the third one is compared with the others.
        await p.client.apply([pod("a"), pod("b"), pod("boom", labels={"boom": "yes"}), pod("c")])
        await asyncio.wait_for(p.broken_event.wait(), timeout=30)  # a bound, not a timing claim
        assert p.breach is not None and p.breach.actor == "queue" and p.breach.msg_type == "AddPod"
        assert "RaisingSort cannot order" in str(p.breach)
    finally:
        await p.stop()
    assert p.phase == "stopped"
    reopened = Pipeline(config(raising_profile("score")), clock=FakeClock(), backend=SQLiteBackend(tmp_path))
    async with reopened:
        items, _ = await reopened.client.list("Pod")
    assert sorted(raw["metadata"]["name"] for raw in items) == ["a", "b", "boom", "c"]
