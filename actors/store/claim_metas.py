"""The rest of a claim made from a template (its metadata; the spec is proven by
claim_specs.py), admitted once per shape instead of walked for every pod.

The resourceclaim controller makes every such claim with one metadata shape: a
generateName, the namespace, the pod as controlling owner, the template's annotations
with the pod claim's name, the template's labels; the chain then adds name, uid,
generation and creationTimestamp (fields.for_new_object). The claim schema's walk of it
is ObjectMeta's rules and the claim's own check of its status: a clean verdict is
remembered per shape as meta_shapes.py says (the name's format checked every time,
the first of a shape, refusals, other fields and other types always walked). The copy
stored is admission's own (`plain_copy`: nulls dropped, keys interned), so the stored
claim is the walk's byte for byte. tests/actors/test_claim_metas.py holds the shortcut
to the walk on mutated claims (hypothesis)."""
from __future__ import annotations

from typing import Any

from actors.store.meta_shapes import ShapeVerdicts
from framework.api.schema.plain import plain_copy
from framework.api.schema.registry import schema_errors, schema_of
from framework.kueue.versions import to_storage

_CLAIM = schema_of("ResourceClaim", "resource.k8s.io/v1")
assert _CLAIM is not None
SHAPES = ShapeVerdicts(_CLAIM)
_TOP_KEYS = frozenset(("apiVersion", "kind", "metadata"))


def admitted_rest(raw: Any, fv: str | None, strict: bool) -> dict[str, Any] | None:
    """The write chain's decode stage for a claim made from a template, its spec taken
    out (`raw`: apiVersion, kind, metadata), written by an in-process writer (`fv` None):
    admission's copy when the schema's walk finds, or found for the same shape, nothing
    wrong; None otherwise (the chain's decode stage then walks it and reports)."""
    if fv is not None or type(raw) is not dict or not raw.keys() <= _TOP_KEYS:
        return None
    copy, deep = plain_copy(raw)
    meta = copy.get("metadata")
    if deep is not None or type(meta) is not dict or type(copy.get("apiVersion")) is not str \
            or copy.get("kind") != "ResourceClaim" or schema_of("ResourceClaim", copy["apiVersion"]) is not _CLAIM:
        return None
    if not SHAPES.clean(meta, (strict,), strict, lambda: schema_errors(copy, "ResourceClaim", strict)):
        return None  # the walk's (the caller's walks again and reports)
    return to_storage(copy)
