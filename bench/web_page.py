"""The cluster page at scale, in Debian's Chromium: how long the first render takes and
how soon a live change shows. A benchmark, not a test (figures go to the README):

    .venv/bin/python -m bench.web_page --nodes 5000 --pods 50000 [--json]

A real `ksched serve` subprocess on loopback; nodes in ten zones
(topology.kubernetes.io/zone) and pods already bound (spec.nodeName), applied over
msgpack TCP in chunks. Then one headless Chromium page (Playwright, as the page's
tests drive it):
  first_render_s  navigation start -> every node and pod received and the map drawn
                  (measured in the page, performance.now() in the frame that shows it)
  live_update_s   a node applied over TCP -> its map cell exists (median of --updates)
  dom_elements, page_height_px: what the browser holds once rendered.
"""
from __future__ import annotations

import argparse
import json
from concurrent.futures import ThreadPoolExecutor
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any, Iterator

ROOT = Path(__file__).resolve().parents[1]
ZONES = 10
CHUNK = 2000
# Set by the page itself: the first frame in which everything has arrived and the map is drawn.
WATCH_FIRST_RENDER = """
window.__bench = {nodes: %d, pods: %d};
(function check() {
  // state and nodeMap are the page scripts' globals (lexical, so not on window)
  const s = typeof state === "undefined" ? null : state, m = typeof nodeMap === "undefined" ? null : nodeMap;
  if (s && m && s.objects.Node.size >= __bench.nodes && s.objects.Pod.size >= __bench.pods
      && document.querySelector('#map canvas') && m.visible.size > 0) { window.__firstRender = performance.now(); return; }
  requestAnimationFrame(check);
})();
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def nodes(n: int) -> Iterator[dict[str, Any]]:
    for i in range(n):
        yield {"apiVersion": "v1", "kind": "Node",
               "metadata": {"name": f"node-{i}", "labels": {"topology.kubernetes.io/zone": f"zone-{i % ZONES}"}},
               "status": {"allocatable": {"cpu": "32", "memory": "128Gi", "pods": "110"}}}


def pods(n: int, node_count: int) -> Iterator[dict[str, Any]]:
    for i in range(n):
        yield {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"pod-{i}"},
               "spec": {"nodeName": f"node-{(i * 7) % node_count}",
                        "containers": [{"name": "c", "image": "pause",
                                        "resources": {"requests": {"cpu": f"{100 + (i % 20) * 50}m", "memory": "1Gi"}}}]}}


def chunks(items: Iterator[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    batch: list[dict[str, Any]] = []
    for it in items:
        batch.append(it)
        if len(batch) == CHUNK:
            yield batch
            batch = []
    if batch:
        yield batch


def start_daemon(data_dir: str) -> tuple[subprocess.Popen[bytes], str, int]:
    port, http = free_port(), free_port()
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen([sys.executable, "-m", "transport.cli.main", "serve", "--data-dir", data_dir,
                             "--listen", f"127.0.0.1:{port}", "--http", f"127.0.0.1:{http}"],
                            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(600):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{http}/readyz", timeout=1):
                return proc, f"127.0.0.1:{port}", http
        except OSError:
            if proc.poll() is not None:
                raise SystemExit(f"ksched serve exited with {proc.returncode}")
            time.sleep(0.1)
    proc.kill()
    raise SystemExit("ksched serve did not become ready")


def measure(node_count: int, pod_count: int, updates: int, screenshot: str = "") -> dict[str, Any]:
    from playwright.sync_api import sync_playwright

    from tests.e2e.browser import CHROMIUM, FLAGS
    from transport.client.tcp import SyncClient

    with tempfile.TemporaryDirectory(prefix="ksched-bench-page-") as tmp:
        proc, server, http = start_daemon(tmp)
        try:
            # The client lives on its own thread: Playwright's sync API runs a loop on this one.
            with ThreadPoolExecutor(1) as worker, worker.submit(SyncClient, server, None, timeout=120).result() as sync:
                def apply(objects: list[dict[str, Any]]) -> None:
                    worker.submit(sync.apply, objects).result()

                t = time.perf_counter()
                for batch in chunks(nodes(node_count)):
                    apply(batch)
                for batch in chunks(pods(pod_count, node_count)):
                    apply(batch)
                apply_s = time.perf_counter() - t
                with tempfile.TemporaryDirectory(prefix="ksched-chromium-") as profile, sync_playwright() as pw:
                    ctx = pw.chromium.launch_persistent_context(profile, executable_path=CHROMIUM, headless=True,
                                                                args=FLAGS, viewport={"width": 1400, "height": 900})
                    try:
                        page = ctx.new_page()
                        page.add_init_script(WATCH_FIRST_RENDER % (node_count, pod_count))
                        page.goto(f"http://127.0.0.1:{http}/")
                        page.wait_for_function("window.__firstRender !== undefined", timeout=300_000)
                        first = page.evaluate("window.__firstRender") / 1000
                        if screenshot:
                            page.screenshot(path=screenshot)
                        shape = page.evaluate("[document.getElementsByTagName('*').length, "
                                              "document.documentElement.scrollHeight]")
                        live = []
                        for k in range(updates):
                            name = f"late-{k}"
                            t = time.perf_counter()
                            apply([{**next(nodes(1)), "metadata": {"name": name, "labels": {
                                "topology.kubernetes.io/zone": f"zone-{k % ZONES}"}}}])
                            page.wait_for_function(f"nodeMap.where.has('{name}')", polling="raf", timeout=60_000)
                            live.append(time.perf_counter() - t)
                    finally:
                        ctx.close()
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    return {"nodes": node_count, "pods": pod_count, "apply_s": round(apply_s, 2), "first_render_s": round(first, 3),
            "live_update_s": round(statistics.median(live), 3), "live_update_max_s": round(max(live), 3),
            "dom_elements": shape[0], "page_height_px": shape[1], "load1": os.getloadavg()[0]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.web_page", description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, default=5000, help="nodes to register (default: %(default)s)")
    ap.add_argument("--pods", type=int, default=50000, help="pods, already bound (default: %(default)s)")
    ap.add_argument("--updates", type=int, default=5, help="live updates timed (default: %(default)s)")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    ap.add_argument("--screenshot", default="", metavar="PNG", help="save the rendered page there (default: none)")
    args = ap.parse_args(argv)
    result = measure(args.nodes, args.pods, args.updates, args.screenshot)
    print(json.dumps(result) if args.json else "\n".join(f"{k:18} {v}" for k, v in result.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
