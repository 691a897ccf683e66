"""What the AdmissionActor is sent: store changes it watches, and its own timers."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Union

from actors.store import WatchEvent


@dataclass(frozen=True, slots=True, kw_only=True)
class StoreChanged:
    """A change to a watched kind (its watch sink, AdmissionActor.observe)."""

    event: WatchEvent


@dataclass(frozen=True, slots=True, kw_only=True)
class ReadyCheck:
    """waitForPodsReady's timer: are the workload's pods placed? `token` is the
    admission it was armed for (a later admission arms a new one)."""

    key: str
    token: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Unpark:
    """A workload's backoff after a PodsReadyTimeout eviction is over."""

    key: str


AdmissionMsg = Union[StoreChanged, ReadyCheck, Unpark]
