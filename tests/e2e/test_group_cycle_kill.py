"""kill -9 of a real daemon while the whole-group cycle's members are being bound:
after a restart on the same data directory every scheduling.k8s.io gang ends whole.

Each round applies 30 gangs of 8 and kills the daemon a random few milliseconds after
its first binding is seen, while the rest are being placed and bound. The store file
is then read as the restarted daemon will find it: a gang stored partly bound (its
members' bindings are written one by one) is counted; the restarted daemon counts its
bound members toward minCount and places the rest in one group cycle, so every round
ends with every gang whole and none partly bound."""
from __future__ import annotations

import json
import random
import sqlite3
import time
from collections import Counter
from pathlib import Path
from typing import Any

from tests.e2e.conftest import daemon_factory, poll  # noqa: F401 - the fixture is used by name
from tests.gang.test_group_cycle_pipeline import gang, member, nodes

GANGS, SIZE, ROUNDS = 30, 8, 3


def bound_per_gang(d: Any) -> Counter[str]:  # noqa: ANN401
    with d.client() as c:
        items, _ = c.list("Pod")
    return Counter(i["spec"]["schedulingGroup"]["podGroupName"] for i in items if i["spec"].get("nodeName"))


def stored_per_gang(data: Path) -> Counter[str]:
    """Bound members per gang in the store file a killed daemon left."""
    db = sqlite3.connect(f"file:{data / 'store.db'}?mode=ro", uri=True)
    try:
        rows = db.execute("SELECT body FROM objects WHERE kind = 'Pod'").fetchall()
    finally:
        db.close()
    pods = [json.loads(body) for (body,) in rows]
    return Counter(p["spec"]["schedulingGroup"]["podGroupName"] for p in pods if p["spec"].get("nodeName"))


def partial(counts: Counter[str]) -> list[str]:
    return [g for g, n in counts.items() if 0 < n < SIZE]


def test_gangs_killed_while_binding_end_whole_after_restart(daemon_factory, tmp_path: Path) -> None:  # noqa: F811
    rnd = random.Random(29)
    mid_stream = stored_partly = 0
    for r in range(ROUNDS):
        data = tmp_path / f"round-{r}"
        d = daemon_factory(data_dir=data)
        with d.client() as c:
            c.apply(nodes(*[8] * 40))
            c.apply([gang(f"g{i}", SIZE) for i in range(GANGS)])
            c.apply([member(f"g{i}-{j}", 1, f"g{i}") for i in range(GANGS) for j in range(SIZE)])
        poll(lambda: sum(bound_per_gang(d).values()) or None, "a first binding", attempts=2000, interval=0.002)
        time.sleep(rnd.uniform(0, 0.02))  # a random moment of the binding stream, not a wait for an event
        d.kill9()
        stored = stored_per_gang(data)
        mid_stream += 0 < sum(stored.values()) < GANGS * SIZE
        stored_partly += len(partial(stored))
        again = daemon_factory(data_dir=data)
        done = poll(lambda: (lambda n: n if sum(n.values()) == GANGS * SIZE else None)(bound_per_gang(again)),
                    "every gang bound after the restart", attempts=1200)
        assert partial(done) == [] and len(done) == GANGS
        again.terminate()
    assert mid_stream, "no round killed the daemon while gangs were being bound"
    print(f"rounds={ROUNDS} killed mid-stream={mid_stream} gangs stored partly bound at the kill={stored_partly}")
