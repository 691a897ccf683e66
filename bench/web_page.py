"""The cluster page at scale, in Debian's Chromium: how long the first render takes and
how soon a live change shows. A benchmark, not a test (figures go to docs/performance.md):

    .venv/bin/python -m bench.web_page --nodes 5000 --pods 50000 [--json]

A real `ksched serve` subprocess on loopback; nodes in ten zones
(topology.kubernetes.io/zone) and pods already bound (spec.nodeName), applied over
msgpack TCP in chunks. Then one headless Chromium page (Playwright, as the page's
tests drive it):
  first_render_s  navigation start -> every node and pod received and the map drawn
                  (measured in the page, performance.now() in the frame that shows it)
  live_update_s   a node applied over TCP -> its map cell exists (median of --updates)
  dom_elements, page_height_px: what the browser holds once rendered.
Where the first render's time goes, from the same run:
  hello_s         navigation start -> the stream's first frame (page load, sign-in, the watch)
  last_frame_s    navigation start -> the last frame before the first render arrived
  page_handling_s time the page spent in its frame handler (JSON parse, reading rows,
                  the page's model); drawing is the rest of the main thread's time
  stream_mb       what the stream carried until then
  daemon_cpu_s    CPU seconds the daemon used from navigation to the first render
  probe_max_ms    the slowest /readyz answer while the page started, asked in a loop
                  on the daemon's HTTP port (its event loop is the one the stream runs on)
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
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any, Iterator

ROOT = Path(__file__).resolve().parents[1]
ZONES = 10
CHUNK = 2000
PROBE_PAUSE = 0.02  # seconds between the probe's requests
# Set by the page itself: the first frame in which everything has arrived and the map is drawn.
WATCH_FIRST_RENDER = """
window.__bench = {nodes: %d, pods: %d, bytes: 0, frames: 0, handling: 0, hello: null, lastFrame: null};
window.WebSocket = class extends window.WebSocket {  // when frames come, and the page's time on them
  constructor(...args) {
    super(...args);
    this.addEventListener("message", (ev) => {
      if (window.__firstRender !== undefined) return;
      const now = performance.now();
      __bench.hello ??= now; __bench.lastFrame = now; __bench.bytes += ev.data.length; __bench.frames += 1;
    });
  }
  set onmessage(handle) {
    super.onmessage = (ev) => {
      const t = performance.now();
      handle(ev);
      if (window.__firstRender === undefined) __bench.handling += performance.now() - t;
    };
  }
};
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


def cpu_seconds(pid: int) -> float:
    """User and system CPU of a process so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Probe:
    """GET /readyz in a loop on its own thread, PROBE_PAUSE apart, until stopped; the
    slowest answer."""

    def __init__(self, http: int) -> None:
        self.url = f"http://127.0.0.1:{http}/readyz"
        self.slowest = 0.0
        self.answers = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            t = time.perf_counter()
            with urllib.request.urlopen(self.url, timeout=30) as r:
                r.read()
            self.slowest = max(self.slowest, time.perf_counter() - t)
            self.answers += 1
            self._stop.wait(PROBE_PAUSE)  # paced: the probe should not be what loads the daemon

    def __enter__(self) -> "Probe":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


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
                        cpu = cpu_seconds(proc.pid)
                        with Probe(http) as probe:
                            page.goto(f"http://127.0.0.1:{http}/")
                            page.wait_for_function("window.__firstRender !== undefined", timeout=300_000)
                            cpu = cpu_seconds(proc.pid) - cpu
                        first = page.evaluate("window.__firstRender") / 1000
                        split = page.evaluate("__bench")
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
            "dom_elements": shape[0], "page_height_px": shape[1],
            "hello_s": round(split["hello"] / 1000, 3), "last_frame_s": round(split["lastFrame"] / 1000, 3),
            "page_handling_s": round(split["handling"] / 1000, 3), "frames": split["frames"],
            "stream_mb": round(split["bytes"] / 1e6, 1), "daemon_cpu_s": round(cpu, 2),
            "probe_max_ms": round(probe.slowest * 1000, 1), "probe_answers": probe.answers,
            "load1": os.getloadavg()[0]}


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
