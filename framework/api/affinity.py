"""Inter-pod affinity terms as upstream's PodInfo precomputes them (framework.AffinityTerm),
and label selectors parsed with apimachinery's validation (LabelSelectorAsSelector).

A selector is a `LabelSelector` or None: None is labels.Nothing() (matches no
object), an empty LabelSelector is labels.Everything().
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from collections.abc import Mapping
from typing import Any, Iterable

from framework.api.errors import ValidationError
from framework.api.labels import LabelSelector, Requirement


class SelectorError(ValueError):
    """A label selector that apimachinery would refuse; str() is upstream's message."""


# --- apimachinery validation messages ---------------------------------------------------------

_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
_LABEL_VALUE_FMT = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?"
_LABEL_VALUE_MSG = ("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
                    "and must start and end with an alphanumeric character")
_QUALIFIED_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_QUALIFIED_NAME = re.compile(_QUALIFIED_NAME_FMT)
_QUALIFIED_NAME_MSG = ("must consist of alphanumeric characters, '-', '_' or '.', "
                       "and must start and end with an alphanumeric character")
_DNS1123_SUBDOMAIN_FMT = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
_DNS1123_SUBDOMAIN = re.compile(_DNS1123_SUBDOMAIN_FMT)
_DNS1123_SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
                          "and must start and end with an alphanumeric character")


def _regex_error(msg: str, fmt: str, *examples: str) -> str:
    """validation.RegexError, spacing quirks included."""
    s = msg + " (e.g. "
    for i, ex in enumerate(examples):
        if i > 0:
            s += " or "
        s += f"'{ex}', "
    return s + f"regex used for validation is '{fmt}')"


def label_value_errors(value: str) -> list[str]:
    """validation.IsValidLabelValue."""
    errs = []
    if len(value) > 63:
        errs.append("must be no more than 63 characters")
    if not _LABEL_VALUE.fullmatch(value):
        errs.append(_regex_error(_LABEL_VALUE_MSG, _LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return errs


def qualified_name_errors(name: str) -> list[str]:
    """validation.IsQualifiedName (label keys)."""
    parts = name.split("/")
    if len(parts) == 1:
        short = parts[0]
        errs: list[str] = []
    elif len(parts) == 2:
        prefix, short = parts
        errs = []
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            if len(prefix) > 253:
                errs.append("prefix part must be no more than 253 characters")
            if not _DNS1123_SUBDOMAIN.fullmatch(prefix):
                errs.append("prefix part " + _regex_error(_DNS1123_SUBDOMAIN_MSG, _DNS1123_SUBDOMAIN_FMT, "example.com"))
    else:
        return ["a qualified name " + _regex_error(_QUALIFIED_NAME_MSG, _QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc")
                + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"]
    if not short:
        errs.append("name part must be non-empty")
    elif len(short) > 63:
        errs.append("name part must be no more than 63 characters")
    if not _QUALIFIED_NAME.fullmatch(short):
        errs.append("name part " + _regex_error(_QUALIFIED_NAME_MSG, _QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc"))
    return errs


def _go_quote_list(values: list[str]) -> str:
    return "[]string{" + ", ".join(f'"{v}"' for v in values) + "}"


def _requirement_errors(key: str, op: str, values: list[str]) -> list[str]:
    """labels.NewRequirement's field errors, in upstream's order."""
    errs = []
    key_errs = qualified_name_errors(key)
    if key_errs:
        errs.append(f'key: Invalid value: "{key}": ' + "; ".join(key_errs))
    if op in ("In", "NotIn") and not values:
        errs.append(f"values: Invalid value: {_go_quote_list(values)}: for 'in', 'notin' operators, values set can't be empty")
    if op in ("Exists", "DoesNotExist") and values:
        errs.append(f"values: Invalid value: {_go_quote_list(values)}: values set must be empty for exists and does not exist")
    for i, v in enumerate(values):
        v_errs = label_value_errors(v)
        if v_errs:
            errs.append(f'values[{i}][{key}]: Invalid value: "{v}": ' + "; ".join(v_errs))
    return errs


def aggregate_message(errs: list[str]) -> str:
    """utilerrors.NewAggregate(...).Error()."""
    return errs[0] if len(errs) == 1 else "[" + ", ".join(errs) + "]"


def parse_selector(raw: object) -> LabelSelector | None:
    """metav1.LabelSelectorAsSelector: None for a missing selector (Nothing), an empty
    LabelSelector for `{}` (Everything). Raises SelectorError with upstream's message."""
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise SelectorError("label selector must be an object")
    match_labels = raw.get("matchLabels") or {}
    exprs = raw.get("matchExpressions") or []
    if isinstance(match_labels, Mapping):
        for k, v in match_labels.items():
            errs = _requirement_errors(str(k), "In", [v] if isinstance(v, str) else [])
            if errs:
                raise SelectorError(aggregate_message(errs))
    if isinstance(exprs, list):
        for e in exprs:
            if not isinstance(e, Mapping):
                continue
            op = e.get("operator")
            if op not in ("In", "NotIn", "Exists", "DoesNotExist"):
                raise SelectorError(f'"{op}" is not a valid label selector operator')
            values = e.get("values") or []
            errs = _requirement_errors(str(e.get("key") or ""), op, [str(v) for v in values] if isinstance(values, list) else [])
            if errs:
                raise SelectorError(aggregate_message(errs))
    try:
        return LabelSelector.parse(raw, "labelSelector")
    except ValidationError as err:
        raise SelectorError(str(err)) from None


def merge_requirements(selector: LabelSelector | None, extra: Iterable[Requirement]) -> LabelSelector | None:
    """Add requirements to a selector; Nothing stays Nothing (its requirements are not ok)."""
    extra = list(extra)
    if selector is None or not extra:
        return selector
    return LabelSelector(list(selector.requirements) + extra)


# --- Affinity terms ---------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class AffinityTerm:
    namespaces: frozenset[str]
    selector: LabelSelector | None  # None matches no pod (labels.Nothing)
    topology_key: str
    namespace_selector: LabelSelector | None  # None matches no namespace; empty matches all

    def matches(self, pod: Any, ns_labels: Mapping[str, str] | None) -> bool:
        """AffinityTerm.Matches: namespace (listed or selected) and label selector.
        `ns_labels` are the labels of the pod's namespace (None: unknown, i.e. none)."""
        if pod.namespace in self.namespaces or (
            self.namespace_selector is not None and self.namespace_selector.matches(ns_labels or {})
        ):
            return self.selector is not None and self.selector.matches(pod.labels)
        return False

    def with_namespaces_merged(self, namespaces: Iterable[str]) -> "AffinityTerm":
        """The term with `namespaces` added and the namespace selector dropped
        (the plugin's mergeAffinityTermNamespacesIfNotEmpty)."""
        return replace(self, namespaces=self.namespaces | frozenset(namespaces), namespace_selector=None)


@dataclass(frozen=True, slots=True)
class WeightedAffinityTerm:
    term: AffinityTerm
    weight: int


def _term(pod: Any, raw: object) -> AffinityTerm:
    """newAffinityTerm; matchLabelKeys / mismatchLabelKeys are merged into the selector
    with the pod's own label values, as the API server does when the pod is created."""
    if not isinstance(raw, Mapping):
        raise SelectorError("pod affinity term must be an object")
    selector = parse_selector(raw.get("labelSelector"))
    extra: list[Requirement] = []
    for key in raw.get("matchLabelKeys") or []:
        if key in pod.labels:
            extra.append(Requirement(key, "In", frozenset([pod.labels[key]])))
    for key in raw.get("mismatchLabelKeys") or []:
        if key in pod.labels:
            extra.append(Requirement(key, "NotIn", frozenset([pod.labels[key]])))
    selector = merge_requirements(selector, extra)
    namespaces = raw.get("namespaces") or []
    if not isinstance(namespaces, list) or not all(isinstance(n, str) for n in namespaces):
        raise SelectorError("namespaces must be a list of strings")
    ns_sel_raw = raw.get("namespaceSelector")
    ns_selector = parse_selector(ns_sel_raw)
    ns = frozenset(namespaces)
    if not ns and ns_sel_raw is None:
        ns = frozenset([pod.namespace])
    topology_key = raw.get("topologyKey") or ""
    if not isinstance(topology_key, str):
        raise SelectorError("topologyKey must be a string")
    return AffinityTerm(ns, selector, topology_key, ns_selector)


@dataclass(frozen=True, slots=True)
class PodAffinityTerms:
    required_affinity: tuple[AffinityTerm, ...]
    required_anti_affinity: tuple[AffinityTerm, ...]
    preferred_affinity: tuple[WeightedAffinityTerm, ...]
    preferred_anti_affinity: tuple[WeightedAffinityTerm, ...]
    # Upstream's NewPodInfo error, or "" when every list parsed. A list that failed
    # to parse is empty (as GetAffinityTerms returns nil with its error).
    error: str = ""


_EMPTY = PodAffinityTerms((), (), (), ())


def _section_items(aff: Mapping[str, Any], kind: str, field: str) -> list[Any]:
    section = aff.get(kind) or {}
    items = section.get(field) if isinstance(section, Mapping) else None
    return items if isinstance(items, list) else []


def parse_pod_affinity(pod: Any) -> PodAffinityTerms:
    """NewPodInfo's affinity part. Never raises: parse errors are collected in `error`."""
    aff = pod.affinity
    if not aff:
        return _EMPTY
    errors: list[str] = []

    def required(kind: str, label: str) -> tuple[AffinityTerm, ...]:
        try:
            return tuple(_term(pod, t) for t in _section_items(aff, kind, "requiredDuringSchedulingIgnoredDuringExecution"))
        except (SelectorError, ValidationError, TypeError, ValueError, AttributeError) as err:
            errors.append(f"{label}: {err}")
            return ()

    def preferred(kind: str, label: str) -> tuple[WeightedAffinityTerm, ...]:
        out = []
        try:
            for w in _section_items(aff, kind, "preferredDuringSchedulingIgnoredDuringExecution"):
                if not isinstance(w, Mapping):
                    raise SelectorError("weighted pod affinity term must be an object")
                weight = w.get("weight") or 0
                if isinstance(weight, bool) or not isinstance(weight, int):
                    raise SelectorError(f"weight {weight!r} is not an integer")
                out.append(WeightedAffinityTerm(_term(pod, w.get("podAffinityTerm") or {}), weight))
        except (SelectorError, ValidationError, TypeError, ValueError, AttributeError) as err:
            errors.append(f"{label}: {err}")
            return ()
        return tuple(out)

    terms = PodAffinityTerms(
        required("podAffinity", "requiredAffinityTerms"),
        required("podAntiAffinity", "requiredAntiAffinityTerms"),
        preferred("podAffinity", "preferredAffinityTerms"),
        preferred("podAntiAffinity", "preferredAntiAffinityTerms"),
    )
    if errors:
        return replace(terms, error=aggregate_message(errors))
    return terms
