"""An eviction cut short (as by kill -9) between re-gating one pod and the next: no pod
was absent at any moment, and after a restart on the same SQLite file every pod of
the evicted workload is gated, its quota is released and the preemptor admitted."""
from __future__ import annotations

import asyncio
import random
from typing import Any

from actors.admission.actor import AdmissionActor
from actors.admission.workloads import is_gated
from actors.clock import FakeClock
from actors.pipeline import Pipeline
from actors.store.sqlite import SQLiteBackend
from tests.actors.admission.kueue_objects import node, queued_pod
from tests.actors.admission.test_admission_actor import bound, cond, pods, two_teams, workloads


class CutShort:
    """The admission actor's store client, cut off where a kill -9 would stop it: the
    second re-gating never happens (everything written before is durable)."""

    def __init__(self, store: Any) -> None:
        self._store = store
        self.regated = 0
        self.cut = asyncio.Event()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    async def recreate(self, obj: dict[str, Any], **kw: Any) -> dict[str, Any]:
        if self.regated == 1:
            self.cut.set()
            await asyncio.Future()  # the process is gone
        self.regated += 1
        return await self._store.recreate(obj, **kw)


async def test_an_eviction_cut_short_never_leaves_a_pod_absent_and_a_restart_finishes_it(tmp_path):
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
        now = pods(p)
        assert sorted(now) == ["a0", "g0", "g1"]  # one re-gated, one still running: none absent
        assert sum(is_gated(now[g]) for g in ("g0", "g1")) == 1
        p._tasks["admission"].cancel()  # the process is gone: the actor writes nothing more
        # A restart's replay may bring the pods before their Workload: the one the actor
        # then finds stored (AlreadyExists) is taken with its unfinished eviction too.
        fresh = AdmissionActor(p.client, FakeClock())
        gb = workloads(p)["gb"]
        await fresh._create_workload({"apiVersion": gb["apiVersion"], "kind": "Workload", "spec": gb["spec"],
                                      "metadata": {"name": "gb", "namespace": "default"}})
        assert fresh.unfinished_evictions == {"default/gb"}
    async with Pipeline(None, clock=FakeClock(), rand=random.Random(1), backend=SQLiteBackend(db)) as p:
        await p.run_until_quiescent(60)
        now = pods(p)
        assert sorted(now) == ["a0", "g0", "g1"]
        assert all(is_gated(now[g]) and now[g]["metadata"]["uid"] != before[g] for g in ("g0", "g1"))
        gb = workloads(p)["gb"]
        assert cond(gb, "QuotaReserved")["status"] == "False" and "admission" not in gb["status"]
        assert bound(p, "a0") == 1
