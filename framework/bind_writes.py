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

from dataclasses import dataclass
from typing import Any, Callable, Mapping

from framework.interface import CycleState

STATE_KEY = "ksched.io/bind-writes"

Written = Callable[[dict[str, Any]], None]


@dataclass(frozen=True, slots=True, kw_only=True)
class StatusWrite:
    """`obj`'s status written through its status subresource (kube's UpdateStatus): the
    stored object's spec and metadata are kept as stored, only the status is judged and
    written; `obj`'s metadata.resourceVersion is the precondition. `finalizer`: one
    finalizer added with it (DynamicResources' PreBind: upstream adds it with a normal
    Update just before its UpdateStatus), the only metadata change it may carry."""

    obj: Mapping[str, Any]
    finalizer: str = ""

    def as_object(self) -> dict[str, Any]:
        """`obj` with the finalizer added (what the write leaves, resourceVersion aside)."""
        meta = self.obj.get("metadata")
        meta = meta if isinstance(meta, Mapping) else {}
        have = list(meta.get("finalizers") or [])
        if not self.finalizer or self.finalizer in have:
            return dict(self.obj)
        return {**self.obj, "metadata": {**meta, "finalizers": have + [self.finalizer]}}


Update = Mapping[str, Any] | StatusWrite  # a whole object's update, or a status-only one


class BindWrites:
    __slots__ = ("_pending",)

    def __init__(self) -> None:
        self._pending: list[tuple[Update, Written]] = []

    def clone(self) -> "BindWrites":
        return self  # one binding: every copy of the state adds to the same write

    def add(self, obj: Update, written: Written) -> None:
        """Update `obj` with the binding; `written(stored)` once it is stored."""
        self._pending.append((obj, written))

    def take(self) -> list[tuple[Update, Written]]:
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
