"""Incremental failure on and off give the same scheduling: over randomized clusters
and event sequences (hypothesis), with queued pods of several templates (cpu,
toleration, priority: some preempt the running pods), the same pods bind to the
same nodes in the same order, with the same conditions and events on every pod
(FailedScheduling's FitError message included), the same nominations and the same
scheduling metrics. Queue classes and failure reuse are on in both runs: only the
Filter pass of a class's retry differs (framework/incremental_failure.py).

Not compared: scheduler_plugin_execution_duration_seconds observations of sampled
cycles, one per Filter call (a columnar call covers many nodes): the incremental
pass calls Filter on the changed nodes only, so it makes fewer (upstream records
one per node it filters, which a full pass also does not match).
"""
from __future__ import annotations

import random
from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from actors.pipeline import Pipeline
from framework import incremental_failure
from tests.actors.helpers import node, pod
from tests.actors.test_metrics import RecordingSink
from tests.actors.test_queue_classes_differential import TOLERATION, TickingClock, _node, _pods

# cpu request, tolerates the taint, priority (the running pods have 5: 10 preempts them)
templates = st.tuples(st.sampled_from(["1", "2"]), st.booleans(), st.sampled_from([0, 10]))
ops = st.one_of(
    st.tuples(st.just("complete"), st.integers(0, 50)),
    st.tuples(st.just("queue"), templates),
    st.tuples(st.just("node"), st.sampled_from(["1", "2", "3"]), st.booleans()),
    st.tuples(st.just("untaint"), st.integers(0, 10)),
    st.tuples(st.just("tick"), st.sampled_from([0.3, 1.7, 4.9, 11.3])),
)


def _queued(name: str, template: tuple[str, bool, int]) -> dict:
    cpu, tolerates, priority = template
    p = pod(name, cpu=cpu, memory="10Mi", priority=priority)
    if tolerates:
        p["spec"]["tolerations"] = [TOLERATION]
    return p


async def _run(incremental: bool, seed: int, nodes: list[tuple[str, bool]], queued: list[tuple[str, bool, int]],
               steps: list[tuple[Any, ...]]) -> dict[str, Any]:
    sink = RecordingSink()
    clock = TickingClock(1000.0)
    async with Pipeline(None, clock=clock, rand=random.Random(seed), incremental_failures=incremental,
                        metrics=sink) as p:
        node_objs = [_node(f"n{i}", cpu, tainted) for i, (cpu, tainted) in enumerate(nodes)]
        await p.client.apply(node_objs)
        running = [pod(f"run{i}", cpu="1", memory="10Mi", priority=5) for i in range(sum(int(c) for c, _ in nodes))]
        for r in running:  # the running pods fill every node
            r["spec"]["tolerations"] = [TOLERATION]
        await p.client.apply(running)
        await p.settle()
        for i, template in enumerate(queued):
            await p.client.apply([_queued(f"q{i}", template)])
            await p.settle()
        order: list[tuple[str, str]] = []
        count = len(queued)
        for step in steps:
            match step:
                case ("complete", i):
                    bound = sorted(q.name for q in await _pods(p) if q.node_name)
                    if bound:
                        await p.client.delete("Pod", "default", bound[i % len(bound)])
                case ("queue", template):
                    await p.client.apply([_queued(f"q{count}", template)])
                    count += 1
                case ("node", cpu, tainted):
                    node_objs.append(_node(f"n{len(node_objs)}", cpu, tainted))
                    await p.client.apply([node_objs[-1]])
                case ("untaint", i):
                    n = node_objs[i % len(node_objs)]
                    n["spec"] = {}
                    await p.client.apply([n])
                case ("tick", seconds):
                    clock.advance(seconds)
            await p.settle()
            done = {name for name, _ in order}
            order.extend(sorted((q.name, q.node_name) for q in await _pods(p) if q.node_name and q.name not in done))
        seen: dict[str, Any] = {}
        for q in sorted(await _pods(p), key=lambda q: q.name):
            events = [(e.reason, e.message) for e in await p.client.events("Pod", f"default/{q.name}")]
            seen[q.name] = (q.node_name, q.nominated_node_name, q.raw.get("status", {}).get("conditions"), events)
        return {
            "pods": seen,
            "order": order,
            "metrics": [c for c in sink.calls if c[0] != "plugin_execution"],
            "refiltered": p.scheduler.last_failures.refiltered,
        }


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**16), nodes=st.lists(st.tuples(st.sampled_from(["1", "2", "4"]), st.booleans()),
                                                 min_size=1, max_size=5),
       queued=st.lists(templates, min_size=1, max_size=10), steps=st.lists(ops, min_size=1, max_size=12),
       few=st.sampled_from([0, incremental_failure.FEW_NODES_PER_NODE]))
async def test_incremental_failure_on_and_off_give_the_same_binds_messages_events_and_metrics(
        seed, nodes, queued, steps, few) -> None:
    # `few` 0: every retry's changed nodes go through the columnar pass where it applies
    kept, incremental_failure.FEW_NODES_PER_NODE = incremental_failure.FEW_NODES_PER_NODE, few
    try:
        on = await _run(True, seed, nodes, queued, steps)
    finally:
        incremental_failure.FEW_NODES_PER_NODE = kept
    off = await _run(False, seed, nodes, queued, steps)
    assert off["refiltered"] == 0
    assert on["order"] == off["order"]
    assert on["pods"] == off["pods"]
    assert on["metrics"] == off["metrics"]
    event(f"incremental retries: {min(on['refiltered'], 3)}{'+' if on['refiltered'] >= 3 else ''}")


async def test_a_woken_class_filters_only_the_nodes_a_completion_changed() -> None:
    """Ten 1-cpu nodes full, three pods of one class queued: each completion frees
    one node, the class's retry filters that node alone (the other nine statuses
    are the last failure's), binds there, and the follower fails on the same
    message a full pass gives."""
    async with Pipeline(None, clock=TickingClock(1000.0), rand=random.Random(1)) as p:
        await p.client.apply([node(f"n{i}", cpu="1") for i in range(10)])
        await p.client.apply([pod(f"run{i}", cpu="1", memory="10Mi") for i in range(10)])
        await p.settle()
        await p.client.apply([pod(f"q{i}", cpu="1", memory="10Mi") for i in range(3)])
        await p.settle()
        freed = [q.node_name for q in sorted(await _pods(p), key=lambda q: q.name) if q.name in ("run0", "run1")]
        for i in range(2):
            await p.client.delete("Pod", "default", f"run{i}")
            await p.settle()
        pods = {q.name: q for q in await _pods(p)}
        assert [pods[f"q{i}"].node_name for i in range(3)] == [*freed, ""]
        ledger = p.scheduler.last_failures
        assert ledger.refiltered >= 2 and ledger.nodes_reused >= 2 * 9
        conditions = pods["q2"].raw["status"]["conditions"]
        assert conditions[0]["message"].startswith("0/10 nodes are available: 10 Insufficient cpu.")


async def test_a_preemptors_first_attempt_refilters_only_the_nodes_the_last_preemption_changed() -> None:
    """Ten full 4-cpu nodes, three 3-cpu preemptors of one class queued at once:
    each preemptor's nomination moves the nominator, yet the next one's first
    attempt takes the class's last failure over and filters only the nodes whose
    nominations or pods moved since; every preemptor still evicts three pods on a
    node of its own and binds there, with the same FailedScheduling message a full
    pass gives."""
    async with Pipeline(None, clock=TickingClock(1000.0), rand=random.Random(3)) as p:
        await p.client.apply([node(f"n{i}", cpu="4") for i in range(10)])
        await p.client.apply([pod(f"low{i}", cpu="900m", memory="10Mi") for i in range(40)])
        await p.settle()
        await p.client.apply([pod(f"high{i}", cpu="3", memory="10Mi", priority=10) for i in range(3)])
        await p.settle()
        pods = {q.name: q for q in await _pods(p)}
        placed = [pods[f"high{i}"].node_name for i in range(3)]
        assert all(placed) and len(set(placed)) == 3
        assert sum(1 for name in pods if name.startswith("low")) == 40 - 9
        ledger = p.scheduler.last_failures
        assert ledger.refiltered >= 2 and ledger.nodes_reused >= 2 * 8
        for i in range(3):
            events = [e.message for e in await p.client.events("Pod", f"default/high{i}")
                      if e.reason == "FailedScheduling"]
            assert events and events[0].startswith("0/10 nodes are available: 10 Insufficient cpu.")


async def test_a_pod_whose_requests_no_kept_class_has_is_not_signed_for_one_and_a_sibling_still_is() -> None:
    """Big pods that fit nowhere leave their class's failure kept; small pods then
    schedule without asking for a kept failure (their requests are no kept class's,
    so no signature of theirs could be one), while the next big pod still takes its
    class's failure over and filters only the nodes that changed."""
    async with Pipeline(None, clock=TickingClock(1000.0), rand=random.Random(5)) as p:
        await p.client.apply([node(f"n{i}", cpu="2") for i in range(4)])
        await p.client.apply([pod("big0", cpu="3", memory="10Mi")])
        await p.settle()
        ledger = p.scheduler.last_failures
        assert len(ledger) == 1
        asked = ledger.looked_up
        await p.client.apply([pod(f"small{i}", cpu="100m", memory="10Mi") for i in range(5)])
        await p.settle()
        pods = {q.name: q for q in await _pods(p)}
        assert all(pods[f"small{i}"].node_name for i in range(5)) and not pods["big0"].node_name
        assert ledger.looked_up == asked
        await p.client.apply([pod("big1", cpu="3", memory="10Mi")])
        await p.settle()
        assert ledger.looked_up == asked + 1 and ledger.refiltered >= 1
