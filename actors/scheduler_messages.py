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
    event: WatchEvent


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
    """A binding cycle ended: Success (bound) or why it failed."""

    assumed: AssumedPod
    status: Status




SchedulerMsg = Union[StoreChanged, Popped, Explain, BindingDone, GetStats, GetAttempts, PermitSettled,
                     PermitRejected]
