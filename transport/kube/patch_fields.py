"""Unknown fields in a PATCH, as kube-apiserver's patch handler treats them
(k8s.io/apiserver pkg/endpoints/handlers/patch.go):

- JSON merge patch, JSON patch and strategic merge patch: the patched object is
  decoded strictly. Under fieldValidation Strict an unknown field is 422 Invalid,
  `"" is invalid: patch: Invalid value: "<value>": strict decoding error: unknown
  field "spec.foo", ...` (the value is the patched object as JSON for merge and JSON
  patches, the patch as Go prints a map for strategic merge); under Warn (the default)
  each is a `unknown field "spec.foo"` warning and is dropped; under Ignore it is
  dropped silently.
- Server-side apply (apply-patch+yaml): the applied configuration is converted to
  its typed form first, which fails on any unknown field whatever fieldValidation
  says: `failed to create typed patch object (<ns>/<name>; <group>/<version>,
  Kind=<kind>): .spec.foo: field not declared in schema`. Upstream answers it as a
  500 (kubernetes issue 139253, its fix pending as a 400); ksched answers the 400.

Only fields the patch brings in are judged: an object stored through a door that
kept unknown fields (a msgpack client sending no fieldValidation) can still be
patched; those fields stay as they were.
"""
from __future__ import annotations

import json
import re
from typing import Any

from framework.api.schema import unknown_fields, without_nulls
from transport.kube.patch import MERGE_KEYS, STRATEGIC
from transport.kube.status import KubeError, bad_request

Unknown = tuple[str, dict[str, Any], str]  # (path as kube-apiserver names it, the map holding it, key)


def checked_patch(ctype: str, mode: str, new: dict[str, Any], have: dict[str, Any], patch: Any
                  ) -> tuple[dict[str, Any], list[str]]:
    """`new` (the patched object, kind set) without the unknown fields the patch brought
    in, and the warnings to send; KubeError 422 under Strict when there are any."""
    out = without_nulls(new)  # a copy: the fields below are dropped from it
    before = {path for path, _, _ in unknown_fields(without_nulls(have))} if have.get("kind") else set()
    brought = [u for u in unknown_fields(out) if u[0] not in before]
    if not brought:
        return out, []
    named = [f'unknown field "{path}"' for path, _, _ in brought]
    if mode == "Strict":
        value = go_text(patch) if ctype == STRATEGIC else json.dumps(out, separators=(",", ":"), ensure_ascii=False)
        body = f'Invalid value: {json.dumps(value, ensure_ascii=False)}: strict decoding error: {", ".join(named)}'
        raise KubeError(422, "Invalid", f' "" is invalid: patch: {body}',
                        causes=[{"reason": "FieldValueInvalid", "message": body, "field": "patch"}])
    for _, holder, key in brought:
        holder.pop(key, None)
    return out, named if mode == "Warn" else []


def check_applied(applied: dict[str, Any]) -> None:
    """Refuse an applied configuration (kind and apiVersion set) with fields its kind
    does not have, as the typed conversion of server-side apply refuses it."""
    unknown = unknown_fields(without_nulls(applied))
    if not unknown:
        return
    errors = [f"{_typed_path(path, applied)}: field not declared in schema" for path, _, _ in unknown]
    text = errors[0] if len(errors) == 1 else "\n".join(["errors:", *("  " + e for e in errors)])
    meta = applied.get("metadata") or {}
    group, _, version = str(applied.get("apiVersion", "")).rpartition("/")
    raise bad_request(f"failed to create typed patch object ({meta.get('namespace', '')}/{meta.get('name', '')}; "
                      f"{group}/{version}, Kind={applied.get('kind', '')}): {text}")


_STEP = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def _typed_path(path: str, obj: Any) -> str:
    """`spec.containers[0].foo` as structured-merge-diff names it: `.spec.containers[name="c"].foo`
    (an element of a list merged by key is named by its key, others by index)."""
    out, node, field = [], obj, ""
    for name, index in _STEP.findall(path):
        if name:
            out.append("." + name)
            node, field = node.get(name) if isinstance(node, dict) else None, name
            continue
        elem = node[int(index)] if isinstance(node, list) and int(index) < len(node) else None
        key = MERGE_KEYS.get(field)
        if key and isinstance(elem, dict) and key in elem:
            out.append(f"[{key}={json.dumps(elem[key], ensure_ascii=False)}]")
        else:
            out.append(f"[{index}]")
        node = elem
    return "".join(out)


def go_text(value: Any) -> str:
    """`value` as Go's fmt prints a decoded JSON value with %+v: map[k:v ...] with
    sorted keys, [a b] for lists, strings bare, <nil> for null."""
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{go_text(value[k])}" for k in sorted(value)) + "]"
    if isinstance(value, list):
        return "[" + " ".join(go_text(v) for v in value) + "]"
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
