"""List selectors: label selectors (string form "a=b,c!=d,e in (x,y),!f" or a
metav1.LabelSelector map) and the field selectors the store supports."""
from __future__ import annotations

import re
from typing import Any, Mapping

from framework.api.errors import ValidationError
from framework.api.labels import LabelSelector
from framework.api.objects import KubeObject, Pod

FIELDS = {"spec.nodeName", "status.phase", "metadata.name", "metadata.namespace"}
_SET_RE = re.compile(r"^\s*([^\s!=]+)\s+(in|notin)\s+\(([^)]*)\)\s*$")


def _split_terms(text: str) -> list[str]:
    terms, depth, cur = [], 0, ""
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            terms.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        terms.append(cur)
    return [t.strip() for t in terms if t.strip()]


def parse_label_selector(sel: str | Mapping[str, Any] | None) -> LabelSelector | None:
    if sel is None or sel == "":
        return None
    if isinstance(sel, Mapping):
        return LabelSelector.parse(sel, "labelSelector")
    exprs: list[dict[str, Any]] = []
    for term in _split_terms(sel):
        m = _SET_RE.match(term)
        if m:
            values = [v.strip() for v in m.group(3).split(",") if v.strip()]
            exprs.append({"key": m.group(1), "operator": "In" if m.group(2) == "in" else "NotIn", "values": values})
        elif "!=" in term:
            k, v = term.split("!=", 1)
            exprs.append({"key": k.strip(), "operator": "NotIn", "values": [v.strip()]})
        elif "=" in term:
            k, v = term.split("==", 1) if "==" in term else term.split("=", 1)
            exprs.append({"key": k.strip(), "operator": "In", "values": [v.strip()]})
        elif term.startswith("!"):
            exprs.append({"key": term[1:].strip(), "operator": "DoesNotExist"})
        else:
            exprs.append({"key": term, "operator": "Exists"})
    return LabelSelector.parse({"matchExpressions": exprs}, "labelSelector")


def parse_field_selector(sel: str | None) -> list[tuple[str, bool, str]]:
    """[(field, equal?, value)]."""
    out: list[tuple[str, bool, str]] = []
    for term in _split_terms(sel or ""):
        if "!=" in term:
            k, v = term.split("!=", 1)
            eq = False
        elif "=" in term:
            k, v = term.split("==", 1) if "==" in term else term.split("=", 1)
            eq = True
        else:
            raise ValidationError("fieldSelector", f"invalid term {term!r}")
        k = k.strip()
        if k not in FIELDS:
            raise ValidationError("fieldSelector", f"field {k!r} is not supported; supported: {', '.join(sorted(FIELDS))}")
        out.append((k, eq, v.strip()))
    return out


def _field_value(obj: KubeObject, name: str) -> str:
    if name == "metadata.name":
        return obj.name
    if name == "metadata.namespace":
        return obj.namespace
    if isinstance(obj, Pod):
        return obj.node_name if name == "spec.nodeName" else obj.phase
    return ""


class Selectors:
    """A list request's label and field selectors, parsed once."""

    def __init__(self, label_selector: str | Mapping[str, Any] | None, field_selector: str | None) -> None:
        self.labels = parse_label_selector(label_selector)
        self.fields = parse_field_selector(field_selector)

    def matches(self, obj: KubeObject) -> bool:
        return matches_selectors(obj, self.labels, self.fields)


def matches_selectors(obj: KubeObject, ls: LabelSelector | None, fields: list[tuple[str, bool, str]]) -> bool:
    if ls is not None and not ls.matches(obj.labels):
        return False
    for name, eq, value in fields:
        if (_field_value(obj, name) == value) != eq:
            return False
    return True
