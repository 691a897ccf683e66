"""The four patch types kube-apiserver takes, as pure functions on JSON values:

- JSON merge patch (RFC 7386; label, annotate, client-side apply of PodGroups);
- JSON patch (RFC 6902; the Python client with a list body, `kubectl patch --type=json`);
- strategic merge patch (built-in kinds only: apply, cordon, uncordon, taint), with
  upstream's merge keys from the patchStrategy/patchMergeKey tags of
  k8s.io/api/core/v1/types.go and the directives $patch, $retainKeys,
  $deleteFromPrimitiveList/<field> and $setElementOrder/<field> (order only: ignored);
- server-side apply (apply.py) builds on the merge functions here.

Bad patches raise PatchError; the caller answers 422 (or 400 for undecodable bodies).
"""
from __future__ import annotations

import copy
import json
from typing import Any

MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
APPLY = "application/apply-patch+yaml"
PATCH_TYPES = (JSON_PATCH, MERGE_PATCH, STRATEGIC, APPLY)

# list field -> the key its elements merge by (patchMergeKey), for the stored built-in kinds
MERGE_KEYS: dict[str, str] = {
    "containers": "name", "initContainers": "name", "ephemeralContainers": "name", "volumes": "name",
    "env": "name", "imagePullSecrets": "name", "resourceClaims": "name", "volumeMounts": "mountPath",
    "volumeDevices": "devicePath", "conditions": "type", "addresses": "type", "ownerReferences": "uid",
    "hostAliases": "ip", "topologySpreadConstraints": "topologyKey", "ports": "containerPort",
    "readinessGates": "conditionType",
}
# lists of scalars merged as sets (patchStrategy:"merge" without a key)
MERGED_SETS = frozenset({"finalizers"})
# maps with patchStrategy:"replace", per kind (path from the object's root)
REPLACED: dict[str, tuple[tuple[str, ...], ...]] = {"PodDisruptionBudget": (("spec", "selector"),)}


class PatchError(Exception):
    pass


# --- RFC 7386 -----------------------------------------------------------------------------------

def merge_patch(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


# --- RFC 6902 -----------------------------------------------------------------------------------
# As kube-apiserver applies it (evanphx/json-patch v4): a body that is not a list of
# operation objects is a decode error (400); more than MAX_JSON_PATCH_OPS operations
# is 413; any operation that cannot be applied (a missing path, a failed test, an
# unknown op, add/remove/replace/move/copy on the whole document "") fails the patch.
# `copy` may not copy more than MAX_COPIED bytes in one patch, so a chain of copies
# cannot double a document into gigabytes.

MAX_JSON_PATCH_OPS = 10_000  # apiserver's maxJSONPatchOperations
MAX_COPIED = 3 * 1024 * 1024  # bytes all of one patch's copy operations may copy


class PatchDecodeError(PatchError):
    """The body is not an RFC 6902 patch at all."""


class TooManyOperations(PatchError):
    pass


_GO_TYPES = {dict: "object", list: "array", str: "string", bool: "bool", int: "number", float: "number"}


def _pointer(path: Any) -> list[str]:
    if not isinstance(path, str) or (path and not path.startswith("/")):
        raise PatchError(f"invalid JSON pointer {path!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in path.split("/")[1:]] if path else []


def _parent(doc: Any, parts: list[str]) -> Any:
    if not parts:
        raise PatchError("doc is missing path: \"\"")  # the whole document is no member of a parent
    node = doc
    for p in parts[:-1]:
        if isinstance(node, dict) and p in node:
            node = node[p]
        elif isinstance(node, list) and p.isdigit() and int(p) < len(node):
            node = node[int(p)]
        else:
            raise PatchError(f"path /{'/'.join(parts)}: /{p} does not exist")
    return node


def _get(doc: Any, parts: list[str]) -> Any:
    if not parts:
        return doc
    parent, last = _parent(doc, parts), parts[-1]
    if isinstance(parent, dict) and last in parent:
        return parent[last]
    if isinstance(parent, list) and last.isdigit() and int(last) < len(parent):
        return parent[int(last)]
    raise PatchError(f"path /{'/'.join(parts)} does not exist")


def _add(doc: Any, parts: list[str], value: Any) -> Any:
    parent, last = _parent(doc, parts), parts[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        if last == "-":
            parent.append(value)
        elif last.isdigit() and int(last) <= len(parent):
            parent.insert(int(last), value)
        else:
            raise PatchError(f"path /{'/'.join(parts)}: index out of range")
    else:
        raise PatchError(f"path /{'/'.join(parts)}: parent is not an object or a list")
    return doc


def _remove(doc: Any, parts: list[str]) -> Any:
    _get(doc, parts)
    parent, last = _parent(doc, parts), parts[-1]
    if isinstance(parent, dict):
        del parent[last]
    else:
        del parent[int(last)]
    return doc


def same_json(a: Any, b: Any) -> bool:
    """JSON equality: true is not 1 (Python's == says it is)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_json(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_json(x, y) for x, y in zip(a, b))
    return type(a) in (int, float) and type(b) in (int, float) and a == b or type(a) is type(b) and a == b


def decode_json_patch(ops: Any) -> list[dict[str, Any]]:
    """The operations of a JSON patch body; PatchDecodeError when it is no list of objects
    (JSON null is an empty patch, as Go decodes it)."""
    if ops is None:
        return []
    if not isinstance(ops, list):
        raise PatchDecodeError(f"json: cannot unmarshal {_GO_TYPES.get(type(ops), 'value')} into Go value of type "
                               "jsonpatch.Patch")
    for op in ops:
        if op is not None and not isinstance(op, dict):
            raise PatchDecodeError(f"json: cannot unmarshal {_GO_TYPES.get(type(op), 'value')} into Go value of "
                                   "type jsonpatch.Operation")
    if len(ops) > MAX_JSON_PATCH_OPS:
        raise TooManyOperations(f"The allowed maximum operations in a JSON patch is {MAX_JSON_PATCH_OPS}, "
                                f"got {len(ops)}")
    return [op or {} for op in ops]


def json_patch(target: Any, ops: Any) -> Any:
    doc = copy.deepcopy(target)
    copied = 0
    for i, op in enumerate(decode_json_patch(ops)):
        kind = op.get("op")
        if "path" not in op:
            raise PatchError(f"operation {i}: operation missing path field")
        parts = _pointer(op["path"])
        if kind in ("add", "replace", "test") and "value" not in op:
            raise PatchError(f"operation {i} ({kind}): needs a value")
        if kind == "add":
            doc = _add(doc, parts, copy.deepcopy(op["value"]))
        elif kind == "remove":
            doc = _remove(doc, parts)
        elif kind == "replace":
            _get(doc, parts)
            doc = _add(_remove(doc, parts), parts, copy.deepcopy(op["value"]))
        elif kind == "test":
            if not same_json(_get(doc, parts), op["value"]):
                raise PatchError(f"testing value {op['path']} failed: test failed")
        elif kind in ("move", "copy"):
            src = _pointer(op.get("from"))
            value = _get(doc, src)
            if kind == "move":
                doc = _remove(doc, src)
            else:
                copied += len(json.dumps(value))
                if copied > MAX_COPIED:
                    raise PatchError(f"Unable to complete the copy, the accumulated size increase of copy is "
                                     f"{copied}, exceeding the limit {MAX_COPIED}")
                value = copy.deepcopy(value)
            doc = _add(doc, parts, value)
        else:
            raise PatchError(f"Unexpected kind: {kind}")
    return doc


# --- strategic merge patch --------------------------------------------------------------------

def strategic_merge(target: Any, patch: Any, field: str = "") -> Any:
    """Merge `patch` into `target` (neither is changed); `field` is the name of the
    map's field in its parent, for merge keys that depend on it."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if patch.get("$patch") == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    if patch.get("$patch") == "delete":
        return None
    out = dict(target) if isinstance(target, dict) else {}
    retain = patch.get("$retainKeys")
    if isinstance(retain, list):
        out = {k: v for k, v in out.items() if k in retain}
    for key, value in patch.items():
        if key in ("$patch", "$retainKeys") or key.startswith("$setElementOrder/"):
            continue
        if key.startswith("$deleteFromPrimitiveList/"):
            name = key.split("/", 1)[1]
            if isinstance(out.get(name), list) and isinstance(value, list):
                out[name] = [v for v in out[name] if v not in value]
            continue
        if value is None:
            out.pop(key, None)
        elif isinstance(value, list):
            out[key] = _merge_list(out.get(key), value, key, field)
        elif isinstance(value, dict):
            merged = strategic_merge(out.get(key), value, key)
            if merged is None:
                out.pop(key, None)
            else:
                out[key] = merged
        else:
            out[key] = value
    return out


def strategic_merge_for(kind: str, target: Any, patch: Any) -> Any:
    """strategic_merge with `kind`'s replace-strategy maps replaced whole, as upstream's
    struct tags say (a PodDisruptionBudget's spec.selector)."""
    paths = REPLACED.get(kind, ())
    if paths and isinstance(patch, dict):
        patch = copy.deepcopy(patch)
        for path in paths:
            node: Any = patch
            for part in path[:-1]:
                node = node.get(part) if isinstance(node, dict) else None
            if isinstance(node, dict) and isinstance(node.get(path[-1]), dict):
                node[path[-1]]["$patch"] = "replace"
    return strategic_merge(target, patch)


def _merge_key(name: str, parent_field: str) -> str | None:
    if name == "ports" and parent_field == "spec":
        return "port"  # a Service's ports (a container's ports are keyed by containerPort)
    return MERGE_KEYS.get(name)


def _merge_list(current: Any, patch: list[Any], name: str, parent_field: str) -> list[Any]:
    if any(isinstance(e, dict) and e.get("$patch") == "replace" for e in patch):
        return [copy.deepcopy(e) for e in patch if not (isinstance(e, dict) and "$patch" in e)]
    have = list(current) if isinstance(current, list) else []
    if name in MERGED_SETS:
        return have + [copy.deepcopy(v) for v in patch if v not in have]
    key = _merge_key(name, parent_field)
    if key is None or not all(isinstance(e, dict) for e in patch):
        return [copy.deepcopy(e) for e in patch]  # atomic lists (taints, tolerations, args...) are replaced
    for elem in patch:
        if key not in elem:
            raise PatchError(f"{name}: an element has no merge key {key!r}")
        at = next((i for i, e in enumerate(have) if isinstance(e, dict) and e.get(key) == elem[key]), None)
        if elem.get("$patch") == "delete":
            if at is not None:
                del have[at]
        elif at is None:
            have.append({k: copy.deepcopy(v) for k, v in elem.items() if k != "$patch"})
        else:
            have[at] = strategic_merge(have[at], elem, name)
    return have
