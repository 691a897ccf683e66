"""`explain`: a dry run of one pod on the scheduler's live state.

The wire side only: check the pod and its profile, naming the field, then ask the
Scheduler actor (actors.scheduler.Explain). The actor answers between two cycles,
on its own cache and snapshot, with framework.explain's report. Nothing
is assumed, reserved or written. A bound pod is explained as if it were not bound
yet: without spec.nodeName, and not counted on its node.
"""
from __future__ import annotations

from typing import Any

from actors.base import MailboxClosed, new_reply
from actors.scheduler import Explain
from framework.api.errors import ValidationError
from framework.api.objects import Pod, parse_object
from framework.api.schema import admitted
from transport.protocol.wire import ApiError, Reason


async def explain_on_live_snapshot(pipeline: Any, raw: dict[str, Any]) -> dict[str, Any]:
    if raw.get("kind", "Pod") != "Pod":
        raise ApiError(Reason.INVALID, f"pod.kind: must be Pod, got {raw.get('kind')!r}")
    spec = raw.get("spec")
    if isinstance(spec, dict) and spec.get("nodeName"):  # explained as if it were not bound yet
        raw = {**raw, "spec": {k: v for k, v in spec.items() if k != "nodeName"}}
    manifest, errors = admitted({**raw, "kind": "Pod"}, strict=False)  # the types the scheduler relies on
    try:
        if errors:
            raise errors[0]
        pod = parse_object(manifest)
    except ValidationError as err:
        raise ApiError(Reason.INVALID, str(err.under("pod"))) from None
    assert isinstance(pod, Pod)
    if pod.scheduler_name not in pipeline.frameworks:
        raise ApiError(Reason.INVALID, f"pod.spec.schedulerName: no profile named {pod.scheduler_name!r}; "
                                       f"profiles: {', '.join(sorted(pipeline.frameworks))}")
    try:
        return await pipeline.scheduler.ref().ask(Explain(pod=pod, reply=new_reply()))
    except MailboxClosed:
        raise ApiError(Reason.UNAVAILABLE, "explain: the scheduler is shutting down") from None
