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

Leadership is claimed only on proof: the acquiring transaction succeeded, and
it did so before renewDeadline had passed since the lease was asked for (times
are measured from when a request was sent, so etcd's lease can only outlive
them). A leader that cannot renew steps down when renewDeadline passes since its
last proven renewal, even while a renewal hangs; the fence it hands its
scheduler stays usable only until leaseDuration after that renewal, so nothing
fenced is even attempted once the lease could have run out for others. Every
etcd failure (a member died, a deadline passed, the connection broke) is caught,
logged once per episode and retried with backoff (actors.store.etcd_errors).
"""
from __future__ import annotations

import asyncio
import json
import logging
import math
import time
from dataclasses import dataclass
from typing import Any

import grpc
from aetcd import rpc
from aetcd.exceptions import ClientError

from actors.store.etcd import EtcdSettings, Fence, connect
from actors.store.etcd_errors import Retry, describe

log = logging.getLogger("ksched.leader_election")

REVOKE_TIMEOUT_SECONDS = 1.0  # giving a lease back is a courtesy: it runs out by itself anyway


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaderElectionConfig:
    lease_duration_seconds: float = 15.0
    renew_deadline_seconds: float = 10.0
    retry_period_seconds: float = 2.0
    resource_name: str = "kube-scheduler"
    resource_namespace: str = "kube-system"


class LeaderElector:
    """Campaigns for, holds and gives up one election key. One task drives it:
    `await acquire()` (returns only once this daemon leads; never raises for an
    etcd failure), then `await hold()` (returns why, once leadership is lost),
    `resign()` when done (after a loss too: it forgets the fence)."""

    def __init__(self, settings: EtcdSettings, identity: str, cfg: LeaderElectionConfig | None = None) -> None:
        self.cfg = cfg or LeaderElectionConfig()
        self.identity = identity
        self.key = f"{settings.prefix.rstrip('/')}/leases/{self.cfg.resource_namespace}/{self.cfg.resource_name}"
        self._settings = settings
        self._client = connect(settings)
        self._lease_id = 0
        self._fence: Fence | None = None
        self._renew_by = 0.0  # monotonic: leading ends here unless a renewal is proven first
        self._valid_until = 0.0  # monotonic: the lease may have run out for others from here on
        self._retry = Retry(log, "leader election", initial=self.cfg.retry_period_seconds,
                            cap=max(self.cfg.retry_period_seconds, self.cfg.lease_duration_seconds / 2))
        self.transitions = 0  # times this daemon became leader
        self.acquired_at: float | None = None  # wall time of the last acquisition

    @property
    def is_leader(self) -> bool:
        """Leading, as far as this daemon can prove: acquired and renewed within renewDeadline."""
        return self._fence is not None and time.monotonic() < self._renew_by

    def fence(self) -> Fence | None:
        """What fenced writes compare on, while the lease cannot have run out yet; None after."""
        if self._fence is not None and time.monotonic() < self._valid_until:
            return self._fence
        return None

    @property
    def etcd_errors(self) -> int:
        """etcd requests of the campaign and of renewals that failed, since start."""
        return self._retry.total

    async def _stubs(self) -> tuple[Any, Any]:
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
        """One attempt: create the key under a fresh lease if nobody holds it.
        True only when this daemon now provably leads; an etcd failure raises."""
        kv, leases = await self._stubs()
        ttl = max(1, math.ceil(self.cfg.lease_duration_seconds))
        asked = time.monotonic()  # the lease cannot run out before asked + ttl
        grant = await leases.LeaseGrant(rpc.LeaseGrantRequest(TTL=ttl), timeout=self._settings.timeout_seconds)
        value = json.dumps({"holderIdentity": self.identity, "leaseDurationSeconds": ttl,
                            "acquireTime": time.time()}).encode()
        key = self.key.encode()
        try:
            resp = await kv.Txn(rpc.TxnRequest(
                compare=[rpc.Compare(key=key, target=rpc.Compare.CREATE, result=rpc.Compare.EQUAL,
                                     create_revision=0)],
                success=[rpc.RequestOp(request_put=rpc.PutRequest(key=key, value=value, lease=grant.ID))],
            ), timeout=self._settings.timeout_seconds)
        except BaseException:
            # the transaction may have gone through unseen: revoking the lease deletes the key if so
            await self._revoke(grant.ID)
            raise
        if not resp.succeeded:
            await self._revoke(grant.ID)
            return False
        if time.monotonic() >= asked + self.cfg.renew_deadline_seconds:
            log.warning("leader election: the key was won only after renewDeadline (%ss); giving it back",
                        self.cfg.renew_deadline_seconds)
            await self._revoke(grant.ID)
            return False
        self._lease_id = grant.ID
        self._fence = Fence(self.key, resp.header.revision)
        self._proven(asked)
        self.transitions += 1
        self.acquired_at = time.time()
        log.info("%s became leader (key %s, revision %d)", self.identity, self.key, resp.header.revision)
        return True

    def _proven(self, asked: float) -> None:
        """The lease was alive after `asked` (a grant or renewal sent then succeeded)."""
        self._renew_by = asked + self.cfg.renew_deadline_seconds
        self._valid_until = asked + self.cfg.lease_duration_seconds

    async def acquire(self) -> None:
        """Campaign until this daemon leads. An etcd failure is logged (once an
        episode) and retried with backoff; only cancellation ends this otherwise."""
        while True:
            try:
                won = await self.try_acquire()
                self._retry.succeeded()
                if won:
                    return
                await self._wait_for_release(self.cfg.retry_period_seconds)
            except asyncio.CancelledError:
                raise
            except Exception as e:  # noqa: BLE001 - every failure is retried (etcd_errors.Retry logs it)
                await asyncio.sleep(self._retry.failed(e))

    async def _wait_for_release(self, at_most: float) -> None:
        """Return when the key is deleted (its lease ran out or was revoked), or after
        `at_most` seconds. etcd's Watch is used directly: a hang anywhere (creating the
        watch included) ends at `at_most`, and cancelling the call never waits on etcd."""
        await self._client.connect()
        call = rpc.WatchStub(self._client.channel).Watch()

        async def deleted() -> None:
            await call.write(rpc.WatchRequest(create_request=rpc.WatchCreateRequest(key=self.key.encode())))
            while True:
                resp = await call.read()
                if resp is grpc.aio.EOF or resp.canceled:
                    raise ClientError("etcd ended the election key's watch")
                if any(ev.type == rpc.Event.DELETE for ev in resp.events):
                    return

        try:
            await asyncio.wait_for(deleted(), at_most)
        except TimeoutError:
            pass
        finally:
            call.cancel()

    async def hold(self) -> str:
        """Renew every retryPeriod; returns why leadership is lost: the lease ran out,
        or no renewal was proven within renewDeadline (checked even while one hangs)."""
        _, leases = await self._stubs()
        while True:
            left = self._renew_by - time.monotonic()
            if left <= 0:
                return self._lost(f"not renewed within renewDeadline {self.cfg.renew_deadline_seconds}s")
            await asyncio.sleep(min(self.cfg.retry_period_seconds, left))
            asked = time.monotonic()
            left = self._renew_by - asked
            if left <= 0:
                continue
            try:
                ttl = await asyncio.wait_for(self._keep_alive(leases), left)
            except asyncio.CancelledError:
                raise
            except Exception as e:  # noqa: BLE001 - any failure: try again until renewDeadline
                self._retry.failed(e)
                continue
            self._retry.succeeded()
            if ttl <= 0:
                return self._lost("the lease expired")
            self._proven(asked)

    async def _keep_alive(self, leases: Any) -> int:
        """One renewal; the lease's TTL after it (0 or less: etcd no longer has the lease)."""
        call = leases.LeaseKeepAlive(iter([rpc.LeaseKeepAliveRequest(ID=self._lease_id)]),
                                     timeout=self._settings.timeout_seconds)
        try:
            async for reply in call:
                return int(reply.TTL)
            return 0
        finally:
            call.cancel()

    def _lost(self, why: str) -> str:
        """Stop leading at once; the fence stays usable until the lease could have run
        out, so the scheduler's binding cycles already under way can finish."""
        log.warning("%s lost leadership: %s", self.identity, why)
        self._renew_by = 0.0
        return why

    def valid_for(self) -> float:
        """Seconds until the lease could have run out for others (0 when not held)."""
        return max(0.0, self._valid_until - time.monotonic()) if self._fence is not None else 0.0

    async def resign(self) -> None:
        """Forget the fence and give the lease up (graceful stop, or after a loss),
        so a standby need not wait for it to run out."""
        fence, self._fence = self._fence, None
        self._renew_by = self._valid_until = 0.0
        lease, self._lease_id = self._lease_id, 0
        if fence is not None and lease:
            await self._revoke(lease)

    async def _revoke(self, lease: int) -> None:
        try:
            _, leases = await self._stubs()
            await leases.LeaseRevoke(rpc.LeaseRevokeRequest(ID=lease),
                                     timeout=min(self._settings.timeout_seconds, REVOKE_TIMEOUT_SECONDS))
        except Exception as e:  # noqa: BLE001 - the lease runs out by itself anyway
            log.info("leader election: could not revoke lease %x (%s); it runs out by itself", lease, describe(e))

    async def close(self) -> None:
        await self._client.close()
