"""The rest of a created pod whose spec is an admitted one (pod_specs.py): its metadata
and status, admitted once per shape instead of walked for every pod.

The pods of one template (a Job's, a Deployment's, a bench's) differ in their name and
uid, and the second they were made in: with the spec proven, the Pod schema's walk is
ObjectMeta's rules (a clean verdict remembered per shape as meta_shapes.py says: the
name's format checked every time, the first of a shape, refusals, other fields and other
types always walked), the status's (read by value: its exact encoding is in the key) and
the pod's one object check (`_spec_left_out`, which a present spec never trips). Only an
in-process writer's create (no fieldValidation: no unknown fields are looked for) is
taken. The copy kept is admission's own (`plain_copy`, the spec left in place), so the
stored pod is the walk's byte for byte. tests/actors/test_pod_metas.py holds the
shortcut to the decode stage on mutated pods (hypothesis)."""
from __future__ import annotations

from typing import Any

from actors.store.meta_shapes import ShapeVerdicts
from actors.store.sharing import exact_key
from framework.api.schema.pod import _spec_left_out
from framework.api.schema.plain import plain_copy
from framework.api.schema.registry import schema_errors, schema_of
from framework.kueue.versions import to_storage

_POD = schema_of("Pod", None)
assert _POD is not None and schema_of("Pod", "v1") is _POD and _POD.checks == (_spec_left_out,) \
    and not _POD.required and not _POD.strict_required, "the Pod schema's top level changed"
SHAPES = ShapeVerdicts(_POD)
_TOP_KEYS = frozenset(("apiVersion", "kind", "metadata", "spec", "status"))


def admitted_rest(raw: Any, fv: str | None, strict: bool, spec: dict[str, Any]) -> dict[str, Any] | None:
    """The write chain's decode stage for a created pod carrying the admitted `spec`
    itself, written by an in-process writer (`fv` None): admission's copy when the
    schema's walk finds, or found for the same shape, nothing wrong; None otherwise
    (the chain's decode stage then walks it and reports)."""
    if fv is not None or type(raw) is not dict or raw.get("spec") is not spec or not raw.keys() <= _TOP_KEYS:
        return None
    copy, deep = plain_copy(raw, spec)
    meta = copy.get("metadata")
    version = copy.get("apiVersion")
    if deep is not None or type(meta) is not dict or (version is not None and type(version) is not str) \
            or copy.get("kind") != "Pod":
        return None
    status = copy.get("status")
    seen = exact_key(status) if status is not None else b""
    if seen is None:
        return None
    if not SHAPES.clean(meta, (strict, version is None, seen), strict,
                        lambda: schema_errors(copy, "Pod", strict, proven=spec)):
        return None  # the walk's (the caller's walks again and reports)
    return to_storage(copy)
