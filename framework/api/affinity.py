"""Inter-pod affinity terms as upstream's PodInfo precomputes them (framework.AffinityTerm)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from framework.api.errors import ValidationError
from framework.api.labels import LabelSelector, Requirement


@dataclass(frozen=True, slots=True)
class AffinityTerm:
    namespaces: frozenset[str]
    selector: LabelSelector | None  # None matches no pod (labels.Nothing)
    topology_key: str
    namespace_selector: LabelSelector | None  # None matches no namespace

    def matches(self, pod: Any, ns_labels: Mapping[str, str] | None) -> bool:
        """AffinityTerm.Matches: namespace (listed or selected) and label selector."""
        if pod.namespace in self.namespaces or (
            self.namespace_selector is not None and ns_labels is not None and self.namespace_selector.matches(ns_labels)
        ):
            return self.selector is not None and self.selector.matches(pod.labels)
        return False


@dataclass(frozen=True, slots=True)
class WeightedAffinityTerm:
    term: AffinityTerm
    weight: int


def _term(pod: Any, raw: object, field: str) -> AffinityTerm:
    if not isinstance(raw, Mapping):
        raise ValidationError(field, "must be an object")
    selector = LabelSelector.parse(raw.get("labelSelector"), f"{field}.labelSelector")
    # matchLabelKeys / mismatchLabelKeys merge the incoming pod's own label values
    # into the selector (MatchLabelKeysInPodAffinity, on by default).
    extra: list[Requirement] = []
    for key in raw.get("matchLabelKeys") or []:
        if key in pod.labels:
            extra.append(Requirement(key, "In", frozenset([pod.labels[key]])))
    for key in raw.get("mismatchLabelKeys") or []:
        if key in pod.labels:
            extra.append(Requirement(key, "NotIn", frozenset([pod.labels[key]])))
    if extra and selector is not None:
        selector = LabelSelector(list(selector.requirements) + extra)
    namespaces = raw.get("namespaces") or []
    if not isinstance(namespaces, list):
        raise ValidationError(f"{field}.namespaces", "must be a list of strings")
    ns_sel_raw = raw.get("namespaceSelector")
    ns_selector = LabelSelector.parse(ns_sel_raw, f"{field}.namespaceSelector")
    ns = frozenset(namespaces)
    if not ns and ns_selector is None:
        ns = frozenset([pod.namespace])
    topology_key = raw.get("topologyKey") or ""
    if not isinstance(topology_key, str):
        raise ValidationError(f"{field}.topologyKey", "must be a string")
    return AffinityTerm(ns, selector, topology_key, ns_selector)


@dataclass(frozen=True, slots=True)
class PodAffinityTerms:
    required_affinity: tuple[AffinityTerm, ...]
    required_anti_affinity: tuple[AffinityTerm, ...]
    preferred_affinity: tuple[WeightedAffinityTerm, ...]
    preferred_anti_affinity: tuple[WeightedAffinityTerm, ...]


_EMPTY = PodAffinityTerms((), (), (), ())


def parse_pod_affinity(pod: Any) -> PodAffinityTerms:
    aff = pod.affinity
    if not aff:
        return _EMPTY
    base = "spec.affinity"

    def required(kind: str) -> tuple[AffinityTerm, ...]:
        section = aff.get(kind) or {}
        items = section.get("requiredDuringSchedulingIgnoredDuringExecution") or []
        f = f"{base}.{kind}.requiredDuringSchedulingIgnoredDuringExecution"
        return tuple(_term(pod, t, f"{f}[{i}]") for i, t in enumerate(items))

    def preferred(kind: str) -> tuple[WeightedAffinityTerm, ...]:
        section = aff.get(kind) or {}
        items = section.get("preferredDuringSchedulingIgnoredDuringExecution") or []
        f = f"{base}.{kind}.preferredDuringSchedulingIgnoredDuringExecution"
        out = []
        for i, w in enumerate(items):
            if not isinstance(w, Mapping):
                raise ValidationError(f"{f}[{i}]", "must be an object")
            out.append(WeightedAffinityTerm(_term(pod, w.get("podAffinityTerm") or {}, f"{f}[{i}].podAffinityTerm"), int(w.get("weight") or 0)))
        return tuple(out)

    return PodAffinityTerms(required("podAffinity"), required("podAntiAffinity"), preferred("podAffinity"), preferred("podAntiAffinity"))
