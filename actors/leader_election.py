"""Leader election on an etcd lease: which of several daemons schedules.

Upstream's leader election (client-go tools/leaderelection) keeps a Lease object
that the leader renews; ksched keeps the same key in etcd directly
(`<prefix>/leases/<namespace>/<name>`, default kube-system/kube-scheduler),
attached to an etcd lease, so etcd itself deletes it when the leader stops
renewing. The timings keep upstream's names and defaults:

- leaseDuration (15 s): the etcd lease's TTL: how long a dead leader keeps
  the key.
- renewDeadline (10 s): a leader that has not renewed for this long steps down
  (well before its lease can have run out under another candidate).
- retryPeriod (2 s): how often the leader renews, and how often a candidate
  tries again (a candidate also watches the key and tries at once when it goes).

The key's create revision is the fence (actors.store.etcd.Fence): bindings
compare it, so a leader that lost the key (paused past its lease, cut off) can
never bind, even before it notices.
"""
from __future__ import annotations

import asyncio
import json
import logging
import math
import time
from dataclasses import dataclass

from aetcd import rpc
from aetcd.exceptions import ClientError

from actors.store.etcd import EtcdSettings, Fence, connect

log = logging.getLogger("ksched.leader_election")


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaderElectionConfig:
    lease_duration_seconds: float = 15.0
    renew_deadline_seconds: float = 10.0
    retry_period_seconds: float = 2.0
    resource_name: str = "kube-scheduler"
    resource_namespace: str = "kube-system"


class LeaderElector:
    """Campaigns for, holds and gives up one election key. One task drives it:
    `await acquire()`, then `await hold()` (returns when leadership is lost),
    `resign()` at shutdown."""

    def __init__(self, settings: EtcdSettings, identity: str, cfg: LeaderElectionConfig | None = None) -> None:
        self.cfg = cfg or LeaderElectionConfig()
        self.identity = identity
        self.key = f"{settings.prefix.rstrip('/')}/leases/{self.cfg.resource_namespace}/{self.cfg.resource_name}"
        self._settings = settings
        self._client = connect(settings)
        self._lease_id = 0
        self._fence: Fence | None = None
        self.transitions = 0  # times this daemon became leader
        self.acquired_at: float | None = None  # wall time of the last acquisition

    @property
    def is_leader(self) -> bool:
        return self._fence is not None

    def fence(self) -> Fence | None:
        return self._fence

    async def _stubs(self) -> tuple[object, object]:
        await self._client.connect()
        return self._client.kvstub, self._client.leasestub

    async def holder(self) -> str:
        """Who holds the key now ("" when nobody)."""
        kv, _ = await self._stubs()
        resp = await kv.Range(rpc.RangeRequest(key=self.key.encode()), timeout=self._settings.timeout_seconds)
        if not resp.kvs:
            return ""
        try:
            return str(json.loads(resp.kvs[0].value).get("holderIdentity", ""))
        except ValueError:
            return ""

    async def try_acquire(self) -> bool:
        """One attempt: create the key under a fresh lease if nobody holds it."""
        kv, leases = await self._stubs()
        ttl = max(1, math.ceil(self.cfg.lease_duration_seconds))
        grant = await leases.LeaseGrant(rpc.LeaseGrantRequest(TTL=ttl), timeout=self._settings.timeout_seconds)
        value = json.dumps({"holderIdentity": self.identity, "leaseDurationSeconds": ttl,
                            "acquireTime": time.time()}).encode()
        key = self.key.encode()
        resp = await kv.Txn(rpc.TxnRequest(
            compare=[rpc.Compare(key=key, target=rpc.Compare.CREATE, result=rpc.Compare.EQUAL, create_revision=0)],
            success=[rpc.RequestOp(request_put=rpc.PutRequest(key=key, value=value, lease=grant.ID))],
        ), timeout=self._settings.timeout_seconds)
        if not resp.succeeded:
            await leases.LeaseRevoke(rpc.LeaseRevokeRequest(ID=grant.ID), timeout=self._settings.timeout_seconds)
            return False
        self._lease_id = grant.ID
        self._fence = Fence(self.key, resp.header.revision)
        self.transitions += 1
        self.acquired_at = time.time()
        log.info("%s became leader (key %s, revision %d)", self.identity, self.key, resp.header.revision)
        return True

    async def acquire(self) -> None:
        """Campaign until this daemon leads."""
        while True:
            try:
                if await self.try_acquire():
                    return
                await self._wait_for_release(self.cfg.retry_period_seconds)
            except ClientError as e:
                log.warning("leader election: etcd unavailable (%s); retrying", e)
                await asyncio.sleep(self.cfg.retry_period_seconds)

    async def _wait_for_release(self, at_most: float) -> None:
        """Return when the key is deleted (its lease ran out or was revoked), or after `at_most` seconds."""
        watch = await self._client.watch(self.key.encode())
        try:
            async def deleted() -> None:
                async for ev in watch:
                    if ev.kind == "DELETE":
                        return
            try:
                await asyncio.wait_for(deleted(), at_most)
            except TimeoutError:
                pass
        finally:
            await watch.cancel()

    async def hold(self) -> str:
        """Renew every retryPeriod until the lease is lost; returns why."""
        _, leases = await self._stubs()
        loop = asyncio.get_running_loop()
        last_renewed = loop.time()
        while True:
            await asyncio.sleep(self.cfg.retry_period_seconds)
            try:
                reply = None
                async for reply in leases.LeaseKeepAlive(iter([rpc.LeaseKeepAliveRequest(ID=self._lease_id)]),
                                                         timeout=self._settings.timeout_seconds):
                    break
                if reply is None or reply.TTL <= 0:
                    return self._lost("the lease expired")
                last_renewed = loop.time()
            except ClientError as e:
                log.warning("leader election: renew failed (%s)", e)
            except Exception as e:  # noqa: BLE001 - grpc errors outside aetcd's wrapper
                log.warning("leader election: renew failed (%s)", e)
            if loop.time() - last_renewed > self.cfg.renew_deadline_seconds:
                return self._lost(f"not renewed within renewDeadline {self.cfg.renew_deadline_seconds}s")

    def _lost(self, why: str) -> str:
        log.warning("%s lost leadership: %s", self.identity, why)
        self._fence = None
        return why

    async def resign(self) -> None:
        """Give the key up at once (graceful stop), so a standby need not wait for the lease."""
        fence, self._fence = self._fence, None
        if fence is not None and self._lease_id:
            try:
                _, leases = await self._stubs()
                await leases.LeaseRevoke(rpc.LeaseRevokeRequest(ID=self._lease_id),
                                         timeout=self._settings.timeout_seconds)
            except Exception as e:  # noqa: BLE001 - the lease runs out by itself anyway
                log.warning("leader election: revoke failed (%s)", e)

    async def close(self) -> None:
        await self._client.close()
