"""`explain`: a dry run of one pod on the scheduler's live state.

The scheduling cycle is synchronous inside the Scheduler actor, so while this
coroutine runs on the same loop no cycle is half done: the cache is consistent.
It refreshes the scheduler's snapshot from the cache (what the next cycle would do
first anyway), runs framework.algorithm.explain with the pod's profile, and puts
the handle's snapshot back. Nothing is assumed, reserved or written.
"""
from __future__ import annotations

from typing import Any

from framework.algorithm import explain
from framework.api.errors import ValidationError
from framework.api.objects import Pod
from transport.wire import ApiError, Reason


async def explain_on_live_snapshot(pipeline: Any, raw: dict[str, Any]) -> dict[str, Any]:
    if raw.get("kind", "Pod") != "Pod":
        raise ApiError(Reason.INVALID, f"pod.kind: must be Pod, got {raw.get('kind')!r}")
    try:
        pod = Pod({**raw, "kind": "Pod"})
    except ValidationError as err:
        raise ApiError(Reason.INVALID, str(err.under("pod"))) from None
    fwk = pipeline.frameworks.get(pod.scheduler_name)
    if fwk is None:
        raise ApiError(Reason.INVALID, f"pod.spec.schedulerName: no profile named {pod.scheduler_name!r}; "
                                       f"profiles: {', '.join(sorted(pipeline.frameworks))}")
    # The scheduler's own snapshot, brought up to date as its next cycle would do.
    snapshot = pipeline.scheduler.snapshot
    pipeline.scheduler.cache.update_snapshot(snapshot)
    previous = fwk.handle.snapshot()
    try:
        return explain(fwk, pod, snapshot)
    finally:
        fwk.handle.set_snapshot(previous)
