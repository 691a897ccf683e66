"""What a whole-group cycle writes on its scheduling.k8s.io PodGroup: the
PodGroupScheduled condition as upstream's submitPodGroupAlgorithmResult sets it
(True/"Scheduled" with the cycle's message, "" on success; False/"Unschedulable"
with the group's reason; False/"SchedulerError" on an error) and updatePodGroupCondition's
rules: a condition already True is never set back to False by a later cycle (for
extra pods), observedGeneration is the PodGroup's, and nothing is written when
nothing changed (apimeta.SetStatusCondition: lastTransitionTime moves only with
the status). No I/O."""
from __future__ import annotations

from functools import lru_cache
from typing import Any, Mapping

from framework.api.timeutil import format_time
from framework.api.workload_api import POD_GROUP_SCHEDULED, REASON_SCHEDULER_ERROR, REASON_UNSCHEDULABLE
from framework.types import Status

REASON_SCHEDULED = "Scheduled"


def scheduled_condition(status: Status) -> dict[str, str]:
    """PodGroupScheduled for a cycle's outcome (type, status, reason, message)."""
    if status.is_success():
        return {"type": POD_GROUP_SCHEDULED, "status": "True", "reason": REASON_SCHEDULED, "message": status.message()}
    reason = REASON_UNSCHEDULABLE if status.is_rejected() else REASON_SCHEDULER_ERROR
    return {"type": POD_GROUP_SCHEDULED, "status": "False", "reason": reason, "message": status.message()}


def with_condition(raw: Mapping[str, Any], condition: Mapping[str, str], now_ns: int) -> dict[str, Any] | None:
    """The PodGroup `raw` with `condition` set, or None when it needs no write (unchanged,
    or True already and this one is not)."""
    status = dict(raw.get("status") or {})
    conditions = [dict(c) for c in status.get("conditions") or [] if isinstance(c, Mapping)]
    generation = int((raw.get("metadata") or {}).get("generation") or 0)
    existing = next((c for c in conditions if c.get("type") == condition["type"]), None)
    if existing is not None and existing.get("status") == "True" and condition["status"] != "True":
        return None
    wanted = {**condition, "observedGeneration": generation}
    if existing is not None and all(existing.get(k) == v for k, v in wanted.items()):
        return None
    since = existing.get("lastTransitionTime") if existing is not None and existing.get("status") == wanted["status"] else None
    new = {**wanted, "lastTransitionTime": since or _whole_second(now_ns // 1_000_000_000)}
    if existing is None:
        conditions.append(new)
    else:
        conditions[conditions.index(existing)] = new
    return {**raw, "status": {**status, "conditions": conditions}}


@lru_cache(maxsize=4)
def _whole_second(seconds: int) -> str:
    """format_time of this whole second: the groups of one second share its text."""
    return format_time(seconds * 1_000_000_000)


__all__ = ["REASON_SCHEDULED", "scheduled_condition", "with_condition"]
