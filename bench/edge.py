"""The process edge under abuse, against a real `ksched serve` with a token:

1. `--sockets` silent sockets held open on the HTTP port (default 5,000: more than
   a 4,096 descriptor limit), then /healthz and a msgpack `stats` timed while they
   are held (the HTTP cap closes the longest-idle socket to make room);
2. token guessing from one address for `--guess-seconds` over HTTP (Bearer), the
   page's WebSocket and the msgpack hello: how many guesses had their token
   compared (401 / Unauthorized) against how many were refused unread (429 /
   TooManyRequests) by the per-address throttle.

    python -m bench.edge [--sockets N] [--guess-seconds S] [--json]
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp

from transport.client.tcp import Client
from transport.protocol.framing import FrameDecoder, encode_frame

ROOT = Path(__file__).resolve().parents[1]
TOKEN = "bench-edge-token-0123456789"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ms(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000, 2)


async def _silent_flood(http: str, msgpack: str, port: int, sockets: int) -> dict[str, Any]:
    held = []
    for _ in range(sockets):
        held.append(await asyncio.open_connection("127.0.0.1", port))
    health, stats = [], []
    async with aiohttp.ClientSession() as s:
        for _ in range(200):
            t = time.perf_counter()
            async with s.get(http + "/healthz") as r:
                assert r.status == 200, r.status
            health.append(time.perf_counter() - t)
        c = await Client.connect(msgpack, token=TOKEN)
        for _ in range(200):
            t = time.perf_counter()
            await c.request("stats")
            stats.append(time.perf_counter() - t)
        await c.close()
        async with s.get(http + "/metrics", headers={"Authorization": f"Bearer {TOKEN}"}) as r:
            evicted = next((float(line.rsplit(" ", 1)[1]) for line in (await r.text()).splitlines()
                            if line.startswith('ksched_server_rejections_total{limit="http_idle_evicted"}')), 0.0)
    for _, w in held:
        w.close()
    return {"sockets": sockets, "healthzOk": len(health), "healthzP50Ms": _ms(health, 0.5),
            "healthzP99Ms": _ms(health, 0.99), "statsP99Ms": _ms(stats, 0.99), "evicted": int(evicted)}


async def _guess_http(http: str, seconds: float) -> dict[str, int]:
    seen: dict[str, int] = {}
    end = time.monotonic() + seconds
    async with aiohttp.ClientSession() as s:
        while time.monotonic() < end:
            async with s.get(http + "/metrics", headers={"Authorization": "Bearer guess"}) as r:
                seen[str(r.status)] = seen.get(str(r.status), 0) + 1
    return seen


async def _guess_ws(http: str, seconds: float) -> dict[str, int]:
    seen: dict[str, int] = {}
    end = time.monotonic() + seconds
    async with aiohttp.ClientSession() as s:
        while time.monotonic() < end:
            async with s.ws_connect(http.replace("http", "ws") + "/stream") as ws:
                await ws.send_json({"token": "guess", "resourceVersion": 0})
                reason = (await ws.receive_json()).get("reason", "?")
                seen[reason] = seen.get(reason, 0) + 1
    return seen


async def _guess_msgpack(host: str, port: int, seconds: float) -> dict[str, int]:
    seen: dict[str, int] = {}
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        reader, writer = await asyncio.open_connection(host, port)
        writer.write(encode_frame({"id": 1, "op": "hello", "token": "guess"}))
        decoder, frames = FrameDecoder(1 << 20), []
        while not frames and (data := await reader.read(65536)):
            frames = decoder.feed(data)
        reason = frames[0]["error"]["reason"] if frames else "closed"
        seen[reason] = seen.get(reason, 0) + 1
        writer.close()
    return seen


async def run(sockets: int, guess_seconds: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="ksched-bench-edge-") as tmp:
        token = os.path.join(tmp, "token")
        with open(token, "w") as f:
            f.write(TOKEN + "\n")
        os.chmod(token, 0o600)
        mport, hport = _free_port(), _free_port()
        env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        proc = subprocess.Popen([sys.executable, "-m", "transport.cli.main", "serve", "--data-dir", tmp + "/data",
                                 "--listen", f"127.0.0.1:{mport}", "--http", f"127.0.0.1:{hport}",
                                 "--token-file", token, "--log-level", "ERROR"],
                                cwd=ROOT, env=env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL)
        try:
            assert proc.stderr is not None
            while b"ksched serving on" not in (line := proc.stderr.readline()):
                if not line:
                    raise RuntimeError("ksched serve exited")
            http = f"http://127.0.0.1:{hport}"
            flood = await _silent_flood(http, f"127.0.0.1:{mport}", hport, sockets)
            guesses = {"seconds": guess_seconds, "http": await _guess_http(http, guess_seconds)}
            guesses["websocket"] = await _guess_ws(http, guess_seconds)
            guesses["msgpack"] = await _guess_msgpack("127.0.0.1", mport, guess_seconds)
        finally:
            proc.terminate()
            proc.wait()
    return {"silentHttpSockets": flood, "guessing": guesses, "loadavg": os.getloadavg()[0]}


def main() -> None:
    p = argparse.ArgumentParser(prog="python -m bench.edge", description=__doc__.split("\n\n")[0])
    p.add_argument("--sockets", type=int, default=5000)
    p.add_argument("--guess-seconds", type=float, default=5.0)
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    result = asyncio.run(run(args.sockets, args.guess_seconds))
    if args.json:
        print(json.dumps(result))
        return
    f, g = result["silentHttpSockets"], result["guessing"]
    print(f"{f['sockets']} silent HTTP sockets held: /healthz {f['healthzOk']}/200 ok, p50 {f['healthzP50Ms']} ms, "
          f"p99 {f['healthzP99Ms']} ms; msgpack stats p99 {f['statsP99Ms']} ms; {f['evicted']} idle sockets evicted")
    print(f"{g['seconds']:g} s of guessing from one address: HTTP {g['http']}, WebSocket {g['websocket']}, "
          f"msgpack {g['msgpack']} (load average {result['loadavg']:.1f})")


if __name__ == "__main__":
    main()
