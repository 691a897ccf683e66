"""Label selectors, node selectors and taint/toleration matching, as upstream
evaluates them (k8s.io/apimachinery labels, component-helpers nodeaffinity)."""
from __future__ import annotations

import re
from dataclasses import dataclass
from collections.abc import Mapping
from typing import Sequence

from framework.api.errors import ValidationError

_SELECTOR_OPS = {"In", "NotIn", "Exists", "DoesNotExist"}
_NODE_OPS = _SELECTOR_OPS | {"Gt", "Lt"}


@dataclass(frozen=True, slots=True)
class Requirement:
    key: str
    operator: str
    values: frozenset[str]

    def matches(self, labels: Mapping[str, str]) -> bool:
        op = self.operator
        if op == "In":
            return self.key in labels and labels[self.key] in self.values
        if op == "NotIn":
            return self.key not in labels or labels[self.key] not in self.values
        if op == "Exists":
            return self.key in labels
        if op == "DoesNotExist":
            return self.key not in labels
        # Gt / Lt: both sides must be integers, otherwise no match.
        if self.key not in labels:
            return False
        try:
            have = int(labels[self.key])
            want = int(next(iter(self.values)))
        except (ValueError, StopIteration):
            return False
        return have > want if op == "Gt" else have < want


def _requirement(raw: object, field: str, ops: set[str]) -> Requirement:
    if not isinstance(raw, Mapping):
        raise ValidationError(field, "must be an object")
    key = raw.get("key")
    if not isinstance(key, str) or not key:
        raise ValidationError(f"{field}.key", "must be a non-empty string")
    op = raw.get("operator")
    if not isinstance(op, str) or op not in ops:
        raise ValidationError(f"{field}.operator", f"unsupported operator {op!r}")
    values = raw.get("values") or []
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise ValidationError(f"{field}.values", "must be a list of strings")
    if op in ("In", "NotIn") and not values:
        raise ValidationError(f"{field}.values", "must be non-empty for In and NotIn")
    if op in ("Exists", "DoesNotExist") and values:
        raise ValidationError(f"{field}.values", "must be empty for Exists and DoesNotExist")
    if op in ("Gt", "Lt"):
        if len(values) != 1:
            raise ValidationError(f"{field}.values", "must have exactly one value for Gt and Lt")
        try:
            int(values[0])
        except ValueError:
            raise ValidationError(f"{field}.values[0]", "must be an integer for Gt and Lt") from None
    return Requirement(key, op, frozenset(values))


class LabelSelector:
    """metav1.LabelSelector. `LabelSelector.parse(None)` gives None: callers decide
    what a missing selector means (upstream: nothing for affinity terms)."""

    __slots__ = ("requirements", "empty")

    def __init__(self, requirements: Sequence[Requirement]) -> None:
        self.requirements = tuple(requirements)
        self.empty = not self.requirements

    @classmethod
    def parse(cls, raw: object, field: str = "labelSelector") -> "LabelSelector | None":
        if raw is None:
            return None
        if not isinstance(raw, Mapping):
            raise ValidationError(field, "must be an object")
        reqs: list[Requirement] = []
        match_labels = raw.get("matchLabels") or {}
        if not isinstance(match_labels, Mapping):
            raise ValidationError(f"{field}.matchLabels", "must be a map of strings")
        for k, v in match_labels.items():
            if not isinstance(v, str):
                raise ValidationError(f"{field}.matchLabels.{k}", "must be a string")
            reqs.append(Requirement(k, "In", frozenset([v])))
        exprs = raw.get("matchExpressions") or []
        if not isinstance(exprs, list):
            raise ValidationError(f"{field}.matchExpressions", "must be a list")
        for i, e in enumerate(exprs):
            reqs.append(_requirement(e, f"{field}.matchExpressions[{i}]", _SELECTOR_OPS))
        return cls(reqs)

    @classmethod
    def from_map(cls, labels: Mapping[str, str]) -> "LabelSelector":
        """labels.SelectorFromSet: every pair must match; an empty map matches all."""
        return cls([Requirement(k, "In", frozenset([v])) for k, v in labels.items()])

    def matches(self, labels: Mapping[str, str]) -> bool:
        for r in self.requirements:
            if not r.matches(labels):
                return False
        return True

    def __repr__(self) -> str:
        return f"LabelSelector({list(self.requirements)!r})"


@dataclass(frozen=True, slots=True)
class NodeSelectorTerm:
    expressions: tuple[Requirement, ...]
    fields: tuple[Requirement, ...]

    def matches(self, labels: Mapping[str, str], node_name: str) -> bool:
        # A term with nothing in it matches no node (upstream's nodeSelectorTerm rule).
        if not self.expressions and not self.fields:
            return False
        for r in self.expressions:
            if not r.matches(labels):
                return False
        if self.fields:
            fields = {"metadata.name": node_name}
            for r in self.fields:
                if not r.matches(fields):
                    return False
        return True


def parse_node_selector_term(raw: object, field: str) -> NodeSelectorTerm:
    if not isinstance(raw, Mapping):
        raise ValidationError(field, "must be an object")
    exprs = raw.get("matchExpressions") or []
    fields = raw.get("matchFields") or []
    if not isinstance(exprs, list):
        raise ValidationError(f"{field}.matchExpressions", "must be a list")
    if not isinstance(fields, list):
        raise ValidationError(f"{field}.matchFields", "must be a list")
    e = tuple(_requirement(x, f"{field}.matchExpressions[{i}]", _NODE_OPS) for i, x in enumerate(exprs))
    f = tuple(_requirement(x, f"{field}.matchFields[{i}]", _NODE_OPS) for i, x in enumerate(fields))
    for i, r in enumerate(f):
        if r.key != "metadata.name":
            raise ValidationError(f"{field}.matchFields[{i}].key", f'field "{r.key}" is not supported; only metadata.name')
        if r.operator not in ("In", "NotIn"):
            raise ValidationError(f"{field}.matchFields[{i}].operator", "only In and NotIn are supported")
    return NodeSelectorTerm(e, f)


class NodeSelector:
    """v1.NodeSelector: the terms are ORed."""

    __slots__ = ("terms",)

    def __init__(self, terms: Sequence[NodeSelectorTerm]) -> None:
        self.terms = tuple(terms)

    @classmethod
    def parse(cls, raw: object, field: str) -> "NodeSelector":
        if not isinstance(raw, Mapping):
            raise ValidationError(field, "must be an object")
        terms = raw.get("nodeSelectorTerms")
        if not isinstance(terms, list):
            raise ValidationError(f"{field}.nodeSelectorTerms", "must be a list")
        return cls([parse_node_selector_term(t, f"{field}.nodeSelectorTerms[{i}]") for i, t in enumerate(terms)])

    def matches(self, labels: Mapping[str, str], node_name: str) -> bool:
        for t in self.terms:
            if t.matches(labels, node_name):
                return True
        return False


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str
    effect: str


@dataclass(frozen=True, slots=True)
class Toleration:
    key: str
    operator: str
    value: str
    effect: str
    toleration_seconds: int | None = None

    def tolerates(self, taint: Taint, enable_comparison_operators: bool = True) -> bool:
        """v1.Toleration.ToleratesTaint. Lt/Gt tolerate nothing when the
        TaintTolerationComparisonOperators gate is off."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        if self.operator in ("Equal", ""):
            return self.value == taint.value
        if self.operator not in ("Lt", "Gt") or not enable_comparison_operators:
            return False
        # Both values must be canonical decimal int64s (no sign "+", no leading zeros).
        tol_v = parse_canonical_int64(self.value)
        taint_v = parse_canonical_int64(taint.value)
        if tol_v is None or taint_v is None:
            return False
        return taint_v < tol_v if self.operator == "Lt" else taint_v > tol_v


_CANONICAL_INT = re.compile(r"-?[1-9][0-9]*|0")


def parse_canonical_int64(value: str) -> int | None:
    """The integer a string spells in canonical decimal form (apimachinery's
    IsDecimalInteger, then ParseInt into int64); None otherwise."""
    if not _CANONICAL_INT.fullmatch(value):
        return None
    n = int(value)
    return n if -(1 << 63) <= n < (1 << 63) else None


def tolerations_tolerate_taint(
    tolerations: Sequence[Toleration], taint: Taint, enable_comparison_operators: bool = True
) -> bool:
    for t in tolerations:
        if t.tolerates(taint, enable_comparison_operators):
            return True
    return False


def find_untolerated_taint(
    taints: Sequence[Taint],
    tolerations: Sequence[Toleration],
    effects: tuple[str, ...],
    enable_comparison_operators: bool = True,
) -> Taint | None:
    """The first taint with one of `effects` that no toleration tolerates."""
    for taint in taints:
        if taint.effect in effects and not tolerations_tolerate_taint(tolerations, taint, enable_comparison_operators):
            return taint
    return None
