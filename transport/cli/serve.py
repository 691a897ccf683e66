"""`ksched serve`'s entry: load the configuration, raise the soft descriptor limit
to the hard one (logged), pick the daemon (one process on SQLite or memory, or an
elected member of an etcd group), run it on uvloop when installed, and turn its end
into the exit status (3 after an invariant breach).
"""
from __future__ import annotations

import argparse
import asyncio
import logging
import resource
import sys
from typing import Callable

from framework.api.errors import ValidationError
from framework.features import FeatureGates
from transport.daemon.config import DaemonConfig
from transport.daemon.serve import IGNORED_SCHEDULER_FIELDS, Daemon, StartupError, load_serve_config
from transport.ha.daemon import HaDaemon

log = logging.getLogger("ksched.daemon")


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


def raise_descriptor_limit() -> tuple[int, int, int]:
    """Raise this process's soft RLIMIT_NOFILE to its hard limit (each connection
    is a descriptor; the soft limit is often 1024 while the hard one is far higher),
    and return (soft before, soft now, hard)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard
    if target == resource.RLIM_INFINITY:  # Linux refuses a soft limit above fs.nr_open
        target = max(soft, 1 << 20) if soft != resource.RLIM_INFINITY else soft
    for candidate in (target, 1 << 20, 10240):  # macOS caps the soft limit at OPEN_MAX
        if candidate <= soft:
            break
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (candidate, hard))
            break
        except (ValueError, OSError):
            continue
    return soft, resource.getrlimit(resource.RLIMIT_NOFILE)[0], hard


def _log_descriptor_limit(cfg: DaemonConfig) -> None:
    before, now, hard = raise_descriptor_limit()
    log.info("descriptor limit (RLIMIT_NOFILE): %d (was %d, hard limit %d)", now, before, hard)
    wanted = cfg.server_limits.max_connections + cfg.http_limits.max_connections
    if now != resource.RLIM_INFINITY and now < wanted + 64:
        log.warning("descriptor limit %d is below what the connection limits allow (%d msgpack + %d HTTP "
                    "connections, and the store's files): raise the hard limit (ulimit -Hn, LimitNOFILE=) "
                    "or lower limits.maxConnections/maxHttpConnections", now, cfg.server_limits.max_connections,
                    cfg.http_limits.max_connections)


def serve_main(args: argparse.Namespace) -> int:
    try:
        scheduler_cfg, cfg = load_serve_config(args)
    except (StartupError, ValidationError) as exc:
        print(f"ksched serve: error: {exc}", file=sys.stderr)
        return 2
    logging.basicConfig(level=cfg.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    _log_descriptor_limit(cfg)
    log.info("feature gates: %s", FeatureGates(scheduler_cfg.feature_gates).describe())
    for key in scheduler_cfg.not_applicable:  # said once, by name, so that no setting is dropped silently
        log.warning("KubeSchedulerConfiguration: %s is ignored: %s", key, IGNORED_SCHEDULER_FIELDS[key])
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
