"""An etcd member that hangs or dies under one elector or store (each pointed at
that member alone): the elector never claims leadership it cannot prove, a leader
steps down before its lease can have run out, and a client's write fails as
Unavailable (retryable), never Internal."""
from __future__ import annotations

import asyncio
import dataclasses
import logging
from typing import AsyncIterator

import pytest

from actors.leader_election import LeaderElectionConfig, LeaderElector
from actors.store.etcd import EtcdBackend, EtcdSettings
from actors.store.messages import StoreError, Unavailable
from tests.actors.store_helpers import pod
from tests.etcd.test_shared_store import node, running
from transport.ha.etcd_local import LocalEtcd

SHORT = LeaderElectionConfig(lease_duration_seconds=2, renew_deadline_seconds=1.5, retry_period_seconds=0.25)
MEMBER = 2  # the member these tests stop (the daemon suites' clients start on member 0)


class Member:
    """One member of the session's cluster, to freeze (SIGSTOP), kill and bring back."""

    def __init__(self, cluster: LocalEtcd, index: int) -> None:
        self.cluster, self.index = cluster, index

    def freeze(self) -> None:
        self.cluster.freeze(self.index)

    def kill(self) -> None:
        self.cluster.kill(self.index)

    async def restore(self) -> None:
        self.cluster.thaw(self.index)
        await asyncio.to_thread(self.cluster.restart, self.index)


@pytest.fixture
async def member(etcd_cluster: LocalEtcd) -> AsyncIterator[Member]:
    m = Member(etcd_cluster, MEMBER)
    try:
        yield m
    finally:
        await m.restore()


def only(settings: EtcdSettings, cluster: LocalEtcd, timeout: float) -> EtcdSettings:
    """The same settings on one member alone (no failover to hide its outage)."""
    return dataclasses.replace(settings, endpoints=(cluster.members[MEMBER].endpoint,), timeout_seconds=timeout)


class Failures(logging.Handler):
    """Counts the leader election's logged etcd failures (the first of an episode
    at WARNING, the rest at DEBUG), so a test can await the n-th."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.warnings = 0
        self.count = 0
        self._changed = asyncio.Event()

    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage()
        if "etcd unavailable" in text or "in a row" in text:
            self.count += 1
            self.warnings += record.levelno >= logging.WARNING
            self._changed.set()

    async def until(self, n: int, task: asyncio.Task) -> None:
        """Return once n failures were logged; fail if `task` ends first."""
        while self.count < n:
            self._changed.clear()
            changed = asyncio.ensure_future(self._changed.wait())
            await asyncio.wait({changed, task}, return_when=asyncio.FIRST_COMPLETED)
            changed.cancel()
            if task.done():
                raise AssertionError(f"acquire() ended during the outage: {task.exception()!r}")


@pytest.fixture
def failures() -> AsyncIterator[Failures]:
    handler = Failures()
    logger = logging.getLogger("ksched.leader_election")
    level = logger.level
    logger.setLevel(logging.DEBUG)
    logger.addHandler(handler)
    yield handler
    logger.removeHandler(handler)
    logger.setLevel(level)


async def test_an_elector_whose_etcd_hangs_then_dies_mid_acquire_never_claims_leadership(
        etcd_cluster, etcd_settings, member: Member, failures: Failures) -> None:
    elector = LeaderElector(only(etcd_settings, etcd_cluster, timeout=0.5), "cut-off", SHORT)
    try:
        member.freeze()  # every request hangs: the lease grant ends in DEADLINE_EXCEEDED
        campaign = asyncio.create_task(elector.acquire())
        await failures.until(2, campaign)
        assert not elector.is_leader and elector.fence() is None
        member.kill()  # the connection breaks: UNAVAILABLE
        await failures.until(4, campaign)
        assert not elector.is_leader and elector.fence() is None
        assert failures.warnings == 1  # one line for the whole outage; the rest at DEBUG
        await member.restore()
        await asyncio.wait_for(campaign, 60)  # the same campaign, retrying with backoff, now wins
        assert elector.is_leader and elector.fence() is not None
        assert await elector.holder() == "cut-off"  # confirmed by etcd itself
    finally:
        await elector.resign()
        await elector.close()


async def test_a_leader_whose_etcd_hangs_steps_down_before_its_lease_can_run_out(
        etcd_cluster, etcd_settings, member: Member) -> None:
    # a request timeout far past the lease: only renewDeadline can end the hang in time
    cfg = LeaderElectionConfig(lease_duration_seconds=4, renew_deadline_seconds=2, retry_period_seconds=0.25)
    leader = LeaderElector(only(etcd_settings, etcd_cluster, timeout=30), "leader", cfg)
    try:
        await leader.acquire()
        fence = leader.fence()
        holding = asyncio.create_task(leader.hold())
        member.freeze()
        # steps down while the lease is provably alive: before leaseDuration since the last renewal
        why = await asyncio.wait_for(holding, cfg.lease_duration_seconds)
        assert "renewDeadline" in why
        assert not leader.is_leader
        assert leader.fence() in (fence, None)  # usable only until the lease could have run out
    finally:
        await member.restore()
        await leader.resign()
        await leader.close()


async def test_a_write_while_etcd_hangs_or_dies_fails_as_unavailable_not_internal(
        etcd_cluster, etcd_settings, member: Member) -> None:
    async with running(EtcdBackend(only(etcd_settings, etcd_cluster, timeout=0.5))) as (_, client):
        await client.apply([node("n1")])
        member.freeze()
        with pytest.raises(StoreError) as hung:
            await client.apply([pod("during-hang")])
        member.kill()
        with pytest.raises(StoreError) as dead:
            await client.apply([pod("after-death")])
        await member.restore()
        for _ in range(100):  # a client retries Unavailable; gRPC reconnects within a second
            try:
                stored = await client.apply([pod("after-restart")])
                break
            except Unavailable:
                await asyncio.sleep(0.1)  # the client's pause between retries
        assert stored[0]["metadata"]["name"] == "after-restart"
    assert isinstance(hung.value, Unavailable), hung.value  # DEADLINE_EXCEEDED
    assert isinstance(dead.value, Unavailable), dead.value  # UNAVAILABLE
    assert hung.value.reason == dead.value.reason == "Unavailable"
