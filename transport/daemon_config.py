"""The daemon's own settings: flags, or a DaemonConfiguration document.

`ksched serve --config FILE` reads YAML with up to two documents: an upstream
KubeSchedulerConfiguration (handed unchanged to framework.config.load_config) and

    apiVersion: ksched.io/v1alpha1
    kind: DaemonConfiguration
    listen: 127.0.0.1:7777          # msgpack TCP
    http: 127.0.0.1:10251           # /healthz /readyz /metrics ("" turns HTTP off)
    dataDir: .ksched
    tokenFile: /etc/ksched/token    # clients must send this token in hello
    maxFrameBytes: 16777216
    shutdownGracePeriodSeconds: 10  # binding cycles get this long to finish on SIGTERM
    store: {backend: sqlite, synchronous: FULL}
    tls: {certFile: server.crt, keyFile: server.key}   # also serves HTTP over TLS
    logLevel: INFO
    limits:                         # every field optional; these are the defaults
      maxConnections: 1000
      maxUnauthenticatedConnections: 100
      maxHelloBytes: 4096           # the first frame, when a token is configured
      handshakeTimeoutSeconds: 10   # TLS handshake and hello
      idleTimeoutSeconds: 3600      # an idle connection (no request in flight, no watch); 0: never
      maxRequestsInFlightPerConnection: 1000
      maxWatchesPerConnection: 100
      maxQueuedFramesPerConnection: 10000
      authFailureDelaySeconds: 1
      maxObjectBytes: 1572864       # etcd's --max-request-bytes
      watchHistoryEvents: 10000     # kept for watch resume and list continue tokens
      watchHistoryBytes: 67108864
      maxEvents: 10000              # Kubernetes Events kept in all
      eventTTLSeconds: 3600         # kube-apiserver's --event-ttl
      clientWritesPerTurn: 100      # objects of client writes per store turn

Flags win over the file. Every field is checked, and an error names it
(`DaemonConfiguration.listen: port must be between 0 and 65535`).
"""
from __future__ import annotations

import dataclasses
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import yaml

from actors.store.limits import StoreLimits
from actors.store.sqlite import SYNCHRONOUS_MODES
from framework.api.errors import ValidationError
from transport.server import ServerLimits

API_VERSION = "ksched.io/v1alpha1"
KIND = "DaemonConfiguration"
SCHEDULER_KIND = "KubeSchedulerConfiguration"
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
STORE_BACKENDS = ("sqlite", "memory")


@dataclass(frozen=True, slots=True)
class Address:
    host: str
    port: int

    def __str__(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


def parse_address(text: object, field_name: str) -> Address:
    """HOST:PORT, [IPv6]:PORT or :PORT (all interfaces is spelled 0.0.0.0 explicitly)."""
    if not isinstance(text, str) or ":" not in text:
        raise ValidationError(field_name, f"must be HOST:PORT, got {text!r}")
    host, _, port_s = text.rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if not host:
        host = "127.0.0.1"
    try:
        port = int(port_s)
    except ValueError:
        raise ValidationError(field_name, f"port must be an integer, got {port_s!r}") from None
    if not 0 <= port <= 65535:
        raise ValidationError(field_name, "port must be between 0 and 65535")
    return Address(host, port)


@dataclass(frozen=True, slots=True, kw_only=True)
class DaemonConfig:
    listen: Address = Address("127.0.0.1", 7777)
    http: Address | None = Address("127.0.0.1", 10251)
    data_dir: Path = Path(".ksched")
    token_file: Path | None = None
    max_frame_bytes: int = 16 * 1024 * 1024
    shutdown_grace_period_seconds: float = 10.0
    store_backend: str = "sqlite"
    store_synchronous: str = "FULL"
    tls_cert_file: Path | None = None
    tls_key_file: Path | None = None
    log_level: str = "INFO"
    server_limits: ServerLimits = ServerLimits()
    store_limits: StoreLimits = StoreLimits()

    def read_token(self) -> str | None:
        if self.token_file is None:
            return None
        try:
            with open(self.token_file) as f:
                mode = os.fstat(f.fileno()).st_mode
                # as ssh refuses a private key others can read: a secret must be the owner's alone
                if mode & 0o077:
                    raise ValidationError("tokenFile", f"permissions {stat.S_IMODE(mode):04o} for {self.token_file} "
                                                       "are too open: it must not be accessible by group or others "
                                                       "(chmod 600)")
                token = f.read().strip()
        except OSError as exc:
            raise ValidationError("tokenFile", f"cannot read {self.token_file}: {exc.strerror}") from None
        if not token:
            raise ValidationError("tokenFile", f"{self.token_file} is empty")
        return token


@dataclass(slots=True)
class ServeConfig:
    """What `serve` runs with: the scheduler's configuration (raw, for load_config)
    and the daemon's."""

    scheduler: dict[str, Any] | None = None
    daemon: DaemonConfig = field(default_factory=DaemonConfig)


def _expect(value: object, types: type | tuple[type, ...], name: str, what: str) -> Any:
    if isinstance(value, bool) and bool not in (types if isinstance(types, tuple) else (types,)):
        raise ValidationError(name, f"must be {what}")
    if not isinstance(value, types):
        raise ValidationError(name, f"must be {what}")
    return value


def _choice(value: object, choices: tuple[str, ...], name: str) -> str:
    if value not in choices:
        raise ValidationError(name, f"must be one of {', '.join(choices)}, got {value!r}")
    return value  # type: ignore[return-value]


_FIELDS = {"apiVersion", "kind", "listen", "http", "dataDir", "tokenFile", "maxFrameBytes",
           "shutdownGracePeriodSeconds", "store", "tls", "logLevel", "limits"}

# limits: field -> (which limits, attribute, type, minimum)
_LIMITS: dict[str, tuple[str, str, type, float]] = {
    "maxConnections": ("server", "max_connections", int, 1),
    "maxUnauthenticatedConnections": ("server", "max_unauthenticated", int, 1),
    "maxHelloBytes": ("server", "max_hello_bytes", int, 64),
    "handshakeTimeoutSeconds": ("server", "handshake_timeout", float, 0.001),
    "idleTimeoutSeconds": ("server", "idle_timeout", float, 0),
    "maxRequestsInFlightPerConnection": ("server", "max_in_flight", int, 1),
    "maxWatchesPerConnection": ("server", "max_watches", int, 1),
    "maxQueuedFramesPerConnection": ("server", "max_queued_frames", int, 1),
    "authFailureDelaySeconds": ("server", "auth_failure_delay", float, 0),
    "maxObjectBytes": ("store", "max_object_bytes", int, 1024),
    "watchHistoryEvents": ("store", "history_events", int, 1),
    "watchHistoryBytes": ("store", "history_bytes", int, 1024),
    "maxEvents": ("store", "max_events", int, 1),
    "eventTTLSeconds": ("store", "event_ttl_seconds", float, 0.001),
    "clientWritesPerTurn": ("store", "client_writes_per_turn", int, 1),
}


def _parse_limits(doc: object, max_frame_bytes: int) -> dict[str, Any]:
    limits = _expect(doc or {}, dict, "limits", "an object")
    server: dict[str, Any] = {"max_frame_bytes": max_frame_bytes}
    store: dict[str, Any] = {}
    for key, value in limits.items():
        if key not in _LIMITS:
            raise ValidationError(f"limits.{key}", f"unknown field; known fields: {', '.join(sorted(_LIMITS))}")
        which, attr, typ, minimum = _LIMITS[key]
        n = _expect(value, (int, float) if typ is float else int, f"limits.{key}",
                    "a number" if typ is float else "an integer")
        if n < minimum:
            raise ValidationError(f"limits.{key}", f"must be greater than or equal to {minimum:g}")
        (server if which == "server" else store)[attr] = typ(n)
    server.setdefault("max_hello_bytes", min(ServerLimits().max_hello_bytes, max_frame_bytes))
    if server["max_hello_bytes"] > max_frame_bytes:
        raise ValidationError("limits.maxHelloBytes", f"must not be above maxFrameBytes ({max_frame_bytes})")
    return {"server_limits": ServerLimits(**server), "store_limits": StoreLimits(**store)}


def parse_daemon_config(doc: Mapping[str, Any]) -> DaemonConfig:
    """A DaemonConfiguration document; errors name the field under `DaemonConfiguration.`."""
    try:
        return _parse_daemon_config(doc)
    except ValidationError as err:
        raise err.under(KIND) from None


def _parse_daemon_config(doc: Mapping[str, Any]) -> DaemonConfig:
    for key in doc:
        if key not in _FIELDS:
            raise ValidationError(str(key), f"unknown field; known fields: {', '.join(sorted(_FIELDS - {'apiVersion', 'kind'}))}")
    kw: dict[str, Any] = {}
    if "listen" in doc:
        kw["listen"] = parse_address(doc["listen"], "listen")
    if "http" in doc:
        kw["http"] = None if doc["http"] in ("", None) else parse_address(doc["http"], "http")
    if "dataDir" in doc:
        kw["data_dir"] = Path(_expect(doc["dataDir"], str, "dataDir", "a path string"))
    if doc.get("tokenFile") is not None:
        kw["token_file"] = Path(_expect(doc["tokenFile"], str, "tokenFile", "a path string"))
    if "maxFrameBytes" in doc:
        n = _expect(doc["maxFrameBytes"], int, "maxFrameBytes", "an integer")
        if not 1024 <= n <= 1 << 31:
            raise ValidationError("maxFrameBytes", "must be between 1024 and 2147483648")
        kw["max_frame_bytes"] = n
    if "shutdownGracePeriodSeconds" in doc:
        g = _expect(doc["shutdownGracePeriodSeconds"], (int, float), "shutdownGracePeriodSeconds", "a number")
        if g < 0:
            raise ValidationError("shutdownGracePeriodSeconds", "must be greater than or equal to 0")
        kw["shutdown_grace_period_seconds"] = float(g)
    store = _expect(doc.get("store") or {}, dict, "store", "an object")
    for key in store:
        if key not in ("backend", "synchronous"):
            raise ValidationError(f"store.{key}", "unknown field; known fields: backend, synchronous")
    if "backend" in store:
        kw["store_backend"] = _choice(store["backend"], STORE_BACKENDS, "store.backend")
    if "synchronous" in store:
        kw["store_synchronous"] = _choice(store["synchronous"], SYNCHRONOUS_MODES, "store.synchronous")
    tls = _expect(doc.get("tls") or {}, dict, "tls", "an object")
    for key in tls:
        if key not in ("certFile", "keyFile"):
            raise ValidationError(f"tls.{key}", "unknown field; known fields: certFile, keyFile")
    if tls:
        if not tls.get("certFile") or not tls.get("keyFile"):
            raise ValidationError("tls", "certFile and keyFile must be given together")
        kw["tls_cert_file"] = Path(_expect(tls["certFile"], str, "tls.certFile", "a path string"))
        kw["tls_key_file"] = Path(_expect(tls["keyFile"], str, "tls.keyFile", "a path string"))
    if "logLevel" in doc:
        kw["log_level"] = _choice(doc["logLevel"], LOG_LEVELS, "logLevel")
    kw.update(_parse_limits(doc.get("limits"), kw.get("max_frame_bytes", DaemonConfig().max_frame_bytes)))
    return DaemonConfig(**kw)


def parse_config_text(text: str, source: str = "config") -> ServeConfig:
    """Split a config file into its KubeSchedulerConfiguration and DaemonConfiguration."""
    try:
        docs = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as exc:
        raise ValidationError(source, f"not valid YAML: {exc}") from None
    out = ServeConfig()
    seen: set[str] = set()
    for i, doc in enumerate(docs):
        if not isinstance(doc, dict):
            raise ValidationError(f"{source}[{i}]", "document must be a mapping")
        kind = doc.get("kind")
        if kind in seen:
            raise ValidationError(f"{source}[{i}].kind", f"{kind} appears twice")
        if kind == KIND:
            if doc.get("apiVersion") != API_VERSION:
                raise ValidationError(f"{KIND}.apiVersion", f"must be {API_VERSION}, got {doc.get('apiVersion')!r}")
            out.daemon = parse_daemon_config(doc)
        elif kind == SCHEDULER_KIND:
            out.scheduler = doc
        else:
            raise ValidationError(f"{source}[{i}].kind", f"must be {SCHEDULER_KIND} or {KIND}, got {kind!r}")
        seen.add(str(kind))
    return out


def apply_flags(cfg: DaemonConfig, *, listen: str | None = None, http: str | None = None,
                data_dir: str | None = None, token_file: str | None = None, log_level: str | None = None) -> DaemonConfig:
    """Flags win over the file."""
    kw: dict[str, Any] = {}
    if listen is not None:
        kw["listen"] = parse_address(listen, "--listen")
    if http is not None:
        kw["http"] = None if http == "" else parse_address(http, "--http")
    if data_dir is not None:
        kw["data_dir"] = Path(data_dir)
    if token_file is not None:
        kw["token_file"] = Path(token_file)
    if log_level is not None:
        kw["log_level"] = _choice(log_level.upper(), LOG_LEVELS, "--log-level")
    return dataclasses.replace(cfg, **kw)
