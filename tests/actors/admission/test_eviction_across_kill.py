"""An eviction cut short (as by kill -9) between deleting a pod and creating it again
gated: after a restart on the same SQLite file the pod is there, gated, the evicted
workload's quota is released and the preemptor admitted."""
from __future__ import annotations

import asyncio
import random
from typing import Any

from actors.admission.eviction_intent import EVICTING
from actors.admission.workloads import is_gated
from actors.clock import FakeClock
from actors.pipeline import Pipeline
from actors.store.sqlite import SQLiteBackend
from tests.actors.admission.kueue_objects import node, queued_pod
from tests.actors.admission.test_admission_actor import bound, cond, pods, two_teams, workloads


class CutShort:
    """The admission actor's store client, cut off where a kill -9 would stop it: the
    first create of a re-gated pod never happens (everything written before is durable)."""

    def __init__(self, store: Any) -> None:
        self._store = store
        self.cut = asyncio.Event()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    async def create(self, obj: dict[str, Any], **kw: Any) -> dict[str, Any]:
        if obj.get("kind") == "Pod" and is_gated(obj) and not self.cut.is_set():
            self.cut.set()
            await asyncio.Future()  # the process is gone
        return await self._store.create(obj, **kw)


async def test_a_pod_deleted_by_an_eviction_cut_short_is_created_again_gated_after_a_restart(tmp_path):
    db = str(tmp_path / "ksched.db")
    async with Pipeline(None, clock=FakeClock(), rand=random.Random(1), backend=SQLiteBackend(db)) as p:
        await p.client.apply(two_teams() + [node(f"n{i}", "4", tier="on-demand") for i in range(4)])
        for i in range(2):  # 8 cpu: team-b's 4 and team-a's idle 4
            await p.client.create(queued_pod(f"g{i}", "b", "4", group="gb", total=2))
        await p.run_until_quiescent(60)
        assert bound(p, "g") == 2
        before = {name: raw["metadata"]["uid"] for name, raw in pods(p).items()}
        cut = CutShort(p.admission.store)
        p.admission.store = cut
        await p.client.create(queued_pod("a0", "a", "2"))  # team-a reclaims: gb is evicted
        await asyncio.wait_for(cut.cut.wait(), 10)
        assert sorted(pods(p)) == ["a0", "g1"]  # g0 deleted, not yet created again
        p._tasks["admission"].cancel()  # the process is gone: the actor writes nothing more
    async with Pipeline(None, clock=FakeClock(), rand=random.Random(1), backend=SQLiteBackend(db)) as p:
        await p.run_until_quiescent(60)
        now = pods(p)
        assert sorted(now) == ["a0", "g0", "g1"]
        assert all(is_gated(now[g]) and now[g]["metadata"]["uid"] != before[g] for g in ("g0", "g1"))
        gb = workloads(p)["gb"]
        assert cond(gb, "QuotaReserved")["status"] == "False" and "admission" not in gb["status"]
        assert EVICTING not in (gb["metadata"].get("annotations") or {})
        assert bound(p, "a0") == 1
