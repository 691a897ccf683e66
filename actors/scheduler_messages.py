"""The messages the Scheduler actor handles (actors/scheduler.py)."""
from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Union

from actors.binding import AssumedPod
from actors.queue.group_pop import QueuedPodGroup
from actors.scheduler_views import GetAttempts, GetStats
from actors.store import WatchEvent
from actors.waiting_room import PermitRejected, PermitSettled
from framework.api.objects import Pod
from framework.interface import QueuedPodInfo, Status


@dataclass(frozen=True, slots=True, kw_only=True)
class StoreChanged:
    """Store watch events, in the store's order, handled one after the other as one
    message each would be. The list grows only while the message is last in the
    Scheduler's inbox (Scheduler.store_changed); once taken, it is read only."""

    events: list[WatchEvent]


@dataclass(frozen=True, slots=True, kw_only=True)
class Popped:
    qpi: QueuedPodInfo | QueuedPodGroup | None  # None: the queue closed; a gang comes as one


@dataclass(frozen=True, slots=True, kw_only=True)
class Explain:
    """A dry run of `pod` on the live cache (framework.explain.explain); the
    reply is its report. Nothing is assumed, reserved or written."""

    pod: Pod
    reply: asyncio.Future


@dataclass(frozen=True, slots=True, kw_only=True)
class BindingDone:
    """Binding cycles ended, each Success (bound) or why it failed, in the order they
    ended. The list grows only while the message is last in the Scheduler's own inbox
    (its binding cycles, actors/scheduler_outcomes.py); once taken, it is read only."""

    outcomes: list[tuple[AssumedPod, Status]]




SchedulerMsg = Union[StoreChanged, Popped, Explain, BindingDone, GetStats, GetAttempts, PermitSettled,
                     PermitRejected]
