"""DynamicResourcesArgs (kubescheduler.config.k8s.io/v1) with upstream's defaults and
ValidateDynamicResourcesArgs: `filterTimeout` (DRASchedulerFilterTimeout, beta and on in
1.35; default 10s, 0 turns the limit off, negative is refused) and `bindingTimeout`
(refused while DRADeviceBindingConditions is off, as in ksched)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from framework.api.errors import ValidationError
from framework.extender import parse_duration_seconds

DEFAULT_FILTER_TIMEOUT_SECONDS = 10.0
_FIELDS = ("apiVersion", "kind", "filterTimeout", "bindingTimeout")


@dataclass(frozen=True, slots=True)
class DynamicResourcesArgs:
    filter_timeout: float = DEFAULT_FILTER_TIMEOUT_SECONDS  # seconds; 0: no limit


def parse_args(args: Mapping[str, Any] | None) -> DynamicResourcesArgs:
    args = args or {}
    for key in args:
        if key not in _FIELDS:
            raise ValidationError(key, "unknown field")
    if args.get("bindingTimeout") is not None:
        raise ValidationError("bindingTimeout", "Forbidden: DRADeviceBindingConditions or "
                                                "DRAResourceClaimDeviceStatus feature gate is disabled")
    value = args.get("filterTimeout")
    if value is None:
        return DynamicResourcesArgs()
    negative = isinstance(value, str) and value.startswith("-")
    try:
        seconds = parse_duration_seconds(value[1:] if negative else value, "filterTimeout")
    except ValueError as e:
        raise ValidationError("filterTimeout", str(e).split(": ", 1)[-1]) from None
    if negative and seconds > 0 or not negative and isinstance(value, (int, float)) and value < 0:
        shown = f'"{value}"' if isinstance(value, str) else value
        raise ValidationError("filterTimeout", f"Invalid value: {shown}: must be zero or positive")
    return DynamicResourcesArgs(filter_timeout=seconds)
