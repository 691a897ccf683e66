"""`ksched serve`: the daemon around the actor pipeline.

Start, in dependency order: the store loads from its backend (SQLite in DIR), the
actors start (actors.pipeline.Pipeline), then the msgpack listener and HTTP. Only
then is /readyz 200.

Stop, on SIGTERM or SIGINT, in named phases: not ready; stop listening; stop
reading from connections and answer every request already read (within the grace
period; open watches end Unavailable); the pipeline stops (queue, current cycle, Permit waiters rejected, binding cycles
drained within the grace period, store flushed and closed); client connections and
HTTP close. A second signal exits at once (whatever the store committed is
durable; pods between assume and bind are simply unbound and will be scheduled
again at the next start).
"""
from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import ssl
import sys
import time
from pathlib import Path
from typing import Any, Callable, Mapping

from actors.metrics_sink import percentile
from actors.pipeline import Pipeline
from actors.store.backend import StoreBackend
from actors.store.memory import InMemoryBackend
from actors.store.sqlite import DataDirLocked, SQLiteBackend, StoreUnreadable
from framework.api.errors import ValidationError
from framework.config import ConfigError, SchedulerConfig, build_frameworks, load_config
from framework.api.workload_api import gated_off
from framework.features import FeatureGateError, FeatureGates, check_settable, parse_gate_flag
from framework.handle import FrameworkHandle
from transport.daemon.gc_tuning import tune_after_start
from transport.daemon.system_namespaces import create_system_namespaces
from transport.daemon.config import DaemonConfig, ServeConfig, apply_flags, parse_config_text
from transport.server.explain import explain_on_live_snapshot
from transport.http.app import HttpDeps, make_http_app, start_http
from transport.kube import KubeDeps
from transport.kube.tls import KUBECONFIG, TlsSetupError, client_host, self_signed, write_kubeconfig
from transport.http.metrics import SchedulerMetrics
from transport.server.tcp import Server
from transport.server.service import StoreService
from transport.protocol.manifests import ManifestError, decode_utf8
from transport.server.auth_throttle import AuthThrottle
from transport.web import WebDeps
from transport.web.feed import Waiter, waiters

log = logging.getLogger("ksched.daemon")


DRAIN_AFTER_STOP_SECONDS = 2.0  # for the replies of requests the stopped pipeline failed


class StartupError(Exception):
    """The daemon cannot start; the message says why and names the field or path."""


def load_serve_config(args: argparse.Namespace) -> tuple[SchedulerConfig, DaemonConfig]:
    serve = ServeConfig()
    if args.config:
        try:
            text = decode_utf8(Path(args.config).read_bytes(), args.config)
        except OSError as exc:
            raise StartupError(f"--config: cannot read {args.config}: {exc.strerror}") from None
        except ManifestError as exc:
            raise StartupError(f"--config: {exc}") from None
        serve = parse_config_text(text, args.config)
    daemon_cfg = apply_flags(serve.daemon, listen=args.listen, http=args.http, data_dir=args.data_dir,
                             token_file=args.token_file, log_level=args.log_level,
                             etcd_servers=getattr(args, "etcd_servers", None),
                             max_watch_backlog_bytes=getattr(args, "max_watch_backlog_bytes", None),
                             max_http_connections=getattr(args, "max_http_connections", None),
                             http_idle_timeout=getattr(args, "http_idle_timeout", None),
                             event_ttl=getattr(args, "event_ttl", None))
    try:
        scheduler_cfg = load_config(serve.scheduler)
        check_settable(scheduler_cfg.feature_gates)
    except (ConfigError, ValidationError, FeatureGateError) as exc:
        raise StartupError(f"KubeSchedulerConfiguration: {exc}") from None
    scheduler_cfg.feature_gates = merge_gate_flag(scheduler_cfg.feature_gates, getattr(args, "feature_gates", None))
    try:
        # plugin args are checked now, before any state is touched
        build_frameworks(scheduler_cfg, FrameworkHandle(features=FeatureGates(scheduler_cfg.feature_gates)))
    except (ConfigError, ValidationError) as exc:
        raise StartupError(f"KubeSchedulerConfiguration: {exc}") from None
    scheduler_cfg.not_applicable = [key for key, _ in ignored_scheduler_fields(serve.scheduler)]
    return scheduler_cfg, daemon_cfg


def merge_gate_flag(from_file: dict[str, bool], flag: str | None) -> dict[str, bool]:
    """The file's featureGates overlaid with --feature-gates (flags win over the file),
    with upstream's checks and pflag's wording for a bad flag."""
    if not flag:
        return dict(from_file)
    try:
        settings = parse_gate_flag(flag)
        check_settable(settings)
    except FeatureGateError as exc:
        raise StartupError(f'invalid argument "{flag}" for "--feature-gates" flag: {exc}') from None
    return {**from_file, **settings}


def _ssl_context(cfg: DaemonConfig) -> ssl.SSLContext | None:
    if cfg.tls_cert_file is None or cfg.tls_key_file is None:
        return None
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    try:
        ctx.load_cert_chain(cfg.tls_cert_file, cfg.tls_key_file)
    except (OSError, ssl.SSLError) as exc:
        raise StartupError(f"DaemonConfiguration.tls: cannot load {cfg.tls_cert_file}/{cfg.tls_key_file}: {exc}") from None
    return ctx


def _http_tls(cfg: DaemonConfig, token: str | None, msgpack_ctx: ssl.SSLContext | None
              ) -> tuple[ssl.SSLContext | None, Path | None]:
    """The HTTP port's TLS and the CA file its kubeconfig names. The configured
    certificate serves both ports; with a token and none configured, HTTP alone gets
    a certificate from a CA made in the data dir (kubectl sends tokens over TLS only)."""
    if msgpack_ctx is not None:
        return msgpack_ctx, cfg.tls_ca_file or cfg.tls_cert_file
    if token is None or cfg.http is None:
        return None, None
    try:
        made = self_signed(cfg.data_dir, cfg.http.host)
    except (TlsSetupError, OSError) as exc:
        raise StartupError(f"http TLS: {exc}") from None
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(made.cert_file, made.key_file)
    return ctx, made.ca_file


def _write_kubeconfig(cfg: DaemonConfig, host: str, port: int, tls: bool, ca: Path | None, token: str | None) -> None:
    host = client_host(host)
    url = f"{'https' if tls else 'http'}://{f'[{host}]' if ':' in host else host}:{port}"
    try:
        write_kubeconfig(cfg.data_dir / KUBECONFIG, url, ca_file=ca if tls else None, token=token)
    except OSError as exc:
        log.warning("cannot write %s: %s", cfg.data_dir / KUBECONFIG, exc)
        return
    log.info("kubeconfig for kubectl: %s (%s)", cfg.data_dir / KUBECONFIG, url)


class Daemon:
    def __init__(self, scheduler_cfg: SchedulerConfig, cfg: DaemonConfig) -> None:
        self.scheduler_cfg = scheduler_cfg
        self.cfg = cfg
        self.metrics = SchedulerMetrics()
        self.stop_requested = asyncio.Event()
        self.phase = "new"
        self._ready = False
        self._signals = 0
        self.breach: Exception | None = None  # an actor's invariant breach that stopped the daemon

    def ready(self) -> bool:
        return self._ready

    def request_stop(self, signum: int | None = None) -> None:
        self._signals += 1
        if self._signals > 1:
            log.warning("second signal: exiting at once")
            logging.shutdown()
            os._exit(128 + (signum or signal.SIGTERM))
        log.info("stopping (phase %s); send the signal again to exit at once", self.phase)
        self.stop_requested.set()

    def _on_breach(self, breach: Exception) -> None:
        """An actor cannot go on: not ready from now, stop cleanly (the store is
        flushed), and exit non-zero."""
        self._ready = False
        self.breach = breach
        log.critical("stopping: %s", breach)
        self.stop_requested.set()

    def _backend(self) -> StoreBackend:
        if self.cfg.store_backend == "memory":
            return InMemoryBackend()
        return SQLiteBackend(self.cfg.data_dir, synchronous=self.cfg.store_synchronous)

    async def run(self) -> None:
        token, ssl_context, http_tls = start_up(self.cfg, self.request_stop)

        self.phase = "starting:pipeline"
        pipeline = Pipeline(self.scheduler_cfg, backend=self._backend(),
                            drain_grace_seconds=self.cfg.shutdown_grace_period_seconds, metrics=self.metrics,
                            store_limits=self.cfg.store_limits, admission=self.cfg.admission)
        pipeline.on_broken = self._on_breach
        try:
            await pipeline.start()
        except (DataDirLocked, StoreUnreadable) as exc:
            raise StartupError(str(exc)) from None
        except ConfigError as exc:
            raise StartupError(f"KubeSchedulerConfiguration: {exc}") from None
        service = StoreService(
            pipeline.store,
            ready=self.ready,
            explain=lambda pod: explain_on_live_snapshot(pipeline, pod),
            more_stats=lambda: pipeline_stats(pipeline),
            clock=pipeline.clock.now,
        )
        await create_system_namespaces(service)
        throttle = AuthThrottle(self.cfg.auth_throttle)  # one budget per address across every port
        server = Server(service, token=token, ssl_context=ssl_context, limits=self.cfg.server_limits,
                        on_reject=self.metrics.server_rejection, auth_throttle=throttle)
        http_runner = None
        try:
            self.phase = "starting:listeners"
            host, port = await open_msgpack(server, self.cfg)
            log.info("msgpack API on %s:%d (data in %s)", host, port, self.cfg.data_dir)
            if self.cfg.http is not None:
                deps = HttpDeps(ready=self.ready, metrics=self.metrics, token=token,
                                on_reject=self.metrics.server_rejection, auth_throttle=throttle,
                                web=web_deps(service, self.metrics, token, pipeline, self.cfg, throttle),
                                kube=KubeDeps(service=service, profiles=frozenset(pipeline.frameworks),
                                              hidden=gated_off(pipeline.store.features.enabled)))
                http_runner = await open_http_api(deps, self.cfg, token, http_tls)
            tune_after_start()
            self.phase = "running"
            self._ready = pipeline.phase == "running" and self.breach is None
            print(f"ksched serving on {host}:{port}", file=sys.stderr, flush=True)
            await self.stop_requested.wait()
        finally:
            self._ready = False
            self.phase = "stopping:listeners"
            server.stop_listening()
            # Every request already read is answered: first while the pipeline still
            # runs; what is left then (waiting on an actor) fails Unavailable once it stops.
            self.phase = "stopping:requests"
            await server.drain(self.cfg.shutdown_grace_period_seconds)
            self.phase = "stopping:pipeline"
            await pipeline.stop()
            self.phase = "stopping:connections"
            await server.drain(DRAIN_AFTER_STOP_SECONDS)
            await server.close()
            if http_runner is not None:
                await http_runner.cleanup()
            self.phase = "stopped"
            log.info("stopped")


def web_deps(service: StoreService, metrics: SchedulerMetrics, token: str | None, pipeline: Pipeline,
             cfg: DaemonConfig | None = None, throttle: AuthThrottle | None = None) -> WebDeps:
    """The cluster page's view of the running system (transport.web)."""
    cfg = cfg if cfg is not None else DaemonConfig()
    return WebDeps(service=service, registry=metrics.registry, token=token,
                   waiting=lambda: _page_waiters(pipeline), hello_timeout=cfg.http_limits.idle_timeout,
                   max_streams=cfg.http_limits.websocket_limit,
                   auth_throttle=throttle, on_reject=metrics.server_rejection)


async def _page_waiters(pipeline: Pipeline) -> list[Waiter]:
    return waiters(await pipeline.list_waiting(), pipeline.clock.now(), time.time())


async def pipeline_stats(pipeline: Pipeline) -> dict[str, Any]:
    s = await pipeline.scheduler_stats()
    return {
        "phase": pipeline.phase,
        "queue": await pipeline.pending_counts(),
        "scheduler": {"attempts": s.attempts, "scheduled": s.scheduled, "failed": s.failed,
                      "bindingCycles": s.binding_cycles, "recentBindMs": _recent_bind_ms(s.recent_bind_seconds),
                      "failuresReused": s.failures_reused},
        "waitingPods": len(await pipeline.list_waiting()),
        "profiles": sorted(pipeline.frameworks),
        "gangProfiles": gang_profiles(pipeline.frameworks),
    }


def gang_profiles(frameworks: Mapping[str, Any]) -> list[str]:
    """The profiles that place a PodGroup's pods all or nothing (Coscheduling at Permit)."""
    return sorted(name for name, fwk in frameworks.items()
                  if any(getattr(pl, "name", "") == "Coscheduling" for pl in fwk.binding.permit_plugins))


# KubeSchedulerConfiguration fields ksched reads but does not use, and why.
IGNORED_SCHEDULER_FIELDS = {
    "clientConnection": "ksched talks to no API server; clients connect to it (serve --listen)",
    "leaderElection": "ksched elects a leader only on etcd, configured in the ksched.io/v1alpha1 "
                      "DaemonConfiguration document's leaderElection",
    "debuggingConfiguration": "ksched serves no profiling or contention endpoints",
    "delayCacheUntilActive": "ksched builds its cache when it starts scheduling",
    "parallelism": "plugins run on one asyncio loop, one node after another",
}


def ignored_scheduler_fields(raw: Mapping[str, Any] | None) -> list[tuple[str, str]]:
    """(field, why) for each field of the file's KubeSchedulerConfiguration ksched ignores."""
    return [(key, why) for key, why in IGNORED_SCHEDULER_FIELDS.items() if raw and key in raw]


def _recent_bind_ms(seconds: tuple[float, ...]) -> dict[str, float | int]:
    """Assume-to-bound latency of the most recent binds: how many, p50 and p99 (nearest rank)."""
    return {"binds": len(seconds), "p50": round(percentile(seconds, 0.50) * 1000, 3),
            "p99": round(percentile(seconds, 0.99) * 1000, 3)}


async def open_msgpack(server: Server, cfg: DaemonConfig) -> tuple[str, int]:
    """Start the msgpack listener; a port that cannot be bound is a StartupError."""
    try:
        return await server.start(cfg.listen.host, cfg.listen.port)
    except OSError as exc:
        raise StartupError(f"listen {cfg.listen}: {exc.strerror or exc}") from None


HttpTls = tuple[ssl.SSLContext | None, Path | None]  # the HTTP port's TLS, the CA file its kubeconfig names


def start_up(cfg: DaemonConfig, request_stop: Callable[[int], None]
             ) -> tuple[str | None, ssl.SSLContext | None, HttpTls]:
    """What both daemons do first: the token, the msgpack TLS context and the HTTP
    port's TLS (StartupError when one cannot be had), and SIGTERM/SIGINT routed to
    `request_stop`."""
    token = cfg.read_token()
    ssl_context = _ssl_context(cfg)
    http_tls = http_tls_for(cfg, token, ssl_context)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, request_stop, sig)
    return token, ssl_context, http_tls


def http_tls_for(cfg: DaemonConfig, token: str | None, msgpack_ssl: ssl.SSLContext | None) -> HttpTls:
    """The HTTP port's TLS (made in the data dir when a token needs it), before
    anything starts: a certificate that cannot be made is a StartupError."""
    return _http_tls(cfg, token, msgpack_ssl) if cfg.http is not None else (None, None)


async def open_http_api(deps: HttpDeps, cfg: DaemonConfig, token: str | None, tls: HttpTls) -> Any:
    """Open the HTTP port (cluster page, Kubernetes API, health, metrics) as every
    daemon does, then write `<data-dir>/kubeconfig` for it. Returns its runner."""
    http_ssl, http_ca = tls
    runner, (host, port) = await open_http(make_http_app(deps), cfg, http_ssl, deps.metrics.server_rejection)
    log.info("HTTP (cluster page, Kubernetes API, healthz, readyz, metrics) on %s://%s:%d/",
             "https" if http_ssl else "http", host, port)
    _write_kubeconfig(cfg, host, port, http_ssl is not None, http_ca, token)
    return runner


async def open_http(app: Any, cfg: DaemonConfig, ssl_context: ssl.SSLContext | None,
                    on_reject: Callable[[str], None]) -> tuple[Any, tuple[str, int]]:
    """Start the HTTP listener with the configured limits; a port that cannot be
    bound is a StartupError. Returns its runner and address."""
    assert cfg.http is not None
    try:
        return await start_http(app, cfg.http.host, cfg.http.port, ssl_context, cfg.http_limits, on_reject)
    except OSError as exc:
        raise StartupError(f"http {cfg.http}: {exc.strerror or exc}") from None
