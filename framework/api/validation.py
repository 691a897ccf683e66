"""apimachinery's string formats (util/validation: names, label keys and values),
the field.Error forms, and which changes an update may make to a pod's spec
(ValidatePodUpdate), as pure functions (no I/O).

Every check returns a list of ValidationError in field.ErrorList's order; each
message is upstream's `field.Error` body: `Invalid value: "Bad_Name!": a lowercase
RFC 1123 subdomain ...`, `Required value`, `Duplicate value: "web"`, `Forbidden: ...`.
What each kind's fields must hold is declared per kind in framework.api.schema,
which uses these formats.
"""
from __future__ import annotations

import json
import re
from functools import lru_cache
from collections.abc import Mapping
from typing import Any

from framework.api.errors import ValidationError

# --- apimachinery's string formats --------------------------------------------------------

QUALIFIED_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
QUALIFIED_NAME_MSG = ("must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
                      "with an alphanumeric character")
QUALIFIED_NAME_MAX = 63
LABEL_VALUE_FMT = f"({QUALIFIED_NAME_FMT})?"
LABEL_VALUE_MSG = ("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
                   "'.', and must start and end with an alphanumeric character")
LABEL_VALUE_MAX = 63
DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_LABEL_MSG = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
                     "and must start and end with an alphanumeric character")
DNS1123_LABEL_MAX = 63
DNS1123_SUBDOMAIN_FMT = DNS1123_LABEL_FMT + r"(\." + DNS1123_LABEL_FMT + ")*"
DNS1123_SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
                         "'-' or '.', and must start and end with an alphanumeric character")
DNS1123_SUBDOMAIN_MAX = 253
DNS1035_LABEL_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
DNS1035_LABEL_MSG = ("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with "
                     "an alphabetic character, and end with an alphanumeric character")
DNS1035_LABEL_MAX = 63


def _full(fmt: str) -> re.Pattern[str]:
    return re.compile(f"^(?:{fmt})$")


_QUALIFIED_NAME = _full(QUALIFIED_NAME_FMT)
_LABEL_VALUE = _full(LABEL_VALUE_FMT)
_DNS1123_LABEL = _full(DNS1123_LABEL_FMT)
_DNS1123_SUBDOMAIN = _full(DNS1123_SUBDOMAIN_FMT)
_DNS1035_LABEL = _full(DNS1035_LABEL_FMT)


def regex_error(msg: str, fmt: str, *examples: str) -> str:
    """apimachinery's RegexError text."""
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    shown = " or ".join(f"'{e}', " for e in examples)
    return f"{msg} (e.g. {shown}regex used for validation is '{fmt}')"


def max_len_error(n: int) -> str:
    return f"must be no more than {n} characters"


def is_dns1123_label(value: str) -> list[str]:
    errs = [max_len_error(DNS1123_LABEL_MAX)] if len(value) > DNS1123_LABEL_MAX else []
    if not _DNS1123_LABEL.match(value):
        if _DNS1123_SUBDOMAIN.match(value):
            errs.append("must not contain dots")
        else:
            errs.append(regex_error(DNS1123_LABEL_MSG, DNS1123_LABEL_FMT, "my-name", "123-abc"))
    return errs


def is_dns1123_subdomain(value: str) -> list[str]:
    errs = [max_len_error(DNS1123_SUBDOMAIN_MAX)] if len(value) > DNS1123_SUBDOMAIN_MAX else []
    if not _DNS1123_SUBDOMAIN.match(value):
        errs.append(regex_error(DNS1123_SUBDOMAIN_MSG, DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errs


def is_dns1035_label(value: str) -> list[str]:
    errs = [max_len_error(DNS1035_LABEL_MAX)] if len(value) > DNS1035_LABEL_MAX else []
    if not _DNS1035_LABEL.match(value):
        errs.append(regex_error(DNS1035_LABEL_MSG, DNS1035_LABEL_FMT, "my-name", "abc-123"))
    return errs


def is_qualified_name(value: str) -> list[str]:
    """A label key or other qualified name: an optional DNS subdomain prefix and '/', then a name."""
    return list(_qualified_name_errors(value))


@lru_cache(maxsize=4096)
def _qualified_name_errors(value: str) -> tuple[str, ...]:
    # Cached: every pod repeats the same label keys and resource names.
    return tuple(_qualified_name_problems(value))


def _qualified_name_problems(value: str) -> list[str]:
    parts = value.split("/")
    errs: list[str] = []
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs.extend(f"prefix part {m}" for m in is_dns1123_subdomain(prefix))
    else:
        return ["a qualified name " + regex_error(QUALIFIED_NAME_MSG, QUALIFIED_NAME_FMT, "MyName", "my.name",
                                                  "123-abc")
                + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"]
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > QUALIFIED_NAME_MAX:
        errs.append("name part " + max_len_error(QUALIFIED_NAME_MAX))
    if not _QUALIFIED_NAME.match(name):
        errs.append("name part " + regex_error(QUALIFIED_NAME_MSG, QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc"))
    return errs


def is_valid_label_value(value: str) -> list[str]:
    errs = [max_len_error(LABEL_VALUE_MAX)] if len(value) > LABEL_VALUE_MAX else []
    if not _LABEL_VALUE.match(value):
        errs.append(regex_error(LABEL_VALUE_MSG, LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return errs


# --- field.Error forms ----------------------------------------------------------------------

MAX_SHOWN = 256  # a longer bad value is cut in the message (the field path says where it is)


def show(value: Any) -> str:
    """A bad value as field.Error prints it: strings quoted, numbers and booleans bare, nil as "null"."""
    if value is None:
        return '"null"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    try:
        text = json.dumps(value, ensure_ascii=False, sort_keys=isinstance(value, Mapping))
    except (TypeError, ValueError, RecursionError):  # non-string keys, nesting too deep
        text = json.dumps(repr(value)[:MAX_SHOWN])
    return text if len(text) <= MAX_SHOWN else text[:MAX_SHOWN] + "..."


def invalid(field: str, value: Any, detail: str) -> ValidationError:
    return ValidationError(field, f"Invalid value: {show(value)}: {detail}")


def required(field: str, detail: str = "") -> ValidationError:
    return ValidationError(field, f"Required value: {detail}" if detail else "Required value")


def duplicate(field: str, value: Any) -> ValidationError:
    return ValidationError(field, f"Duplicate value: {show(value)}")


def forbidden(field: str, detail: str) -> ValidationError:
    return ValidationError(field, f"Forbidden: {detail}")


# --- pod updates ----------------------------------------------------------------------------

UPDATABLE_POD_SPEC_FIELDS = (
    "`spec.containers[*].image`",
    "`spec.initContainers[*].image`",
    "`spec.activeDeadlineSeconds`",
    "`spec.tolerations` (only additions to existing tolerations)",
    "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
)
MAX_INT32 = 2**31 - 1
_QUANTITY_MAPS = frozenset({"requests", "limits", "overhead"})
MAX_DIFF_LINES = 10


def _empty(v: Any) -> bool:
    return v is None or (isinstance(v, (str, list, Mapping)) and len(v) == 0)


def semantic(value: Any, key: str = "") -> Any:
    """A JSON value as apimachinery's semantic equality sees it: absent, null and empty
    are the same, and quantities compare by amount ("1" == "1000m")."""
    from framework.api.quantity import parse_quantity

    if isinstance(value, Mapping):
        if key in _QUANTITY_MAPS:
            out = {}
            for k, v in value.items():
                try:
                    out[k] = parse_quantity(v)
                except ValidationError:
                    out[k] = v
            return out
        return {k: semantic(v, k) for k, v in value.items() if not _empty(v)}
    if isinstance(value, list):
        return [semantic(v) for v in value]
    return value


def _only_added_tolerations(new: list[Any], old: list[Any]) -> list[ValidationError]:
    for was in old:
        if not isinstance(was, Mapping):
            continue
        if not any(isinstance(t, Mapping) and semantic({**was, "tolerationSeconds": t.get("tolerationSeconds")})
                   == semantic(t) for t in new):
            return [forbidden("spec.tolerations", "existing toleration can not be modified except its "
                                                  "tolerationSeconds")]
    return []


def _gate_names(gates: list[Any]) -> list[str]:
    return [str(g.get("name", "")) if isinstance(g, Mapping) else "" for g in gates]


def _only_deleted_scheduling_gates(new: list[Any], old: list[Any]) -> list[ValidationError]:
    before = set(_gate_names(old))
    return [forbidden(f"spec.schedulingGates[{i}].name", f"only deletion is allowed, but found new scheduling gate '{g}'")
            for i, g in enumerate(_gate_names(new)) if g not in before]


def _active_deadline(new: Any, old: Any) -> list[ValidationError]:
    field = "spec.activeDeadlineSeconds"
    if new is None:
        return [invalid(field, None, "must not update from a positive integer to nil value")] if old is not None else []
    if not isinstance(new, int) or not 0 <= new <= MAX_INT32:
        return [invalid(field, new, f"must be between 0 and {MAX_INT32}, inclusive")]
    if isinstance(old, int) and old < new:
        return [invalid(field, new, "must be less than or equal to previous value")]
    return []


def _munged(new: Mapping[str, Any], old: Mapping[str, Any]) -> tuple[dict[str, Any], list[ValidationError]]:
    """The new spec with every field an update may change set back to the old value
    (the gated-pod nodeSelector additions checked on the way)."""
    out = dict(new)
    for key in ("containers", "initContainers"):
        was = old.get(key) or []
        out[key] = [{**c, "image": w.get("image")} if isinstance(c, Mapping) and isinstance(w, Mapping) else c
                    for c, w in zip(new.get(key) or [], was)]
    for key in ("activeDeadlineSeconds", "schedulingGates", "tolerations"):
        out[key] = old.get(key)
    grace, old_grace = new.get("terminationGracePeriodSeconds"), old.get("terminationGracePeriodSeconds")
    if isinstance(old_grace, int) and old_grace < 0 and grace == 1:
        out["terminationGracePeriodSeconds"] = old_grace
    errs: list[ValidationError] = []
    if old.get("schedulingGates"):
        # A gated pod may gain nodeSelector entries, not lose or change them.
        was, now = old.get("nodeSelector") or {}, new.get("nodeSelector") or {}
        if any(now.get(k) != v for k, v in was.items()):
            errs.append(invalid("spec.nodeSelector", now, "only additions to spec.nodeSelector are allowed "
                                                          "(no mutations or deletions)"))
        out["nodeSelector"] = old.get("nodeSelector")
    return out, errs


def _leaf(value: Any, key: str, parent: str) -> Any:
    """`value` (named `key`, inside `parent`) as semantic() compares it."""
    if parent in _QUANTITY_MAPS and not isinstance(value, (Mapping, list)):
        return semantic({key: value}, parent).get(key)
    return None if _empty(value) else semantic(value, key)


def _diff(old: Any, new: Any, path: str, key: str = "", parent: str = "") -> list[str]:
    """`path: old -> new` for each leaf that differs semantically, values as written."""
    if _leaf(old, key, parent) == _leaf(new, key, parent):
        return []
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        return [line for k in sorted(set(old) | set(new), key=str)
                for line in _diff(old.get(k), new.get(k), f"{path}.{k}", k, key)]
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        return [line for i, (a, b) in enumerate(zip(old, new)) for line in _diff(a, b, f"{path}[{i}]", "", key)]
    return [f"  {path}: {_shown(old)} -> {_shown(new)}"]


def _shown(v: Any) -> str:
    return "<none>" if _empty(v) else json.dumps(v, sort_keys=True)


def validate_pod_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[ValidationError]:
    """ValidatePodUpdate's spec rules: only images, activeDeadlineSeconds (lowered),
    tolerations (added), schedulingGates (removed), the terminationGracePeriodSeconds
    quirk and, on a gated pod, nodeSelector additions may change; anything else,
    spec.nodeName included (only binding sets it), is Forbidden naming `spec`."""
    new_spec, old_spec = new.get("spec") or {}, old.get("spec") or {}
    for key in ("containers", "initContainers"):
        if len(new_spec.get(key) or []) != len(old_spec.get(key) or []):
            return [forbidden(f"spec.{key}", "pod updates may not add or remove containers")]
    errs = _active_deadline(new_spec.get("activeDeadlineSeconds"), old_spec.get("activeDeadlineSeconds"))
    if errs:
        return errs
    errs += _only_added_tolerations(new_spec.get("tolerations") or [], old_spec.get("tolerations") or [])
    errs += _only_deleted_scheduling_gates(new_spec.get("schedulingGates") or [], old_spec.get("schedulingGates") or [])
    if new_spec == old_spec:  # equal as written is equal semantically (a status write: the spec as stored)
        return errs
    was = semantic(old_spec)
    if semantic(new_spec) == was:
        return errs
    munged, more = _munged(new_spec, old_spec)
    errs += more
    if semantic(munged) != was:
        lines = _diff(old_spec, munged, "spec")
        shown = lines[:MAX_DIFF_LINES] + (["  ..."] if len(lines) > MAX_DIFF_LINES else [])
        errs.append(forbidden("spec", "pod updates may not change fields other than "
                              + ",".join(UPDATABLE_POD_SPEC_FIELDS) + "\n" + "\n".join(shown)))
    return errs
