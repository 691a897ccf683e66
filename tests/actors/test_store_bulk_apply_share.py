"""The bulk-apply share (StoreLimits.bulk_apply_scheduler_share): after a turn
that stored a client Apply of at least `bulk_apply_objects` objects, while
bindings came and client writes wait, the store yields the loop to the
scheduler for that share only; other turns keep the fair half. Work time is
injected: it moves only while the backend commits, by a known amount."""
from __future__ import annotations

import asyncio
from typing import Sequence

import pytest

from actors.base import new_reply
from actors.store import Store
from actors.store.backend import Write
from actors.store.limits import MAX_FAIR_PAUSE_SECONDS, StoreLimits, fair_pause
from actors.store.memory import InMemoryBackend
from actors.store.messages import Apply, Bind

from tests.actors.store_helpers import pod, serving

COMMIT_WORK = 0.004  # work seconds each commit takes on the injected work clock


class TimedBackend(InMemoryBackend):
    """Each commit moves the injected work clock by COMMIT_WORK; commits wait for
    the gate, so a test can queue messages while the store is busy."""

    def __init__(self) -> None:
        super().__init__()
        self.work = 0.0
        self.gate = asyncio.Event()
        self.gate.set()
        self.committing = asyncio.Event()

    def work_time(self) -> float:
        return self.work

    async def commit(self, writes: Sequence[Write]) -> None:
        self.committing.set()
        await self.gate.wait()
        self.committing.clear()
        self.work += COMMIT_WORK
        await super().commit(writes)


async def pause_after_a_turn_of(objects: int, limits: StoreLimits) -> float:
    """The store's fair pause after one turn holding an Apply of `objects` pods and a
    Bind, with one more client write waiting behind them."""
    backend = TimedBackend()
    store = Store(backend, limits=limits, work_time=backend.work_time)
    async with serving(store) as (store, c):
        await c.apply([pod("bind-me")])
        backend.gate.clear()
        first = asyncio.ensure_future(c.apply([pod("first")]))
        await backend.committing.wait()  # the store is busy: what follows queues up in its inbox
        asks = [Apply(objects=[pod(f"p{i}") for i in range(objects)], reply=new_reply()),
                Bind(namespace="default", name="bind-me", node_name="node-1", reply=new_reply()),
                Apply(objects=[pod("waiting")], reply=new_reply())]
        for msg in asks:
            store.tell(msg)
        before = store.fair_pause_seconds
        backend.gate.set()
        await asyncio.gather(first, *(m.reply for m in asks))
        assert store.reader().read("Pod", "default", "bind-me").node_name == "node-1"
        assert store.reader().read("Pod", "default", "waiting") is not None
        return store.fair_pause_seconds - before


LIMITS = StoreLimits(client_writes_per_turn=3, bulk_apply_objects=8, bulk_apply_scheduler_share=0.2)


async def test_after_a_bulk_apply_the_store_yields_the_bulk_share_to_bindings() -> None:
    assert await pause_after_a_turn_of(8, LIMITS) == pytest.approx(COMMIT_WORK * 0.2 / 0.8)


async def test_below_the_bulk_size_bindings_keep_half_of_the_loop() -> None:
    assert await pause_after_a_turn_of(7, LIMITS) == pytest.approx(COMMIT_WORK)


async def test_a_bulk_share_of_zero_does_not_pause_and_every_write_is_still_done() -> None:
    limits = StoreLimits(client_writes_per_turn=3, bulk_apply_objects=8, bulk_apply_scheduler_share=0.0)
    assert await pause_after_a_turn_of(20, limits) == 0.0


def test_the_fair_pause_is_the_share_of_the_turn_and_at_most_the_cap() -> None:
    assert fair_pause(0.01, 0.5) == pytest.approx(0.01)
    assert fair_pause(0.009, 0.1) == pytest.approx(0.001)
    assert fair_pause(1.0, 0.5) == MAX_FAIR_PAUSE_SECONDS
    assert fair_pause(0.01, 0.0) == 0.0


def test_a_bulk_share_above_half_is_refused() -> None:
    with pytest.raises(ValueError, match="bulk_apply_scheduler_share"):
        StoreLimits(bulk_apply_scheduler_share=0.6)


# --- share 0: the queue hands the scheduler no pod while a bulk apply is stored ------------------


def _node(name: str) -> dict:
    alloc = {"cpu": "64", "memory": "256Gi", "pods": "1000"}
    return {"kind": "Node", "metadata": {"name": name}, "status": {"capacity": alloc, "allocatable": alloc}}


async def attempts_when_a_bulk_apply_is_answered(share: float) -> tuple[int, int]:
    """(scheduling attempts made by the time a 600-pod apply is answered, pods bound once
    the pipeline settles), with a queued pod from before the apply waiting too."""
    from actors.clock import FakeClock
    from actors.pipeline import Pipeline

    limits = StoreLimits(bulk_apply_objects=256, bulk_apply_scheduler_share=share)
    async with Pipeline(None, clock=FakeClock(), store_limits=limits) as p:
        await p.client.apply([_node("n1")])
        await p.run_until_quiescent(10)
        first = asyncio.ensure_future(p.client.apply([pod("early")]))
        bulk = asyncio.ensure_future(p.client.apply([pod(f"p{i}") for i in range(600)]))
        await asyncio.gather(first, bulk)
        attempts = p.scheduler.stats.attempts
        await p.run_until_quiescent(60)
        bound = sum(1 for o in p.store.peek_all("Pod") if o.raw.get("spec", {}).get("nodeName"))
        return attempts, bound


async def test_with_a_share_of_zero_no_pod_is_scheduled_while_a_bulk_apply_is_stored_and_all_bind_after() -> None:
    attempts, bound = await attempts_when_a_bulk_apply_is_answered(0.0)
    assert (attempts, bound) == (0, 601)


async def test_with_a_share_above_zero_the_scheduler_works_while_a_bulk_apply_is_stored() -> None:
    attempts, bound = await attempts_when_a_bulk_apply_is_answered(0.1)
    assert attempts > 0 and bound == 601
