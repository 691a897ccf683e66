"""What the scheduler answers when asked (GetAttempts, GetStats) is a frozen copy:
tools such as the conformance runner and the benchmark read nothing else of it."""
from __future__ import annotations

import dataclasses

import pytest

from actors.clock import FakeClock
from actors.pipeline import Pipeline
from tests.actors.helpers import node, pod


async def test_an_attempt_is_read_as_a_frozen_copy_that_later_attempts_do_not_change() -> None:
    async with Pipeline(None, clock=FakeClock()) as p:
        await p.client.apply([node("n1", cpu="1")])
        await p.client.apply([pod("big", cpu="2")])
        await p.settle()
        first = (await p.attempts(["default/big", "default/absent"]))
        assert list(first) == ["default/big"]
        view = first["default/big"]
        assert view.fit_error is not None and view.evaluated_nodes is None
        assert view.fit_error.message.startswith("0/1 nodes are available: 1 Insufficient cpu.")
        assert [(s.node, s.plugin) for s in view.fit_error.node_statuses] == [("n1", "NodeResourcesFit")]
        with pytest.raises(dataclasses.FrozenInstanceError):
            view.error = "changed"  # type: ignore[misc]
        await p.client.apply([node("n2", cpu="4")])
        await p.run_until_quiescent(60)
        after = (await p.attempts(["default/big"]))["default/big"]
        assert after.fit_error is None and after.evaluated_nodes == 2
        assert view.fit_error.message.startswith("0/1 nodes are available: 1 Insufficient cpu.")  # the copy kept its answer
        stats = await p.scheduler_stats(latencies=True)
        assert stats.scheduled == 1 and len(stats.e2e_seconds) == 1 and len(stats.bind_seconds) == 1
        assert (await p.scheduler_stats()).e2e_seconds == ()  # only when asked for
