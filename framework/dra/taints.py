"""Device taints and a request's tolerations (DRADeviceTaints, alpha and off in 1.35).

With the gate on, a device with a NoSchedule or NoExecute taint is allocated only for a
request that tolerates that taint; other effects (None) never keep a device away. A
toleration matches as resourceclaim.ToleratesTaint does: its effect and key, when set,
equal the taint's; operator Exists matches any value, Equal (the default) the same value."""
from __future__ import annotations

from typing import Any, Mapping, Sequence

_BLOCKING_EFFECTS = frozenset({"NoSchedule", "NoExecute"})


def tolerates(toleration: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    effect = toleration.get("effect") or ""
    if effect and effect != taint.get("effect"):
        return False
    key = toleration.get("key") or ""
    if key and key != taint.get("key"):
        return False
    operator = toleration.get("operator") or ""
    if operator in ("", "Equal"):
        return (toleration.get("value") or "") == (taint.get("value") or "")
    return operator == "Exists"


def taint_prevents_allocation(device: Mapping[str, Any], tolerations: Sequence[Mapping[str, Any]]) -> bool:
    return any(taint.get("effect") in _BLOCKING_EFFECTS and not any(tolerates(t, taint) for t in tolerations)
               for taint in device.get("taints") or ())
