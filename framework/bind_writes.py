"""Writes that ride with a pod's binding: object updates a PreBind plugin wants made in
the same store write as the binding, all or none (DynamicResources' claim allocation and
reservation, so no crash leaves a claim allocated for a pod that is not bound, and no
pod bound without its claims). kube-scheduler makes them as separate API calls; ksched's
store takes both in one message (actors/store/messages.BindWithUpdates).

The binding cycle offers a BindWrites in the CycleState when the pod's binder carries
them (its first Bind plugin says `carries_bind_writes`, and no binding extender takes
the pod). A PreBind plugin that finds the offer adds its updates there, each with what
to do once it is stored, instead of writing it; DefaultBinder hands them to
Handle.bind_pod. Without the offer (tests calling PreBind alone, a binding extender,
another Bind plugin) the plugin writes at PreBind as upstream does. If the binding
fails, none of the updates was made."""
from __future__ import annotations

from typing import Any, Callable, Mapping

from framework.interface import CycleState

STATE_KEY = "ksched.io/bind-writes"

Written = Callable[[dict[str, Any]], None]


class BindWrites:
    __slots__ = ("_pending",)

    def __init__(self) -> None:
        self._pending: list[tuple[Mapping[str, Any], Written]] = []

    def clone(self) -> "BindWrites":
        return self  # one binding: every copy of the state adds to the same write

    def add(self, obj: Mapping[str, Any], written: Written) -> None:
        """Update `obj` with the binding; `written(stored)` once it is stored."""
        self._pending.append((obj, written))

    def take(self) -> list[tuple[Mapping[str, Any], Written]]:
        """The updates added so far (handed to the binder once)."""
        pending, self._pending = self._pending, []
        return pending


def offer(state: CycleState) -> None:
    """The binding cycle: this pod's binder carries PreBind's updates."""
    state.write(STATE_KEY, BindWrites())


def offered(state: CycleState) -> BindWrites | None:
    """The offer, when the binding cycle made one."""
    found = state.get(STATE_KEY)
    return found if isinstance(found, BindWrites) else None
