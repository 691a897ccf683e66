"""Feature gates the plugins consult, with the defaults of the upstream release we follow."""
from __future__ import annotations

from typing import Mapping

DEFAULTS: dict[str, bool] = {
    "MatchLabelKeysInPodTopologySpread": True,
    "MatchLabelKeysInPodAffinity": True,
    "NodeInclusionPolicyInPodTopologySpread": True,
    "PodLevelResources": True,
    "SidecarContainers": True,
    "TaintTolerationComparisonOperators": True,
    "SchedulerQueueingHints": True,
    "SchedulerPopFromBackoffQ": True,
    "DRAExtendedResource": False,
    "InPlacePodVerticalScaling": True,
    "StorageCapacityScoring": False,
    # Beta and on since v1.33: preemption's API calls run outside the scheduling cycle.
    "SchedulerAsyncPreemption": True,
}


class FeatureGates:
    """Read-only gate values: upstream defaults overlaid with explicit settings."""

    __slots__ = ("_values",)

    def __init__(self, overrides: Mapping[str, bool] | None = None) -> None:
        values = dict(DEFAULTS)
        for name, on in (overrides or {}).items():
            if not isinstance(on, bool):
                raise ValueError(f"featureGates.{name}: must be true or false")
            values[name] = on
        self._values = values

    def enabled(self, name: str) -> bool:
        return self._values.get(name, False)

    def as_dict(self) -> dict[str, bool]:
        return dict(self._values)
