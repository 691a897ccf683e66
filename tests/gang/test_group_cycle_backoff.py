"""A gang rejected by its whole-group cycle backs off as one (upstream keeps one queued
entry, with one backoff, for a pod group): a member that joined late, with fewer
attempts of its own, does not get a shorter backoff that would pull the group out
early. Through the real actor pipeline with a fake clock."""
from __future__ import annotations

from actors.clock import FakeClock
from actors.pipeline import Pipeline
from tests.gang.test_group_cycle_pipeline import NS, START, gang, member, nodes


async def test_a_late_member_of_a_rejected_gang_gets_the_groups_attempts_and_backoff_expiry() -> None:
    async with Pipeline(clock=FakeClock(START)) as p:
        await p.client.apply(nodes(2, 2))
        await p.client.apply([gang("big", 3)])
        await p.client.apply([member(f"b{i}", 2, "big") for i in range(3)])
        await p.run_until_quiescent(max_seconds=1)
        await p.client.apply([member("b3", 2, "big")])  # joins after the first rejection
        await p.run_until_quiescent(max_seconds=1)
        assert p.scheduler.group_cycle.cycles == 2
        q = p.queue.queue
        infos = [q.get(f"{NS}/b{i}") for i in range(4)]
        assert all(i is not None for i in infos)
        assert {i.attempts for i in infos} == {2}
        assert len({q.backoff_expiry(i) for i in infos}) == 1
