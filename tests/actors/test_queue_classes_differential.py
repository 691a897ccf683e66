"""Equivalence classes on and off give the same scheduling: over randomized
clusters and event sequences (hypothesis) with queued pods of one to four
templates (cpu, toleration, priority: each a signature; their rejectors, and so
their classes, vary with the nodes' taints and room, and the classes interleave
in the queue), the same pods bind to the same nodes in the same order, with the same conditions on bound pods, the same Scheduled
events and the same scheduling metrics; the pods left pending are pending in
both, rejected for the same reason. The random tie-break is the same seeded
Random in both runs, drawn by the same successful cycles in the same order.
The clock is a FakeClock that moves a microsecond at every reading, so queue
timestamps differ as a real clock makes them differ (pods of two classes with
equal timestamps are a tie upstream's heap breaks arbitrarily); the steps move
it by tenths of seconds, never landing on a backoff's whole seconds.

What is still not exact (members counted failed at one instant ordered by their
puts; SchedulerPopFromBackoffQ off; an unreached member updated, deleted or timed
out before its class wakes) is listed in docs/decisions.md; this test does not
steer towards it.

What differs by design (docs/decisions.md, "Equivalence classes in the queue"):
with classes on, parked siblings make no attempt, so fewer failed attempts,
FailedScheduling events and status writes; counted here too.
"""
from __future__ import annotations

import random
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from actors.clock import FakeClock
from actors.pipeline import Pipeline
from framework.api.objects import Pod
from tests.actors.helpers import node, pod
from tests.actors.test_metrics import RecordingSink

# DefaultPreemption draws the tie-break Random in failed cycles too (its candidate
# offset), and classes make fewer failed cycles: without it, only successful cycles
# draw, so the same seed breaks the same ties and the nodes can be compared exactly.
NO_PREEMPTION = {"profiles": [{"schedulerName": "default-scheduler",
                               "plugins": {"postFilter": {"disabled": [{"name": "DefaultPreemption"}]}}}]}
TAINT = {"key": "dedicated", "value": "batch", "effect": "NoSchedule"}
TOLERATION = {"key": "dedicated", "operator": "Equal", "value": "batch", "effect": "NoSchedule"}

# A queued pod's template: cpu request, whether it tolerates the taint, priority.
Template = tuple[str, bool, int]
template = st.tuples(st.sampled_from(["1", "2"]), st.booleans(), st.sampled_from([0, 0, 10]))
ops = st.one_of(
    st.tuples(st.just("complete"), st.integers(0, 50)),
    st.tuples(st.just("queue"), st.integers(0, 3)),
    st.tuples(st.just("node"), st.sampled_from(["1", "2", "3"]), st.booleans()),
    st.tuples(st.just("untaint"), st.integers(0, 10)),
    st.tuples(st.just("tick"), st.sampled_from([0.3, 1.7, 4.9, 11.3])),
)


class TickingClock(FakeClock):
    """A FakeClock whose every reading is a microsecond later than the last."""

    def now(self) -> float:
        self._now += 1e-6
        return self._now


def _node(name: str, cpu: str, tainted: bool) -> dict:
    n = node(name, cpu=cpu)
    if tainted:
        n["spec"] = {"taints": [TAINT]}
    return n


def _queued(name: str, template: Template) -> dict:
    cpu, tolerates, priority = template
    p = pod(name, cpu=cpu, memory="10Mi", priority=priority)
    if tolerates:
        p["spec"]["tolerations"] = [TOLERATION]
    return p


async def _pods(p: Pipeline) -> list[Pod]:
    items, _ = await p.client.list("Pod")
    return [Pod(o) for o in items]


async def _run(classes: bool, seed: int, nodes: list[tuple[str, bool]], templates: list[Template],
               queued: list[int], steps: list[tuple[Any, ...]]) -> dict[str, Any]:
    sink = RecordingSink()
    clock = TickingClock(1000.0)
    async with Pipeline(NO_PREEMPTION, clock=clock, rand=random.Random(seed), queue_classes=classes, metrics=sink) as p:
        node_objs = [_node(f"n{i}", cpu, tainted) for i, (cpu, tainted) in enumerate(nodes)]
        await p.client.apply(node_objs)
        running = [pod(f"run{i}", cpu="1", memory="10Mi") for i in range(sum(int(c) for c, _ in nodes))]
        for r in running:  # the running pods fill every node
            r["spec"]["tolerations"] = [TOLERATION]
        await p.client.apply(running)
        await p.settle()
        for i, t in enumerate(queued):
            await p.client.apply([_queued(f"q{i}", templates[t % len(templates)])])
            await p.settle()
        order: list[str] = []
        count = len(queued)
        for step in steps:
            match step:
                case ("complete", i):
                    bound = sorted(q.name for q in await _pods(p) if q.node_name)
                    if bound:
                        await p.client.delete("Pod", "default", bound[i % len(bound)])
                case ("queue", t):
                    await p.client.apply([_queued(f"q{count}", templates[t % len(templates)])])
                    count += 1
                case ("node", cpu, tainted):
                    node_objs.append(_node(f"n{len(node_objs)}", cpu, tainted))
                    await p.client.apply([node_objs[-1]])
                case ("untaint", i):
                    if node_objs:
                        n = node_objs[i % len(node_objs)]
                        n["spec"] = {}
                        await p.client.apply([n])
                case ("tick", seconds):
                    clock.advance(seconds)
            await p.settle()
            now_bound = {q.name for q in await _pods(p) if q.node_name}
            order.extend(sorted(n for n in now_bound if n.startswith("q") and n not in order))
        pods = {q.name: q for q in await _pods(p)}
        seen: dict[str, Any] = {}
        for name, stored in sorted(pods.items()):
            events = [(e.reason, e.message) for e in await p.client.events("Pod", f"default/{name}")]
            conditions = stored.raw.get("status", {}).get("conditions") or []
            if stored.node_name:
                seen[name] = ("bound", stored.node_name, conditions, [e for e in events if e[0] == "Scheduled"])
            else:
                seen[name] = ("pending", [(c.get("type"), c.get("status"), c.get("reason")) for c in conditions])
        counts = await p.pending_counts()
        return {
            "pods": seen,
            "order": order,
            "scheduled": sum(1 for c in sink.calls if c[:2] == ("schedule_attempt", "scheduled")),
            "pending": {k: counts[k] for k in ("active", "backoff", "unschedulable", "gated", "inFlight")},
            "failed": sum(1 for c in sink.calls if c[:2] == ("schedule_attempt", "unschedulable")),
        }


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**16), nodes=st.lists(st.tuples(st.sampled_from(["1", "2", "4"]), st.booleans()),
                                                 min_size=1, max_size=4),
       templates=st.lists(template, min_size=1, max_size=4), queued=st.lists(st.integers(0, 3), min_size=1, max_size=12),
       steps=st.lists(ops, min_size=1, max_size=12))
# Two classes interleaved (q3 of another template among four pods of one): q4
# slept through two of its class's failures, and q3 failed between them; its
# turn in the second is after q3's (the timestamp its first failure gave it).
@example(seed=0, nodes=[("1", False)], templates=[("1", False, 0), ("1", True, 0)], queued=[0, 0, 0, 1, 0],
         steps=[("complete", 0)] * 4)
# Three classes, two priorities: q5-q8 (priority 10) and q9 (0) are counted failed
# at one instant (just after q4's failure, before q10 was popped); upstream failed
# them one by one in backoff order, so the later rounds keep q6 before q9.
@example(seed=1646, nodes=[("1", False)], templates=[("1", False, 0), ("1", True, 0), ("1", True, 10), ("1", True, 10)],
         queued=[2, 3, 3, 2, 0, 3, 3, 3, 3, 0, 1],
         steps=[("node", "3", False), ("untaint", 5), ("queue", 2), ("node", "3", False), ("queue", 2), ("complete", 2),
                ("complete", 25), ("complete", 18), ("tick", 11.3)])
# q1 fails for another plugin than its class did (the taint went): q2 and q5, which
# it covered, take the new rejectors but keep their turns (q5 after q4's pop).
@example(seed=0, nodes=[("1", True)], templates=[("1", False, 10), ("1", True, 0), ("1", False, 0), ("1", True, 0)],
         queued=[0, 0, 0, 1], steps=[("complete", 0), ("queue", 2), ("complete", 27), ("node", "1", True), ("queue", 0),
                                     ("complete", 0), ("complete", 0), ("untaint", 5), ("complete", 22), ("complete", 0),
                                     ("complete", 0)])
async def test_classes_on_and_off_bind_the_same_pods_to_the_same_nodes(seed, nodes, templates, queued, steps) -> None:
    on = await _run(True, seed, nodes, templates, queued, steps)
    off = await _run(False, seed, nodes, templates, queued, steps)
    assert on["order"] == off["order"]
    assert on["pods"] == off["pods"]
    assert on["scheduled"] == off["scheduled"] and on["pending"] == off["pending"]
    assert on["failed"] <= off["failed"]  # the siblings' attempts saved


async def _preempting(classes: bool) -> tuple[set[str], int]:
    """2 nodes x 2 cpu full of low-priority pods; 3 alike high-priority pods queued
    each need a victim: one class, every member preempts in its turn."""
    async with Pipeline(None, clock=FakeClock(0.0), rand=random.Random(3), queue_classes=classes) as p:
        await p.client.apply([node("n0", cpu="2"), node("n1", cpu="2")])
        await p.client.apply([pod(f"low{i}", cpu="1", memory="10Mi", priority=0) for i in range(4)])
        await p.settle()
        await p.client.apply([pod(f"high{i}", cpu="1", memory="10Mi", priority=100) for i in range(3)])
        await p.settle()
        pods = await _pods(p)
        return {q.name for q in pods if q.node_name and q.name.startswith("high")}, \
            sum(1 for q in pods if q.name.startswith("low"))


async def test_preempting_members_of_one_class_bind_and_evict_as_with_classes_off() -> None:
    on = await _preempting(True)
    assert on == await _preempting(False)
    assert on == ({"high0", "high1", "high2"}, 1)
