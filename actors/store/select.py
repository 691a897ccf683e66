"""List selectors, parsed as the API server parses them.

Label selectors in string form go through apimachinery's labels.Parse grammar
(`a=b`, `a==b`, `a!=b`, `a in (x,y)`, `a notin (x)`, `a`, `!a`, `a>1`, `a<1`, joined by
commas), with keys checked as qualified names and values as label values; the
metav1.LabelSelector map form is accepted too. Field selectors follow
fields.ParseSelector (`f=v`, `f==v`, `f!=v`, backslash escapes) over the fields the
store indexes. A bad selector is a ValidationError naming `labelSelector` or
`fieldSelector`, carrying upstream's message.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from framework.api.errors import ValidationError
from framework.api.labels import LabelSelector, Requirement
from framework.api.objects import KubeObject
from framework.api.validation import is_qualified_name, is_valid_label_value, show

META_FIELDS = frozenset({"metadata.name", "metadata.namespace"})


def _section(obj: KubeObject, section: str, key: str, default: str = "") -> str:
    part = obj.raw.get(section)
    value = part.get(key) if isinstance(part, Mapping) else None
    if isinstance(value, bool):
        return "true" if value else "false"
    return default if value is None else str(value)


# Per kind, the fields beyond metadata.name/namespace kube-apiserver selects on
# (its registries' ToSelectableFields / GetAttrs), as the selector compares them.
KIND_FIELDS: dict[str, dict[str, Any]] = {
    "Pod": {"spec.nodeName": lambda o: o.node_name, "status.phase": lambda o: o.phase,
            "spec.schedulerName": lambda o: o.scheduler_name,
            "spec.restartPolicy": lambda o: _section(o, "spec", "restartPolicy"),
            "spec.serviceAccountName": lambda o: _section(o, "spec", "serviceAccountName"),
            "spec.hostNetwork": lambda o: _section(o, "spec", "hostNetwork", "false"),
            "status.podIP": lambda o: _section(o, "status", "podIP"),
            "status.nominatedNodeName": lambda o: o.nominated_node_name},
    "Node": {"spec.unschedulable": lambda o: _section(o, "spec", "unschedulable", "false")},
    "Namespace": {"status.phase": lambda o: _section(o, "status", "phase", "Active")},
    # core/v1 Event (upstream's event strategy: ToSelectableFields)
    "Event": {**{f"involvedObject.{k}": (lambda o, k=k: _section(o, "involvedObject", k))
                 for k in ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")},
              "reason": lambda o: o.raw.get("reason") or "", "type": lambda o: o.raw.get("type") or "",
              "reportingComponent": lambda o: o.raw.get("reportingComponent") or "",
              "source": lambda o: _section(o, "source", "component")},
}
POD_FIELDS = frozenset(KIND_FIELDS["Pod"])
FIELDS = POD_FIELDS | META_FIELDS

# --- labels.Parse: lexer ---------------------------------------------------------------------

EOS, IDENT, ERROR = "end of string", "identifier", "error"
_TOKENS = {")": ")", ",": ",", "!": "!", "==": "==", "=": "=", ">": ">", "in": "in", "<": "<", "!=": "!=",
           "notin": "notin", "(": "("}
_SPECIAL = frozenset("=!(),><")
_WHITESPACE = frozenset(" \t\r\n")
BINARY_OPERATORS = ("in", "notin", "=", "==", "!=", "gt", "lt")


@dataclass(frozen=True, slots=True)
class _Token:
    kind: str  # a literal from _TOKENS, IDENT, EOS or ERROR
    text: str


def _lex(text: str) -> list[_Token]:
    out: list[_Token] = []
    pos, n = 0, len(text)
    while True:
        while pos < n and text[pos] in _WHITESPACE:
            pos += 1
        if pos >= n:
            out.append(_Token(EOS, ""))
            return out
        if text[pos] in _SPECIAL:
            # the longest run of special characters that is still an operator
            end, last = pos, None
            while end < n and text[end] in _SPECIAL:
                if text[pos:end + 1] in _TOKENS:
                    last = end + 1
                elif last is not None:
                    break
                end += 1
            if last is None:
                out.append(_Token(ERROR, f"error expected: keyword found '{text[pos:end]}'"))
                pos = end
            else:
                out.append(_Token(_TOKENS[text[pos:last]], text[pos:last]))
                pos = last
            continue
        start = pos
        while pos < n and text[pos] not in _SPECIAL and text[pos] not in _WHITESPACE:
            pos += 1
        word = text[start:pos]
        out.append(_Token(_TOKENS.get(word, IDENT), word))


# --- labels.Parse: parser ----------------------------------------------------------------------

class _SelectorError(Exception):
    pass


class _Parser:
    def __init__(self, text: str) -> None:
        self.items = _lex(text)
        self.pos = 0

    def _peek(self, values: bool = True) -> _Token:
        tok = self.items[self.pos]
        # in a value position the keywords in/notin are ordinary identifiers
        return _Token(IDENT, tok.text) if values and tok.kind in ("in", "notin") else tok

    def _next(self, values: bool = True) -> _Token:
        tok = self._peek(values)
        self.pos += 1
        return tok

    def parse(self) -> list[Requirement]:
        reqs: list[Requirement] = []
        while True:
            tok = self._peek()
            if tok.kind == EOS:
                return reqs
            if tok.kind not in (IDENT, "!"):
                raise _SelectorError(f"found '{tok.text}', expected: !, identifier, or 'end of string'")
            try:
                reqs.append(self._requirement())
            except _SelectorError as e:
                raise _SelectorError(f"unable to parse requirement: {e}") from None
            after = self._next()
            if after.kind == EOS:
                return reqs
            if after.kind != ",":
                raise _SelectorError(f"found '{after.text}', expected: ',' or 'end of string'")
            following = self._peek()
            if following.kind not in (IDENT, "!"):
                raise _SelectorError(f"found '{following.text}', expected: identifier after ','")

    def _requirement(self) -> Requirement:
        tok = self._next()
        negated = tok.kind == "!"
        if negated:
            tok = self._next()
        if tok.kind != IDENT:
            raise _SelectorError(f"found '{tok.text}', expected: identifier")
        key = tok.text
        key_errors = is_qualified_name(key)
        if key_errors:
            raise _SelectorError(f"<nil>: Invalid value: {show(key)}: {'; '.join(key_errors)}")
        if negated:
            return Requirement(key, "DoesNotExist", frozenset())  # `!key` takes no operator
        if self._peek().kind in (EOS, ","):
            return Requirement(key, "Exists", frozenset())
        op = self._next(values=False)
        if op.kind in ("in", "notin"):
            values = self._set_values()
        elif op.kind in ("=", "==", "!=", ">", "<"):
            values = self._exact_value()
        else:
            raise _SelectorError(f"found '{op.text}', expected: {', '.join(BINARY_OPERATORS)}")
        return _new_requirement(key, op.kind, values)

    def _set_values(self) -> list[str]:
        tok = self._next()
        if tok.kind != "(":
            raise _SelectorError(f"found '{tok.text}' expected: '('")
        first = self._peek()
        if first.kind == ")":
            self._next()
            return [""]
        if first.kind not in (IDENT, ","):
            raise _SelectorError(f"found '{first.text}', expected: ',', ')' or identifier")
        values = self._identifiers()
        if self._next().kind != ")":
            raise _SelectorError(f"found '{first.text}', expected: ')'")
        return values

    def _identifiers(self) -> list[str]:
        values: list[str] = []
        while True:
            tok = self._next()
            if tok.kind == IDENT:
                values.append(tok.text)
                after = self._peek()
                if after.kind == ",":
                    continue
                if after.kind == ")":
                    return values
                raise _SelectorError(f"found '{after.text}', expected: ',' or ')'")
            if tok.kind != ",":
                raise _SelectorError(f"found '{tok.text}', expected: ',', or identifier")
            # an empty value before or after a comma
            if not values:
                values.append("")
            after = self._peek()
            if after.kind == ")":
                values.append("")
                return values
            if after.kind == ",":
                self._next()
                values.append("")

    def _exact_value(self) -> list[str]:
        if self._peek().kind in (EOS, ","):
            return [""]
        tok = self._next()
        if tok.kind != IDENT:
            raise _SelectorError(f"found '{tok.text}', expected: identifier")
        return [tok.text]


_OPERATORS = {"=": "In", "==": "In", "in": "In", "!=": "NotIn", "notin": "NotIn", ">": "Gt", "<": "Lt"}


def _new_requirement(key: str, op: str, values: list[str]) -> Requirement:
    """labels.NewRequirement's value checks."""
    unique = sorted(set(values))
    if op in (">", "<"):
        try:
            int(values[0])
        except ValueError:
            raise _SelectorError(f"values[0]: Invalid value: {show(values[0])}: for 'Gt', 'Lt' operators, "
                                 "the value must be an integer") from None
    for i, v in enumerate(unique):
        errs = is_valid_label_value(v)
        if errs:
            raise _SelectorError(f"values[{i}][{key}]: Invalid value: {show(v)}: {'; '.join(errs)}")
    return Requirement(key, _OPERATORS[op], frozenset(unique))


def parse_label_selector(sel: str | Mapping[str, Any] | None) -> LabelSelector | None:
    if sel is None or sel == "":
        return None
    if isinstance(sel, Mapping):
        parsed = LabelSelector.parse(sel, "labelSelector")
        for r in parsed.requirements if parsed is not None else ():
            for msg in is_qualified_name(r.key):
                raise ValidationError("labelSelector", f"Invalid value: {show(r.key)}: {msg}")
            for v in sorted(r.values):
                for msg in is_valid_label_value(v):
                    raise ValidationError("labelSelector", f"Invalid value: {show(v)}: {msg}")
        return parsed
    if not isinstance(sel, str):
        raise ValidationError("labelSelector", "must be a string or a label selector object")
    try:
        return LabelSelector(_Parser(sel).parse())
    except _SelectorError as e:
        raise ValidationError("labelSelector", str(e)) from None


# --- fields.ParseSelector ---------------------------------------------------------------------

_FIELD_OPERATORS = ("!=", "==", "=")
_ESCAPABLE = frozenset("\\,=")


def _split_unescaped(text: str, sep: str) -> list[str]:
    parts, cur, i = [], [], 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            cur.append(text[i:i + 2])
            i += 2
            continue
        if ch == sep:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
        i += 1
    parts.append("".join(cur))
    return parts


def _split_term(term: str) -> tuple[str, str, str] | None:
    for i in range(len(term)):
        for op in _FIELD_OPERATORS:
            if term.startswith(op, i):
                return term[:i], op, term[i + len(op):]
    return None


def _unescape(value: str) -> str:
    out, i = [], 0
    while i < len(value):
        ch = value[i]
        if ch == "\\":
            nxt = value[i + 1:i + 2]
            if nxt not in _ESCAPABLE or not nxt:
                raise ValidationError("fieldSelector", f"invalid field selector: invalid escape sequence: \\{nxt}")
            out.append(nxt)
            i += 2
            continue
        if ch in (",", "="):
            raise ValidationError("fieldSelector", f"invalid field selector: unescaped character in value: {ch}")
        out.append(ch)
        i += 1
    return "".join(out)


def parse_field_selector(sel: str | None, kind: str = "Pod") -> list[tuple[str, bool, str]]:
    """[(field, equal?, value)] for `kind`: metadata.name and metadata.namespace on
    every kind, and the kind's own fields (KIND_FIELDS)."""
    supported = META_FIELDS | frozenset(KIND_FIELDS.get(kind, ()))
    out: list[tuple[str, bool, str]] = []
    for part in sorted(_split_unescaped(sel or "", ",")):
        if not part:
            continue
        split = _split_term(part)
        if split is None:
            raise ValidationError("fieldSelector", f"invalid selector: '{sel}'; can't understand '{part}'")
        name, op, value = split
        if name not in supported:
            raise ValidationError("fieldSelector", f"field label not supported: {name}")
        out.append((name, op != "!=", _unescape(value)))
    return out


def _field_value(obj: KubeObject, name: str) -> str:
    if name == "metadata.name":
        return obj.name
    if name == "metadata.namespace":
        return obj.namespace
    getter = KIND_FIELDS.get(obj.kind, {}).get(name)
    return str(getter(obj)) if getter is not None else ""


class Selectors:
    """A list request's label and field selectors, parsed once."""

    def __init__(self, label_selector: str | Mapping[str, Any] | None, field_selector: str | None,
                 kind: str = "Pod") -> None:
        self.labels = parse_label_selector(label_selector)
        self.fields = parse_field_selector(field_selector, kind)

    def matches(self, obj: KubeObject) -> bool:
        return matches_selectors(obj, self.labels, self.fields)


def matches_selectors(obj: KubeObject, ls: LabelSelector | None, fields: list[tuple[str, bool, str]]) -> bool:
    if ls is not None and not ls.matches(obj.labels):
        return False
    for name, eq, value in fields:
        if (_field_value(obj, name) == value) != eq:
            return False
    return True
