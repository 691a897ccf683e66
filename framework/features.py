"""Feature gates the plugins consult, with the defaults of the upstream release we follow (v1.35).

Each gate carries upstream's stage and whether upstream locks it to its default
(pkg/features/kube_features.go). `parse_gate_flag` reads kube-scheduler's
`--feature-gates A=true,B=false` (component-base featuregate's Set), and
`check_settable` applies its rules for what a user may set: an unknown name and a
locked gate set away from its default are errors, worded as upstream words them.
The daemon and `ksched bench` apply both; FeatureGates itself accepts a locked
gate at either value, as upstream's own tests do by emulating an older version
(the conformance runner sets gates as the translated test did).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

ALPHA, BETA, GA = "Alpha", "Beta", "GA"
# upstream's special names: set every (unlocked) alpha or beta gate at once
ALL_ALPHA, ALL_BETA = "AllAlpha", "AllBeta"


@dataclass(frozen=True, slots=True)
class GateSpec:
    default: bool
    stage: str
    locked: bool = False  # upstream's LockToDefault
    # False: ksched has no code behind the gate (DRA), so only its default may be set;
    # anything else would be a setting silently ignored.
    implemented: bool = True


KNOWN: dict[str, GateSpec] = {
    "MatchLabelKeysInPodTopologySpread": GateSpec(True, BETA),             # beta 1.27
    "MatchLabelKeysInPodAffinity": GateSpec(True, GA, locked=True),       # GA 1.33
    "NodeInclusionPolicyInPodTopologySpread": GateSpec(True, GA, locked=True),  # GA 1.33
    "PodLevelResources": GateSpec(True, BETA),                             # beta 1.34
    "SidecarContainers": GateSpec(True, GA, locked=True),                 # GA 1.33
    "TaintTolerationComparisonOperators": GateSpec(False, ALPHA),         # alpha 1.35
    "SchedulerQueueingHints": GateSpec(True, GA, locked=True),            # GA 1.34
    "SchedulerPopFromBackoffQ": GateSpec(True, BETA),                     # beta 1.33
    "DynamicResourceAllocation": GateSpec(True, GA, locked=True),        # GA 1.34
    "DRAExtendedResource": GateSpec(False, ALPHA, implemented=False),     # alpha 1.34; no DRA in ksched
    "InPlacePodVerticalScaling": GateSpec(True, GA, locked=True),         # GA 1.35
    "StorageCapacityScoring": GateSpec(False, ALPHA),                     # alpha 1.33
    "SchedulerAsyncPreemption": GateSpec(True, BETA),                     # beta 1.33
    "OpportunisticBatching": GateSpec(True, BETA),                        # beta 1.35 (no alpha)
    # Kubernetes' own gang API (scheduling.k8s.io/v1alpha2 Workload, PodGroup, Pod.spec.schedulingGroup) and
    # its topology constraints: alpha and off upstream in 1.36; on by default in ksched (docs/gangs.md).
    "GenericWorkload": GateSpec(True, ALPHA),                            # alpha 1.35
    "TopologyAwareWorkloadScheduling": GateSpec(True, ALPHA),            # alpha 1.36
    # KEP-5710: PodGroup disruptionMode / priorityClassName / priority, honoured by workload-aware preemption.
    "WorkloadAwarePreemption": GateSpec(True, ALPHA),                    # alpha 1.36
    # ksched's own, not upstream's: equivalence classes in the unschedulable pool
    # (actors/queue/pod_classes.py); off, every pod is woken and retried alone.
    "QueueEquivalenceClasses": GateSpec(True, BETA),
}
DEFAULTS: dict[str, bool] = {name: spec.default for name, spec in KNOWN.items()}


class FeatureGateError(ValueError):
    """A gate setting kube-scheduler would refuse; the message is upstream's."""


def _parse_bool(text: str) -> bool:
    """Go's strconv.ParseBool."""
    if text in ("1", "t", "T", "true", "TRUE", "True"):
        return True
    if text in ("0", "f", "F", "false", "FALSE", "False"):
        return False
    raise ValueError(f'strconv.ParseBool: parsing "{text}": invalid syntax')


def parse_gate_flag(value: str) -> dict[str, bool]:
    """`A=true,B=false` as component-base's featureGate.Set reads it: empty items are
    skipped, names and values are trimmed, values are Go booleans. Names are not
    checked here (check_settable does)."""
    out: dict[str, bool] = {}
    for item in value.split(","):
        if not item:
            continue
        name, sep, raw = item.partition("=")
        name = name.strip()
        if not sep:
            raise FeatureGateError(f"missing bool value for {name}")
        raw = raw.strip()
        try:
            out[name] = _parse_bool(raw)
        except ValueError as err:
            raise FeatureGateError(f"invalid value of {name}={raw}, err: {err}") from None
    return out


def check_settable(settings: Mapping[str, bool]) -> None:
    """Upstream's SetFromMap rules: every name known, no locked gate away from its default."""
    for name, on in settings.items():
        if name in (ALL_ALPHA, ALL_BETA):
            continue
        spec = KNOWN.get(name)
        if spec is None:
            raise FeatureGateError(f"unrecognized feature gate: {name}")
        if spec.locked and on != spec.default:
            raise FeatureGateError(f"cannot set feature gate {name} to {_go(on)}, feature is locked to {_go(spec.default)}")
        if not spec.implemented and on != spec.default:
            raise FeatureGateError(f"cannot set feature gate {name} to {_go(on)}: ksched does not implement "
                                   f"this feature, so it stays {_go(spec.default)}")


def resolve(settings: Mapping[str, bool]) -> dict[str, bool]:
    """Explicit settings with AllAlpha / AllBeta expanded over the unlocked gates of that
    stage; a gate named explicitly wins over the group, whatever the order."""
    out: dict[str, bool] = {}
    for group, stage in ((ALL_ALPHA, ALPHA), (ALL_BETA, BETA)):
        if group in settings:
            out.update({n: settings[group] for n, s in KNOWN.items()
                        if s.stage == stage and not s.locked and s.implemented})
    out.update({n: v for n, v in settings.items() if n not in (ALL_ALPHA, ALL_BETA)})
    return out


def _go(on: bool) -> str:
    return "true" if on else "false"


class FeatureGates:
    """Read-only gate values: upstream defaults overlaid with explicit settings."""

    __slots__ = ("_values",)

    def __init__(self, overrides: Mapping[str, bool] | None = None) -> None:
        values = dict(DEFAULTS)
        for name, on in resolve(overrides or {}).items():
            if name not in KNOWN:
                raise FeatureGateError(f"unrecognized feature gate: {name}")
            if not isinstance(on, bool):
                raise FeatureGateError(f"featureGates.{name}: must be true or false")
            values[name] = on
        self._values = values

    def enabled(self, name: str) -> bool:
        """A gate's value; asking for a gate that is not registered is our bug (upstream panics)."""
        try:
            return self._values[name]
        except KeyError:
            raise KeyError(f"feature {name!r} is not registered in framework/features.py") from None

    def as_dict(self) -> dict[str, bool]:
        return dict(self._values)

    def describe(self) -> str:
        """Every gate in effect, `A=true,B=false` sorted by name (what start-up logs)."""
        return ",".join(f"{n}={_go(v)}" for n, v in sorted(self._values.items()))
