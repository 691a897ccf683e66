"""Leader election on a real etcd cluster: one leader, fast hand-over, fencing."""
from __future__ import annotations

import asyncio

import pytest

from actors.leader_election import LeaderElectionConfig, LeaderElector
from actors.store.etcd import EtcdBackend
from actors.store.shared import NotLeader
from tests.actors.store_helpers import pod
from tests.etcd.test_shared_store import node, running

SHORT = LeaderElectionConfig(lease_duration_seconds=2, renew_deadline_seconds=1.5, retry_period_seconds=0.5)


async def test_only_one_of_two_candidates_leads_and_the_other_takes_over_when_it_resigns(etcd_settings) -> None:
    a, b = LeaderElector(etcd_settings, "a", SHORT), LeaderElector(etcd_settings, "b", SHORT)
    try:
        await a.acquire()
        assert not await b.try_acquire()
        assert (a.is_leader, b.is_leader) == (True, False)
        assert await b.holder() == "a"
        standby = asyncio.create_task(b.acquire())
        await a.resign()
        await standby  # the deletion wakes it: no waiting for a lease to run out
        assert (a.is_leader, b.is_leader) == (False, True)
        assert await a.holder() == "b"
        assert b.fence() is not None and b.fence().create_revision > 0
    finally:
        await a.close()
        await b.close()


async def test_a_leader_that_stopped_renewing_cannot_bind_once_its_lease_ran_out(etcd_settings) -> None:
    paused, standby = LeaderElector(etcd_settings, "paused", SHORT), LeaderElector(etcd_settings, "standby", SHORT)
    try:
        await paused.acquire()
        stale_fence = paused.fence()
        # "paused" never renews (a stopped process); etcd deletes its key when the lease ends
        await standby.acquire()
        assert await standby.holder() == "standby"
        async with running(EtcdBackend(etcd_settings, fence=lambda: stale_fence)) as (_, old_leader):
            await old_leader.apply([node("n1"), pod("p")])
            with pytest.raises(NotLeader):
                await old_leader.bind("default", "p", "n1")
        async with running(EtcdBackend(etcd_settings, fence=standby.fence)) as (_, new_leader):
            bound = await new_leader.bind("default", "p", "n1")
            assert bound["spec"]["nodeName"] == "n1"
    finally:
        await paused.close()
        await standby.close()


async def test_a_leader_that_keeps_renewing_stays_leader_past_its_lease(etcd_settings) -> None:
    leader, other = LeaderElector(etcd_settings, "leader", SHORT), LeaderElector(etcd_settings, "other", SHORT)
    try:
        await leader.acquire()
        holding = asyncio.create_task(leader.hold())
        # the other candidate's attempts span several lease durations; every one fails
        for _ in range(2):
            await other._wait_for_release(SHORT.lease_duration_seconds)
            assert not await other.try_acquire()
        assert not holding.done() and leader.is_leader
        holding.cancel()
    finally:
        await leader.close()
        await other.close()
