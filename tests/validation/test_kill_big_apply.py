"""A big apply killed midway: KSCHED_KILL_PODS pods (default 2,000; the issue's 20,000),
sent over msgpack as `ksched apply` sends them (apply requests of 500 objects, 4 in
flight) and over the REST API as kubectl does (one POST per object, several at once),
with the daemon killed by SIGKILL at a seeded random moment and restarted on the same
data directory, KSCHED_KILL_LOOPS times. After every restart: every acknowledged
chunk (every acknowledged POST) is there whole, and an unacknowledged chunk is whole
or absent, never partial."""
from __future__ import annotations

import asyncio
import random
from collections import Counter
from pathlib import Path
from typing import Any

import aiohttp

from transport.client.tcp import Client

from tests.e2e.conftest import DaemonProcess
from tests.validation.kill_loops import KILL_LOOPS, KILL_PODS, KILL_SEED, Acks, start_thread

CHUNK, WINDOW = 500, 4  # transport.cli.apply's --chunk-size default and its WINDOW
POSTS_IN_FLIGHT = 16


def pod(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "100m"}}}]}}


def chunk_names(loop: int) -> list[list[str]]:
    names = [f"m{loop}-{i:05d}" for i in range(KILL_PODS)]
    return [names[i:i + CHUNK] for i in range(0, len(names), CHUNK)]


async def send_chunks(c: Client, chunks: list[list[str]], acks: Acks) -> None:
    window = asyncio.Semaphore(WINDOW)

    async def one(i: int) -> None:
        async with window:
            await c.apply([pod(n) for n in chunks[i]])
        acks.add([i])
    await asyncio.gather(*(one(i) for i in range(len(chunks))))


async def post_pods(base_url: str, names: list[str], acks: Acks, refused: list[str]) -> None:
    window = asyncio.Semaphore(POSTS_IN_FLIGHT)
    async with aiohttp.ClientSession(base_url) as http:
        async def one(name: str) -> None:
            async with window:
                async with http.post("/api/v1/namespaces/default/pods", json=pod(name)) as r:
                    if r.status == 201:
                        acks.add([name])
                    else:
                        refused.append(f"POST {name}: {r.status} {await r.text()}")
        await asyncio.gather(*(one(n) for n in names))


def present_names(d: DaemonProcess) -> set[str]:
    with d.client() as c:
        items, _ = c.list("Pod", "default")
    return {p["metadata"]["name"] for p in items}


def test_a_big_msgpack_apply_killed_midway_keeps_every_chunk_whole_and_every_acknowledged_one(
        daemon_factory, tmp_path: Path, summary) -> None:
    rng = random.Random(KILL_SEED)
    data = tmp_path / "data"
    d = daemon_factory(data_dir=data)
    sent: list[tuple[list[list[str]], list[int]]] = []  # per loop: its chunks, the acknowledged ones
    figures: Counter[str] = Counter()
    for loop in range(KILL_LOOPS):
        chunks, acks = chunk_names(loop), Acks()
        acks.rearm(rng.randint(1, max(1, len(chunks) - 1)))
        client = d.client()
        sender = start_thread(lambda: client.run(lambda c: send_chunks(c, chunks, acks)))
        assert acks.reached.wait(timeout=300), "no chunk acknowledged"
        d.kill9()
        sender.join(timeout=60)  # replies read after the kill count as acknowledged too
        sent.append((chunks, acks.snapshot()))
        d = daemon_factory(data_dir=data)
        present = present_names(d)
        for chunks_of_loop, acked in sent:
            for i, names in enumerate(chunks_of_loop):
                there = sum(1 for n in names if n in present)
                kind = "acknowledged" if i in acked else "unacknowledged"
                outcome = "whole" if there == len(names) else "absent" if there == 0 else "partial"
                if loop == KILL_LOOPS - 1:  # the last restart sees every loop's chunks
                    figures[f"{kind} {outcome}"] += 1
                assert outcome == "whole" or (kind == "unacknowledged" and outcome == "absent"), \
                    f"chunk {i} of loop {sent.index((chunks_of_loop, acked))} ({kind}) is {outcome}: {there}/{len(names)}"
    assert d.terminate() == 0
    summary(f"big apply (msgpack, {KILL_PODS} pods in chunks of {CHUNK}) kill -9: kills={KILL_LOOPS} "
            + " ".join(f"{k}={v}" for k, v in sorted(figures.items())))


def test_a_big_rest_apply_killed_midway_loses_no_acknowledged_post(daemon_factory, tmp_path: Path, summary) -> None:
    rng = random.Random(KILL_SEED + 1)
    data = tmp_path / "data"
    d = daemon_factory(data_dir=data)
    acked: list[str] = []
    refused: list[str] = []  # a live daemon answered something other than 201 Created
    figures: Counter[str] = Counter()
    for loop in range(KILL_LOOPS):
        names, acks = [f"r{loop}-{i:05d}" for i in range(KILL_PODS)], Acks()
        acks.rearm(rng.randint(KILL_PODS // 10, KILL_PODS * 9 // 10))
        base = d.base_url
        sender = start_thread(lambda: asyncio.run(post_pods(base, names, acks, refused)))
        assert acks.reached.wait(timeout=300), "the POSTs were not acknowledged"
        d.kill9()
        sender.join(timeout=60)
        acked += acks.snapshot()
        figures["acknowledged"] = len(acked)
        d = daemon_factory(data_dir=data)
        present = present_names(d)
        lost = sorted(set(acked) - present)
        assert (lost, refused) == ([], []), f"after kill {loop + 1}: {len(lost)} acknowledged pods lost: {lost[:5]}"
        figures["unacknowledged present"] += len({n for n in names if n in present} - set(acks.snapshot()))
    assert d.terminate() == 0
    summary(f"big apply (REST, {KILL_PODS} POSTs, {POSTS_IN_FLIGHT} in flight) kill -9: kills={KILL_LOOPS} "
            f"acknowledged={figures['acknowledged']} lost=0 unacknowledged-but-present={figures['unacknowledged present']}")
