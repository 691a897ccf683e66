"""The `kueue` section of the DaemonConfiguration, with the names of Kueue's own
Configuration (apis/config/v1beta2): fairSharing (enabled when the block is present)
with preemptionStrategies, and waitForPodsReady with timeout and requeuingStrategy."""
from __future__ import annotations

import re
from typing import Any, Mapping

from actors.admission import AdmissionConfig
from framework.api.errors import ValidationError
from framework.kueue.fairsharing import DEFAULT_STRATEGIES, VALID_STRATEGIES

_DURATION = re.compile(r"^(\d+(?:\.\d+)?)(ms|s|m|h)$")
_UNIT = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def _duration(value: object, name: str) -> float:
    """A Go duration ("5m", "90s") or a number of seconds."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0:
        return float(value)
    m = _DURATION.match(value) if isinstance(value, str) else None
    if m is None:
        raise ValidationError(name, f"must be a duration such as \"5m\" or \"300s\", got {value!r}")
    return float(m.group(1)) * _UNIT[m.group(2)]


def _obj(value: object, name: str, known: tuple[str, ...]) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ValidationError(name, "must be an object")
    for key in value:
        if key not in known:
            raise ValidationError(f"{name}.{key}", f"unknown field; known fields: {', '.join(known)}")
    return value


def parse_kueue(doc: object) -> AdmissionConfig:
    k = _obj(doc, "kueue", ("fairSharing", "waitForPodsReady"))
    kw: dict[str, Any] = {}
    if "fairSharing" in k:
        fs = _obj(k["fairSharing"], "kueue.fairSharing", ("preemptionStrategies",))
        strategies = tuple(fs.get("preemptionStrategies") or DEFAULT_STRATEGIES)
        if strategies not in VALID_STRATEGIES:
            raise ValidationError("kueue.fairSharing.preemptionStrategies",
                                  f"must be one of {', '.join(str(list(v)) for v in VALID_STRATEGIES)}")
        kw["fair_sharing"], kw["preemption_strategies"] = True, strategies
    if "waitForPodsReady" in k:
        w = _obj(k["waitForPodsReady"], "kueue.waitForPodsReady", ("enable", "timeout", "requeuingStrategy"))
        if w.get("enable") is False:
            kw["pods_ready_timeout_seconds"] = None
        elif "timeout" in w:
            kw["pods_ready_timeout_seconds"] = _duration(w["timeout"], "kueue.waitForPodsReady.timeout")
        rs = _obj(w.get("requeuingStrategy"), "kueue.waitForPodsReady.requeuingStrategy",
                  ("backoffBaseSeconds", "backoffMaxSeconds"))
        for key, attr in (("backoffBaseSeconds", "backoff_base_seconds"), ("backoffMaxSeconds", "backoff_max_seconds")):
            if key in rs:
                v = rs[key]
                if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                    raise ValidationError(f"kueue.waitForPodsReady.requeuingStrategy.{key}", "must be an integer >= 0")
                kw[attr] = float(v)
    return AdmissionConfig(**kw)
