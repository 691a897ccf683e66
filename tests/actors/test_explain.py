"""Explain is a Scheduler message: answered between cycles on the actor's own cache."""
from __future__ import annotations

import pytest

from actors.base import MailboxClosed, new_reply
from actors.clock import FakeClock
from actors.pipeline import Pipeline
from actors.scheduler import Explain
from framework.api.objects import Pod
from tests.actors.helpers import node, pod


async def test_explain_sees_pods_bound_by_earlier_cycles_and_changes_nothing() -> None:
    async with Pipeline(None, clock=FakeClock()) as p:
        await p.client.apply([node("a", cpu="2"), node("b", cpu="2")])
        await p.client.apply([pod("filler", cpu="1500m")])
        await p.settle()
        filled = p.store.peek("Pod", "default", "filler").node_name
        rv = p.store.resource_version
        report = await p.scheduler.ask(Explain(pod=Pod(pod("probe", cpu="1")), reply=new_reply()))
        other = "b" if filled == "a" else "a"
        assert report["chosen"] == other
        assert report["nodes"][filled]["feasible"] is False
        assert p.store.resource_version == rv and p.scheduler.cache.get_pod("default/probe") is None


async def test_explain_for_an_unknown_profile_fails_the_ask_and_the_scheduler_carries_on() -> None:
    async with Pipeline(None, clock=FakeClock()) as p:
        await p.client.apply([node("a")])
        with pytest.raises(KeyError, match="no profile named 'elsewhere'"):
            await p.scheduler.ask(Explain(pod=Pod(pod("x", scheduler="elsewhere")), reply=new_reply()))
        await p.client.apply([pod("after")])
        await p.settle()
        assert p.store.peek("Pod", "default", "after").node_name == "a"


async def test_explain_after_the_scheduler_stopped_is_refused() -> None:
    p = Pipeline(None, clock=FakeClock())
    await p.start()
    await p.stop()
    with pytest.raises(MailboxClosed):
        await p.scheduler.ask(Explain(pod=Pod(pod("x")), reply=new_reply()))


async def test_a_bound_pod_is_explained_as_if_it_were_not_bound_and_still_counts_afterwards() -> None:
    async with Pipeline(None, clock=FakeClock()) as p:
        await p.client.apply([node("a", cpu="2")])
        await p.client.apply([pod("web", cpu="1500m")])
        await p.settle()
        stored = p.store.peek("Pod", "default", "web")
        assert stored.node_name == "a"
        report = await p.scheduler.ask(Explain(pod=stored, reply=new_reply()))
        assert report["nodes"]["a"]["feasible"] is True, report["nodes"]["a"]  # not "Insufficient cpu" against itself
        assert report["chosen"] == "a"
        assert p.scheduler.cache.get_pod("default/web").node_name == "a"
        await p.client.apply([pod("other", cpu="1")])  # web still counts on a: other does not fit
        await p.settle()
        assert p.store.peek("Pod", "default", "other").node_name == ""


async def test_explain_and_a_cycle_agree_when_a_pod_is_nominated_to_the_node() -> None:
    """The nominated pod counts on its node in explain as in a cycle: neither places
    the probe there."""
    async with Pipeline(None, clock=FakeClock()) as p:
        await p.client.apply([node("n1", cpu="1")])
        await p.settle()
        nominated = Pod({**pod("nominated", cpu="800m", priority=100), "status": {"nominatedNodeName": "n1"}})
        p.scheduler.nominator.add(nominated, "n1")  # as a preemption on n1 would leave it
        probe = pod("probe", cpu="500m", priority=0)
        report = await p.scheduler.ask(Explain(pod=Pod(probe), reply=new_reply()))
        await p.client.apply([probe])
        await p.settle()
        assert p.store.peek("Pod", "default", "probe").node_name == ""  # the cycle: n1 is taken
        assert report["chosen"] is None
        assert report["nodes"]["n1"]["feasible"] is False
        assert report["nodes"]["n1"]["filters"]["NodeResourcesFit"] == {"code": "Unschedulable",
                                                                        "reasons": ["Insufficient cpu"]}
        [condition] = [c for c in p.store.peek("Pod", "default", "probe").raw["status"]["conditions"]
                       if c["type"] == "PodScheduled"]
        assert condition["message"].startswith(report["message"].rstrip("."))
