"""`ksched serve`'s entry: load the configuration, pick the daemon (one process on
SQLite or memory, or an elected member of an etcd group), run it on uvloop when
installed, and turn its end into the exit status (3 after an invariant breach).
"""
from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from typing import Callable

from framework.api.errors import ValidationError
from transport.daemon.config import DaemonConfig
from transport.daemon.serve import Daemon, StartupError, load_serve_config
from transport.ha.daemon import HaDaemon


def _daemon_class(cfg: DaemonConfig) -> type[Daemon]:
    if cfg.store_backend == "etcd":
        return HaDaemon  # several daemons on one etcd, one elected leader
    return Daemon


def _loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


def serve_main(args: argparse.Namespace) -> int:
    try:
        scheduler_cfg, cfg = load_serve_config(args)
    except (StartupError, ValidationError) as exc:
        print(f"ksched serve: error: {exc}", file=sys.stderr)
        return 2
    logging.basicConfig(level=cfg.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    daemon = None
    try:
        with asyncio.Runner(loop_factory=_loop_factory()) as runner:
            daemon = _daemon_class(cfg)(scheduler_cfg, cfg)
            runner.run(daemon.run())
    except (StartupError, ValidationError) as exc:
        print(f"ksched serve: error: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"ksched serve: error: {exc}", file=sys.stderr)
        return 1
    if daemon is not None and daemon.breach is not None:
        print(f"ksched serve: stopped on an invariant breach: {daemon.breach}", file=sys.stderr)
        return 3
    return 0
