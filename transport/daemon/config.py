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
    store: {backend: sqlite, synchronous: FULL}   # or backend: etcd (several daemons, one leader)
    etcd: {endpoints: [127.0.0.1:2379], prefix: /registry, maxTxnOps: 128, maxRequestBytes: 1572864,
           caFile: ca.crt, certFile: client.crt, keyFile: client.key}   # TLS files optional
    leaderElection: {leaseDuration: 15s, renewDeadline: 10s, retryPeriod: 2s,
                     resourceName: kube-scheduler, resourceNamespace: kube-system}
    tls: {certFile: server.crt, keyFile: server.key, caFile: ca.crt}   # also HTTP; caFile (optional):
                                    # what DIR/kubeconfig tells kubectl to trust (default: certFile)
    logLevel: INFO
    limits:                         # every field optional; these are the defaults
      maxConnections: 1000          # clients (after hello with the token; no token: after a request)
      maxUnauthenticatedConnections: 100   # connections before that; above it the oldest closes
      maxHelloBytes: 4096           # the first frame, when a token is configured
      handshakeTimeoutSeconds: 5    # TLS handshake and hello (no token: the first request)
      idleTimeoutSeconds: 300       # an idle client (no request in flight, no watch); 0: never
      maxRequestsInFlightPerConnection: 1000
      maxWatchesPerConnection: 100
      maxQueuedFramesPerConnection: 10000
      maxWatchBacklogBytes: 67108864   # a watch's unread events; past it the watch ends (Unavailable)
      authFailureDelaySeconds: 1
      maxObjectBytes: 1572864       # etcd's --max-request-bytes
      watchHistoryEvents: 10000     # kept for watch resume and list continue tokens
      watchHistoryBytes: 67108864
      maxEvents: 10000              # Kubernetes Events kept in all
      eventTTLSeconds: 3600         # kube-apiserver's --event-ttl
      clientWritesPerTurn: 100      # objects of client writes per store turn
      bulkApplyObjects: 256         # an Apply of at least this many objects is a bulk apply
      bulkApplySchedulerShare: 0    # the fair pause's share for the scheduler after storing one (0-0.5)
      maxHttpConnections: 1000      # HTTP port; at the limit the longest-idle one is closed, else 503
      httpIdleTimeoutSeconds: 32    # HTTP: request headers due this long after connect or the last response
      maxWebSocketStreams: 100      # the cluster page's streams (at most half of maxHttpConnections); more get 503
      authFailureBurst: 10          # wrong tokens an address may send (any port) before it is throttled
      authFailuresPerSecond: 1      # ... and then this many a second
      maxAuthFailureAddresses: 10000

Flags win over the file. Every field is checked, and an error names it
(`DaemonConfiguration.listen: port must be between 0 and 65535`).
"""
from __future__ import annotations

import dataclasses
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from actors.leader_election import LeaderElectionConfig
from actors.store.etcd import DEFAULT_MAX_REQUEST_BYTES, DEFAULT_MAX_TXN_OPS, DEFAULT_PREFIX
from actors.store.limits import FAIR_SHARE, StoreLimits
from actors.store.sqlite import SYNCHRONOUS_MODES
from framework.api.errors import ValidationError
from transport.http.limits import HttpLimits
from transport.protocol.manifests import ManifestError, load_all
from transport.server.auth_throttle import AuthThrottleLimits
from transport.server.tcp import ServerLimits
from actors.admission import AdmissionConfig
from transport.daemon.kueue_config import parse_kueue

API_VERSION = "ksched.io/v1alpha1"
KIND = "DaemonConfiguration"
SCHEDULER_KIND = "KubeSchedulerConfiguration"
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
STORE_BACKENDS = ("sqlite", "memory", "etcd")


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
    tls_ca_file: Path | None = None  # named in DIR/kubeconfig; None: the certificate itself
    log_level: str = "INFO"
    etcd_endpoints: tuple[str, ...] = ()
    etcd_prefix: str = DEFAULT_PREFIX
    etcd_max_txn_ops: int = DEFAULT_MAX_TXN_OPS
    etcd_max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES
    etcd_ca_file: Path | None = None
    etcd_cert_file: Path | None = None
    etcd_key_file: Path | None = None
    leader_election: LeaderElectionConfig = LeaderElectionConfig()
    server_limits: ServerLimits = ServerLimits()
    store_limits: StoreLimits = StoreLimits()
    http_limits: HttpLimits = HttpLimits()
    auth_throttle: AuthThrottleLimits = AuthThrottleLimits()
    admission: AdmissionConfig = AdmissionConfig()

    def read_token(self) -> str | None:
        return None if self.token_file is None else read_token_file(self.token_file)


MIN_TOKEN_BYTES = 16


def read_token_file(path: Path) -> str:
    """The token in `path`, which must be a regular file owned by this process's
    user, not accessible by group or others (as ssh insists for a private key), and
    hold at least MIN_TOKEN_BYTES bytes of UTF-8 once surrounding whitespace is
    stripped. Opened without blocking, so a FIFO is refused rather than waited on;
    every refusal says which check failed."""
    def refuse(why: str) -> ValidationError:
        return ValidationError("tokenFile", f"{path}: {why}")

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except OSError as exc:
        raise ValidationError("tokenFile", f"cannot read {path}: {exc.strerror}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise refuse(f"not a regular file (a {_file_type(st.st_mode)}); the token must be in a plain file")
        if st.st_uid != os.geteuid():
            raise refuse(f"owned by uid {st.st_uid}, not by the daemon's user (uid {os.geteuid()})")
        if st.st_mode & 0o077:
            raise ValidationError("tokenFile", f"permissions {stat.S_IMODE(st.st_mode):04o} for {path} are too "
                                  "open: it must not be accessible by group or others (chmod 600)")
        data = os.read(fd, 64 * 1024 + 1)
    except OSError as exc:
        raise ValidationError("tokenFile", f"cannot read {path}: {exc.strerror}") from None
    finally:
        os.close(fd)
    if len(data) > 64 * 1024:
        raise refuse("longer than 64 KiB; a token is one line")
    try:
        token = data.decode("utf-8").strip()
    except UnicodeDecodeError:
        raise refuse("not UTF-8 text") from None
    if not token:
        raise refuse("is empty")
    if len(token.encode()) < MIN_TOKEN_BYTES:
        raise refuse(f"the token is {len(token.encode())} bytes; at least {MIN_TOKEN_BYTES} are required "
                     "(e.g. head -c 32 /dev/urandom | base64 > FILE)")
    return token


def _file_type(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "FIFO"), (stat.S_ISDIR, "directory"), (stat.S_ISSOCK, "socket"),
                       (stat.S_ISCHR, "character device"), (stat.S_ISBLK, "block device")):
        if test(mode):
            return name
    return "special file"


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
           "shutdownGracePeriodSeconds", "store", "tls", "logLevel", "limits", "etcd", "leaderElection", "kueue"}

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
    "maxWatchBacklogBytes": ("server", "max_watch_backlog_bytes", int, 1024),
    "authFailureDelaySeconds": ("server", "auth_failure_delay", float, 0),
    "maxObjectBytes": ("store", "max_object_bytes", int, 1024),
    "watchHistoryEvents": ("store", "history_events", int, 1),
    "watchHistoryBytes": ("store", "history_bytes", int, 1024),
    "maxEvents": ("store", "max_events", int, 1),
    "eventTTLSeconds": ("store", "event_ttl_seconds", float, 0.001),
    "clientWritesPerTurn": ("store", "client_writes_per_turn", int, 1),
    "bulkApplyObjects": ("store", "bulk_apply_objects", int, 1),
    "bulkApplySchedulerShare": ("store", "bulk_apply_scheduler_share", float, 0),
    "maxHttpConnections": ("http", "max_connections", int, 1),
    "httpIdleTimeoutSeconds": ("http", "idle_timeout", float, 0.001),
    "maxWebSocketStreams": ("http", "max_websockets", int, 1),
    "authFailureBurst": ("auth", "burst", int, 1),
    "authFailuresPerSecond": ("auth", "per_second", float, 0.001),
    "maxAuthFailureAddresses": ("auth", "max_addresses", int, 1),
}
_MAXIMA = {"bulkApplySchedulerShare": FAIR_SHARE}  # a bulk apply's share is at most the usual half


def _parse_limits(doc: object, max_frame_bytes: int) -> dict[str, Any]:
    limits = _expect(doc or {}, dict, "limits", "an object")
    server: dict[str, Any] = {"max_frame_bytes": max_frame_bytes}
    store: dict[str, Any] = {}
    groups: dict[str, dict[str, Any]] = {"server": server, "store": store, "http": {}, "auth": {}}
    for key, value in limits.items():
        if key not in _LIMITS:
            raise ValidationError(f"limits.{key}", f"unknown field; known fields: {', '.join(sorted(_LIMITS))}")
        which, attr, typ, minimum = _LIMITS[key]
        n = _expect(value, (int, float) if typ is float else int, f"limits.{key}",
                    "a number" if typ is float else "an integer")
        if n < minimum:
            raise ValidationError(f"limits.{key}", f"must be greater than or equal to {minimum:g}")
        if key in _MAXIMA and n > _MAXIMA[key]:
            raise ValidationError(f"limits.{key}", f"must be less than or equal to {_MAXIMA[key]:g}")
        groups[which][attr] = typ(n)
    server.setdefault("max_hello_bytes", min(ServerLimits().max_hello_bytes, max_frame_bytes))
    if server["max_hello_bytes"] > max_frame_bytes:
        raise ValidationError("limits.maxHelloBytes", f"must not be above maxFrameBytes ({max_frame_bytes})")
    return {"server_limits": ServerLimits(**server), "store_limits": StoreLimits(**store),
            "http_limits": HttpLimits(**groups["http"]), "auth_throttle": AuthThrottleLimits(**groups["auth"])}


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
        if key not in ("certFile", "keyFile", "caFile"):
            raise ValidationError(f"tls.{key}", "unknown field; known fields: caFile, certFile, keyFile")
    if tls:
        if not tls.get("certFile") or not tls.get("keyFile"):
            raise ValidationError("tls", "certFile and keyFile must be given together")
        kw["tls_cert_file"] = Path(_expect(tls["certFile"], str, "tls.certFile", "a path string"))
        kw["tls_key_file"] = Path(_expect(tls["keyFile"], str, "tls.keyFile", "a path string"))
        if tls.get("caFile") is not None:
            kw["tls_ca_file"] = Path(_expect(tls["caFile"], str, "tls.caFile", "a path string"))
    if "logLevel" in doc:
        kw["log_level"] = _choice(doc["logLevel"], LOG_LEVELS, "logLevel")
    kw.update(_parse_etcd(_expect(doc.get("etcd") or {}, dict, "etcd", "an object")))
    if "leaderElection" in doc:
        kw["leader_election"] = _parse_leader_election(
            _expect(doc["leaderElection"] or {}, dict, "leaderElection", "an object"))
    if kw.get("store_backend") == "etcd" and not kw.get("etcd_endpoints"):
        raise ValidationError("etcd.endpoints", "is required when store.backend is etcd")
    kw.update(_parse_limits(doc.get("limits"), kw.get("max_frame_bytes", DaemonConfig().max_frame_bytes)))
    if "kueue" in doc:
        kw["admission"] = parse_kueue(doc["kueue"])
    return DaemonConfig(**kw)


def parse_endpoints(value: object, name: str) -> tuple[str, ...]:
    """etcd endpoints: a list, or one comma-separated string as --etcd-servers takes them."""
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, list) or not items:
        raise ValidationError(name, "must be a non-empty list of HOST:PORT (or http://HOST:PORT)")
    out = []
    for i, item in enumerate(items):
        if not isinstance(item, str):
            raise ValidationError(f"{name}[{i}]", "must be a string")
        addr = parse_address(item.strip().removeprefix("http://").removeprefix("https://"), f"{name}[{i}]")
        out.append(str(addr))
    return tuple(out)


def _parse_etcd(etcd: Mapping[str, Any]) -> dict[str, Any]:
    known = ("endpoints", "prefix", "maxTxnOps", "maxRequestBytes", "caFile", "certFile", "keyFile")
    for key in etcd:
        if key not in known:
            raise ValidationError(f"etcd.{key}", f"unknown field; known fields: {', '.join(known)}")
    kw: dict[str, Any] = {}
    # TLS to etcd, as kube-apiserver's --etcd-cafile/--etcd-certfile/--etcd-keyfile
    for key, attr in (("caFile", "etcd_ca_file"), ("certFile", "etcd_cert_file"), ("keyFile", "etcd_key_file")):
        if etcd.get(key) is not None:
            kw[attr] = Path(_expect(etcd[key], str, f"etcd.{key}", "a path string"))
            if not kw[attr].is_file():
                raise ValidationError(f"etcd.{key}", f"no such file: {kw[attr]}")
    if ("certFile" in etcd) != ("keyFile" in etcd):
        raise ValidationError("etcd.certFile", "certFile and keyFile must be given together")
    if "certFile" in etcd and "caFile" not in etcd:
        raise ValidationError("etcd.caFile", "is required with certFile and keyFile")
    # etcd's --max-txn-ops and --max-request-bytes, when the cluster raised them
    for key, attr, low in (("maxTxnOps", "etcd_max_txn_ops", 2), ("maxRequestBytes", "etcd_max_request_bytes", 4096)):
        if key in etcd:
            n = _expect(etcd[key], int, f"etcd.{key}", "an integer")
            if n < low:
                raise ValidationError(f"etcd.{key}", f"must be at least {low}")
            kw[attr] = n
    if "endpoints" in etcd:
        kw["etcd_endpoints"] = parse_endpoints(etcd["endpoints"], "etcd.endpoints")
    if "prefix" in etcd:
        prefix = _expect(etcd["prefix"], str, "etcd.prefix", "a string")
        if not prefix.startswith("/") or prefix.rstrip("/") == "":
            raise ValidationError("etcd.prefix", f"must be an absolute key prefix such as /registry, got {prefix!r}")
        kw["etcd_prefix"] = prefix.rstrip("/")
    return kw


_DURATION_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(value: object, name: str) -> float:
    """Seconds, from a number or a Go duration as upstream writes them ("15s", "500ms", "1m30s")."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = float(value)
    elif isinstance(value, str):
        parts = re.findall(r"(\d+(?:\.\d+)?)(ms|s|m|h)", value)
        if not parts or "".join(n + u for n, u in parts) != value:
            raise ValidationError(name, f"must be a duration such as 15s or 500ms, got {value!r}")
        seconds = sum(float(n) * _DURATION_UNITS[u] for n, u in parts)
    else:
        raise ValidationError(name, "must be a duration such as 15s")
    if seconds <= 0:
        raise ValidationError(name, "must be greater than 0")
    return seconds


def _parse_leader_election(doc: Mapping[str, Any]) -> LeaderElectionConfig:
    fields = {"leaseDuration": "lease_duration_seconds", "renewDeadline": "renew_deadline_seconds",
              "retryPeriod": "retry_period_seconds", "resourceName": "resource_name",
              "resourceNamespace": "resource_namespace"}
    kw: dict[str, Any] = {}
    for key, value in doc.items():
        if key not in fields:
            raise ValidationError(f"leaderElection.{key}", f"unknown field; known fields: {', '.join(fields)}")
        name = f"leaderElection.{key}"
        if key.startswith("resource"):
            kw[fields[key]] = _expect(value, str, name, "a string")
            if not kw[fields[key]]:
                raise ValidationError(name, "must not be empty")
        else:
            kw[fields[key]] = parse_duration(value, name)
    cfg = LeaderElectionConfig(**kw)
    # upstream's validation (ValidateLeaderElectionConfiguration)
    if cfg.lease_duration_seconds <= cfg.renew_deadline_seconds:
        raise ValidationError("leaderElection.leaseDuration", "must be greater than renewDeadline")
    if cfg.renew_deadline_seconds <= cfg.retry_period_seconds:
        raise ValidationError("leaderElection.renewDeadline", "must be greater than retryPeriod")
    return cfg


def parse_config_text(text: str, source: str = "config") -> ServeConfig:
    """Split a config file into its KubeSchedulerConfiguration and DaemonConfiguration."""
    try:
        docs = [d for d in load_all(text, source) if d is not None]  # as kubectl reads YAML
    except ManifestError as exc:
        raise ValidationError(source, f"not valid YAML: {exc.detail}") from None
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


def _flag_duration(text: str, flag: str) -> float:
    """A flag's duration: plain seconds, or a Go duration (`1h`, `30m`, `90s`, `500ms`)."""
    try:
        value: object = float(text)
    except ValueError:
        value = text.strip()
    if value != value or value == float("inf"):
        raise ValidationError(flag, f"must be a finite duration, got {text!r}")
    return parse_duration(value, flag)


def apply_flags(cfg: DaemonConfig, *, listen: str | None = None, http: str | None = None,
                data_dir: str | None = None, token_file: str | None = None, log_level: str | None = None,
                etcd_servers: str | None = None, max_http_connections: int | None = None,
                http_idle_timeout: float | None = None, event_ttl: str | None = None,
                max_watch_backlog_bytes: int | None = None) -> DaemonConfig:
    """Flags win over the file."""
    kw: dict[str, Any] = {}
    if max_watch_backlog_bytes is not None:
        if max_watch_backlog_bytes < 1024:
            raise ValidationError("--max-watch-backlog-bytes", "must be greater than or equal to 1024")
        kw["server_limits"] = dataclasses.replace(cfg.server_limits, max_watch_backlog_bytes=max_watch_backlog_bytes)
    http_kw: dict[str, Any] = {}
    if event_ttl is not None:
        kw["store_limits"] = dataclasses.replace(cfg.store_limits, event_ttl_seconds=_flag_duration(event_ttl, "--event-ttl"))
    if max_http_connections is not None:
        if max_http_connections < 1:
            raise ValidationError("--max-http-connections", "must be at least 1")
        http_kw["max_connections"] = max_http_connections
    if http_idle_timeout is not None:
        if not http_idle_timeout > 0:
            raise ValidationError("--http-idle-timeout", "must be greater than 0")
        http_kw["idle_timeout"] = float(http_idle_timeout)
    if http_kw:
        kw["http_limits"] = dataclasses.replace(cfg.http_limits, **http_kw)
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
    if etcd_servers is not None:  # kube-apiserver's flag: naming etcd servers means the etcd backend
        kw["etcd_endpoints"] = parse_endpoints(etcd_servers, "--etcd-servers")
        kw["store_backend"] = "etcd"
    return dataclasses.replace(cfg, **kw)
