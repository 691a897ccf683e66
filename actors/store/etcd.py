"""The etcd StoreBackend: objects in etcd as kube-apiserver lays them out.

Keys are `<prefix>/<resource>/<namespace>/<name>` (`<prefix>/<resource>/<name>`
for cluster-scoped kinds), resource paths as kube-apiserver's storage uses them
(`pods`, `minions` for Nodes, `services/specs`, `controllers` for
ReplicationControllers, `scheduling.x-k8s.io/podgroups` for the CRD); values are
the objects' JSON without metadata.resourceVersion, which is the key's etcd mod
revision when read.

Unlike the SQLite and memory backends, etcd is shared: other daemons write to
it too. So the Store that uses it (actors.store.shared.SharedStore) does not
number its writes itself:

- `transact(guarded)` writes one group of changes as ONE etcd transaction. Each
  key is compared on its mod revision (the revision the store based the change
  on; 0 means the key must not exist), and when a change is `fenced` (a binding)
  the leader's election key is compared on its create revision too, so a leader
  that has been deposed can never bind. It returns the transaction's revision,
  or raises StaleWrite (another writer got there first: catch up to the revision
  it names and try again) or FenceLost.
- `changes(after)` follows every change after a revision, in revision order,
  through etcd's watch (the store's own writes come back that way too);
  Compacted when that revision is gone.
- `load_all()` lists everything at one revision (paginated, so a large cluster
  never exceeds a gRPC message).
"""
from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass
from typing import Any, AsyncIterator, Callable, Sequence

import aetcd
import aetcd.watcher
import grpc
from aetcd import rpc
from aetcd.exceptions import ClientError

from actors.store.backend import LoadedState, Write
from actors.store.etcd_errors import Retry
from framework.api.objects import KINDS

log = logging.getLogger("ksched.store.etcd")

DEFAULT_PREFIX = "/registry"
# etcd's own defaults (--max-txn-ops, --max-request-bytes); a group bigger than either
# is split between transactions, and one request bigger than either is refused.
DEFAULT_MAX_TXN_OPS = 128
DEFAULT_MAX_REQUEST_BYTES = 1536 * 1024
LOAD_PAGE = 500
# gRPC reconnects to a member that went away with a backoff growing to 120 s by default;
# a member back after an outage is worth finding within a second.
CHANNEL_OPTIONS = {"grpc.initial_reconnect_backoff_ms": 100, "grpc.min_reconnect_backoff_ms": 100,
                   "grpc.max_reconnect_backoff_ms": 1000}
WATCH_RETRY_SECONDS = (0.2, 2.0)  # the watch's first and longest pause before it resumes after a break
KEY_OVERHEAD = 512  # bytes per operation for its key, compare and framing

# kube-apiserver's storage paths (pkg/registry/*/storage), "minions" included.
RESOURCE_PATHS: dict[str, str] = {
    "Pod": "pods",
    "Node": "minions",
    "PodGroup": "scheduling.x-k8s.io/podgroups",
    "PriorityClass": "priorityclasses",
    "Service": "services/specs",
    "ReplicationController": "controllers",
    "ReplicaSet": "replicasets",
    "StatefulSet": "statefulsets",
    "PodDisruptionBudget": "poddisruptionbudgets",
    "Namespace": "namespaces",
    "PersistentVolumeClaim": "persistentvolumeclaims",
    "PersistentVolume": "persistentvolumes",
    "StorageClass": "storageclasses",
    "CSINode": "csinodes",
    "CSIDriver": "csidrivers",
    "VolumeAttachment": "volumeattachments",
    # Kubernetes' own PodGroup at kube-apiserver's path; its Workload beside Kueue's (which keeps `workloads`)
    "PodGroup.scheduling.k8s.io": "podgroups",
    "Workload.scheduling.k8s.io": "scheduling.k8s.io/workloads",
}
# A kind added later without an entry here gets the plain lowercase plural.
for _kind in KINDS:
    RESOURCE_PATHS.setdefault(_kind, _kind.lower() + "s")


class StaleWrite(Exception):
    """A compared key moved on: the store must see `revision` before it retries."""

    def __init__(self, revision: int) -> None:
        super().__init__(f"a key changed under this write (etcd revision {revision})")
        self.revision = revision


class FenceLost(Exception):
    """A fenced write was refused: this daemon no longer holds the leader lease."""


class Compacted(Exception):
    """The revision to follow from has been compacted away (410 Gone)."""

    def __init__(self, revision: int) -> None:
        super().__init__(f"too old resource version: etcd compacted revisions up to {revision}")
        self.revision = revision


class RequestTooLarge(Exception):
    """One request needs more operations or bytes than one etcd transaction takes."""


@dataclass(frozen=True, slots=True)
class Fence:
    """The leader's election key and the revision that created it: while the key
    has that create revision, the lease that made this daemon leader is alive."""

    key: str
    create_revision: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Guarded:
    """One change to write, with the mod revision it was based on (0: absent)."""

    write: Write
    expected_revision: int
    fenced: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class Change:
    """One key's change as etcd's watch reports it."""

    kind: str
    key: str
    raw: dict[str, Any] | None  # None: deleted
    revision: int


@dataclass(frozen=True, slots=True, kw_only=True)
class EtcdSettings:
    endpoints: tuple[str, ...] = ("127.0.0.1:2379",)
    prefix: str = DEFAULT_PREFIX
    max_txn_ops: int = DEFAULT_MAX_TXN_OPS
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES
    timeout_seconds: float = 5.0
    # TLS, as kube-apiserver's --etcd-cafile / --etcd-certfile / --etcd-keyfile
    ca_file: str | None = None
    cert_file: str | None = None
    key_file: str | None = None


def grpc_target(endpoints: Sequence[str]) -> str:
    """All endpoints as one gRPC target, so the channel fails over between members
    (the scheme, http:// or https://, is the TLS settings' business)."""
    hosts = [e.removeprefix("http://").removeprefix("https://") for e in endpoints]
    return "ipv4:" + ",".join(hosts) if len(hosts) > 1 else hosts[0]


def connect(settings: EtcdSettings) -> aetcd.Client:
    """An aetcd client on every endpoint (aetcd joins host and port into one target)."""
    target = grpc_target(settings.endpoints)
    host, _, port = target.rpartition(":")
    if settings.ca_file is None:
        return aetcd.Client(host=host, port=int(port), timeout=settings.timeout_seconds, options=CHANNEL_OPTIONS)
    return _TlsClient(settings, host=host, port=int(port), timeout=settings.timeout_seconds,
                      options=CHANNEL_OPTIONS)


def _read(path: str | None) -> bytes | None:
    if path is None:
        return None
    with open(path, "rb") as f:
        return f.read()


class _TlsClient(aetcd.Client):
    """aetcd opens only insecure channels; this one opens a TLS channel (server
    checked against caFile; certFile/keyFile as the client's certificate) and
    sets up the same stubs aetcd's connect() does."""

    def __init__(self, settings: EtcdSettings, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._credentials = grpc.ssl_channel_credentials(
            root_certificates=_read(settings.ca_file), private_key=_read(settings.key_file),
            certificate_chain=_read(settings.cert_file))
        # one name to check every member's certificate against (the first endpoint's host)
        self._server_name = settings.endpoints[0].split("://")[-1].rpartition(":")[0]

    async def connect(self) -> None:
        if self._connected.is_set():
            return
        self.channel = grpc.aio.secure_channel(f"{self._host}:{self._port}", self._credentials,
                                               options=[("grpc.ssl_target_name_override", self._server_name),
                                                        *CHANNEL_OPTIONS.items()])
        self.kvstub = rpc.KVStub(self.channel)
        self.clusterstub = rpc.ClusterStub(self.channel)
        self.leasestub = rpc.LeaseStub(self.channel)
        self.maintenancestub = rpc.MaintenanceStub(self.channel)
        self._watcher = aetcd.watcher.Watcher(rpc.WatchStub(self.channel), timeout=self._timeout,
                                              metadata=self.metadata)
        self._connected.set()


class KeyLayout:
    """Maps (kind, store key) <-> etcd key."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix.rstrip("/")
        self._by_path = sorted(((p, k) for k, p in RESOURCE_PATHS.items()), key=lambda pk: -len(pk[0]))

    def key(self, kind: str, key: str) -> bytes:
        return f"{self.prefix}/{RESOURCE_PATHS[kind]}/{key}".encode()

    def range(self) -> tuple[bytes, bytes]:
        start = f"{self.prefix}/".encode()
        return start, aetcd.utils.prefix_range_end(start)

    def parse(self, etcd_key: bytes) -> tuple[str, str] | None:
        """(kind, store key), or None for keys that hold no object (leases, others' data)."""
        text = etcd_key.decode(errors="replace")
        rest = text.removeprefix(self.prefix + "/")
        if rest == text:
            return None
        for path, kind in self._by_path:
            if rest.startswith(path + "/"):
                key = rest[len(path) + 1:]
                namespaced = KINDS[kind].namespaced
                if key and (key.count("/") == 1) == namespaced:
                    return kind, key
        return None


def encode(raw: dict[str, Any]) -> bytes:
    meta = {k: v for k, v in (raw.get("metadata") or {}).items() if k != "resourceVersion"}
    return json.dumps({**raw, "metadata": meta}, separators=(",", ":")).encode()


def decode(value: bytes, revision: int) -> dict[str, Any]:
    raw = json.loads(value)
    raw.setdefault("metadata", {})["resourceVersion"] = str(revision)
    return raw


class EtcdBackend:
    """StoreBackend on etcd (see the module doc). `fence` says, at each fenced
    write, which election key this daemon's leadership rests on (None: not leader)."""

    shared = True  # other writers exist: the store must follow changes()

    def __init__(self, settings: EtcdSettings, *, fence: Callable[[], Fence | None] = lambda: None) -> None:
        self.settings = settings
        self.layout = KeyLayout(settings.prefix)
        self.fence = fence
        self._client = connect(settings)
        self.transactions = 0

    async def _kv(self) -> Any:
        await self._client.connect()
        return self._client.kvstub

    # --- reading ---------------------------------------------------------------------------------

    async def load_all(self, max_object_bytes: int | None = None) -> LoadedState:
        kv = await self._kv()
        start, end = self.layout.range()
        out = LoadedState()
        revision = 0
        while True:
            req = rpc.RangeRequest(key=start, range_end=end, limit=LOAD_PAGE, revision=revision)
            resp = await kv.Range(req, timeout=self.settings.timeout_seconds)
            if revision == 0:
                revision = resp.header.revision  # every page at the first page's revision
            for item in resp.kvs:
                if self.layout.parse(item.key) is not None:
                    out.objects.append(decode(item.value, item.mod_revision))
            if not resp.more or not resp.kvs:
                break
            start = resp.kvs[-1].key + b"\0"
        out.resource_version = revision
        return out

    async def current_revision(self) -> int:
        """etcd's revision now (the feed reaches it: it follows every key)."""
        kv = await self._kv()
        resp = await kv.Range(rpc.RangeRequest(key=b"\0", limit=1, keys_only=True),
                              timeout=self.settings.timeout_seconds)
        return resp.header.revision

    async def changes(self, after: int) -> AsyncIterator[tuple[list[Change], int]]:
        """Every change to an object key after revision `after`, in order, a revision
        at a time: (changes, the revision now reached). The watch covers every key,
        not only the prefix, so every revision etcd hands out shows up here (a
        revision that touched none of our objects comes with no changes) and
        catching up to any revision etcd reported always ends. Reconnects from the
        last revision seen when the stream breaks; Compacted when etcd no longer
        has the revisions asked for."""
        last = after
        retry = Retry(log, "etcd watch", initial=WATCH_RETRY_SECONDS[0], cap=WATCH_RETRY_SECONDS[1])
        while True:
            call = None
            try:
                await self._client.connect()
                call = rpc.WatchStub(self._client.channel).Watch()
                await call.write(rpc.WatchRequest(create_request=rpc.WatchCreateRequest(
                    key=b"\0", range_end=b"\0", start_revision=last + 1)))
                while True:
                    resp = await call.read()
                    if resp is grpc.aio.EOF:
                        raise ClientError("etcd ended the watch stream")
                    retry.succeeded()
                    if resp.compact_revision:
                        raise Compacted(resp.compact_revision)
                    if resp.canceled:
                        raise ClientError(f"etcd cancelled the watch: {resp.cancel_reason}")
                    if not resp.events:
                        continue
                    out = []
                    for ev in resp.events:
                        last = max(last, ev.kv.mod_revision)
                        named = self.layout.parse(ev.kv.key)
                        if named is not None:
                            deleted = ev.type == rpc.Event.DELETE
                            out.append(Change(kind=named[0], key=named[1], revision=ev.kv.mod_revision,
                                              raw=None if deleted else decode(ev.kv.value, ev.kv.mod_revision)))
                    yield out, last
            except (ClientError, grpc.aio.AioRpcError, OSError) as e:
                # resumed after the last revision seen; logged once an episode
                await asyncio.sleep(retry.failed(e))
            finally:
                if call is not None:
                    call.cancel()

    # --- writing ---------------------------------------------------------------------------------

    def within_limits(self, ops: int, value_bytes: int) -> bool:
        """Whether one transaction takes `ops` changes (plus the leader fence) of
        `value_bytes` in all (etcd's --max-txn-ops and --max-request-bytes)."""
        return (ops + 1 <= self.settings.max_txn_ops
                and value_bytes + ops * KEY_OVERHEAD <= self.settings.max_request_bytes)

    def fits(self, guarded: Sequence[Guarded]) -> bool:
        return self.within_limits(len(guarded), sum(len(encode(g.write.raw)) for g in guarded if g.write.raw))

    async def transact(self, guarded: Sequence[Guarded]) -> int:
        """Write `guarded` as one transaction; its etcd revision."""
        if not guarded:
            raise ValueError("nothing to write")
        if not self.fits(guarded):
            raise RequestTooLarge(
                f"{len(guarded)} changes exceed one etcd transaction "
                f"({self.settings.max_txn_ops} operations, {self.settings.max_request_bytes} bytes)")
        compare, success, failure = [], [], []
        for g in guarded:
            key = self.layout.key(g.write.kind, g.write.key)
            compare.append(rpc.Compare(key=key, target=rpc.Compare.MOD, result=rpc.Compare.EQUAL,
                                       mod_revision=g.expected_revision))
            if g.write.raw is None:
                success.append(rpc.RequestOp(request_delete_range=rpc.DeleteRangeRequest(key=key)))
            else:
                success.append(rpc.RequestOp(request_put=rpc.PutRequest(key=key, value=encode(g.write.raw))))
            failure.append(rpc.RequestOp(request_range=rpc.RangeRequest(key=key, keys_only=True)))
        fence = None
        if any(g.fenced for g in guarded):
            fence = self.fence()
            if fence is None:
                raise FenceLost("not the leader (or no longer provably: the lease may have run out)")
            compare.append(rpc.Compare(key=fence.key.encode(), target=rpc.Compare.CREATE,
                                       result=rpc.Compare.EQUAL, create_revision=fence.create_revision))
            failure.append(rpc.RequestOp(request_range=rpc.RangeRequest(key=fence.key.encode(), keys_only=True)))
        kv = await self._kv()
        resp = await kv.Txn(rpc.TxnRequest(compare=compare, success=success, failure=failure),
                            timeout=self.settings.timeout_seconds)
        self.transactions += 1
        if resp.succeeded:
            return resp.header.revision
        ranges = [r.response_range for r in resp.responses]
        if fence is not None:
            held = ranges[-1].kvs
            if not held or held[0].create_revision != fence.create_revision:
                raise FenceLost(f"leader key {fence.key} is no longer ours")
            ranges = ranges[:-1]
        newest = max((kv_.mod_revision for r in ranges for kv_ in r.kvs), default=0)
        raise StaleWrite(max(newest, max(g.expected_revision for g in guarded)))

    async def commit(self, writes: Sequence[Write]) -> int:
        """Not used: a shared store's writes need the revisions they were based on
        (transact), which only actors.store.shared.SharedStore supplies."""
        raise TypeError("EtcdBackend takes its writes through SharedStore.transact, not Store.commit")

    async def close(self) -> None:
        await self._client.close()
