"""Shared pieces of the kill -9 loops (test_kill_kueue.py, test_kill_big_apply.py).

Knobs (environment variables; the defaults keep each loop to a few seconds in
`make test`):
- KSCHED_KILL_LOOPS: kill -9 cycles per loop (default 3);
- KSCHED_KILL_PODS: pods of each big apply (default 2000; the issue's size is 20000);
- KSCHED_KILL_SEED: the seed of every random choice, kill moments included (default 31).
"""
from __future__ import annotations

import os
import threading
from typing import Callable

import aiohttp

from transport.client.tcp import WatchEvent
from transport.protocol.wire import ApiError

from tests.e2e.conftest import DaemonProcess

KILL_LOOPS = int(os.environ.get("KSCHED_KILL_LOOPS", "3"))
KILL_PODS = int(os.environ.get("KSCHED_KILL_PODS", "2000"))
KILL_SEED = int(os.environ.get("KSCHED_KILL_SEED", "31"))


class Acks:
    """What the daemon acknowledged, from several client threads; `reached` is set
    once `target` acknowledgements have come in since the last `rearm`."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.items: list = []
        self.target = 0
        self.reached = threading.Event()

    def rearm(self, more: int) -> None:
        with self.lock:
            self.target = len(self.items) + more
            self.reached.clear()

    def add(self, items: list) -> None:
        with self.lock:
            self.items += items
            if len(self.items) >= self.target:
                self.reached.set()

    def snapshot(self) -> list:
        with self.lock:
            return list(self.items)


def until_killed(fn: Callable[[], None]) -> Callable[[], None]:
    """Run fn in a client thread; the daemon being killed under it ends it quietly."""
    def run() -> None:
        try:
            fn()
        except (ApiError, OSError, ConnectionError, aiohttp.ClientError):
            return
    return run


def start_thread(fn: Callable[[], None]) -> threading.Thread:
    t = threading.Thread(target=until_killed(fn), daemon=True)
    t.start()
    return t


class Watcher:
    """Feeds one daemon's watch of `kinds` into `sink` until the daemon dies or
    `retire` is called (a watch of a killed daemon keeps trying to reconnect to
    its old port: its thread is left to end by itself, its events are dropped)."""

    def __init__(self, d: DaemonProcess, kinds: list[str], sink: Callable[[WatchEvent], None]) -> None:
        self.active = True

        def run() -> None:
            with d.client() as c:
                for ev in c.watch(kinds):
                    if not self.active:
                        return
                    sink(ev)
        self.thread = start_thread(run)

    def retire(self) -> None:
        self.active = False

