"""The rest of a claim made from a template (its metadata; the spec is proven by
claim_specs.py), admitted once per shape instead of walked for every pod.

The resourceclaim controller makes every such claim with one metadata shape: a
generateName, the namespace, the pod as controlling owner, the template's annotations
with the pod claim's name, the template's labels; the chain then adds name, uid,
generation and creationTimestamp (fields.for_new_object). The claim schema's walk of it
(framework.api.schema: ObjectMeta's rules field by field, its two object checks, the
claim's own check of its status) depends on:
- the name: its format rule, run for every claim, and whether it is empty;
- generateName and uid, and an owner reference's name and uid: whether each is a string
  and whether it is empty (their rule is a plain `Str()`, which asks nothing else;
  checked at import, as the object checks below are);
- every other value itself: the namespace, generation, creationTimestamp, the labels,
  the annotations (their keys, and their total size), an owner reference's apiVersion,
  kind and flags.
So a clean verdict of the walk is remembered under exactly those (`_key`), and a claim
with the same key and a name its rule takes is clean too. Only the walk decides: the
first claim of a shape is walked, a refused one is always walked (its errors, paths and
messages are the walk's), nothing refused is remembered, and a metadata field outside
the shape, or a value of another type, is walked every time. The copy stored is
admission's own (`plain_copy`: nulls dropped, keys interned), so the stored claim is
the walk's byte for byte. tests/actors/test_claim_metas.py holds the shortcut to the
walk on mutated claims (hypothesis)."""
from __future__ import annotations

from typing import Any

from framework.api.schema.common import _annotations_size, _name_or_generate_name
from framework.api.schema.plain import plain_copy
from framework.api.schema.registry import schema_errors, schema_of
from framework.api.schema.types import Ctx, ListOf, Obj, Str
from framework.kueue.versions import to_storage

_CLAIM = schema_of("ResourceClaim", "resource.k8s.io/v1")
assert _CLAIM is not None and isinstance(_CLAIM.fields["metadata"], Obj)
_META: Obj = _CLAIM.fields["metadata"]
_OWNERS = _META.fields["ownerReferences"]
assert isinstance(_OWNERS, ListOf) and isinstance(_OWNERS.item, Obj) and not _OWNERS.unique_key \
    and _OWNERS.max_items is None, "ownerReferences' rule changed: the remembered verdicts no longer hold"
_TYPE_ONLY = ("generateName", "uid")  # a plain Str(): the type and emptiness decide
_OWNER_TYPE_ONLY = ("name", "uid")
assert all(_META.fields[k] == Str() for k in _TYPE_ONLY) \
    and all(_OWNERS.item.fields[k] == Str() for k in _OWNER_TYPE_ONLY), "a name or uid rule changed"
assert _META.checks == (_name_or_generate_name, _annotations_size), "ObjectMeta's object checks changed"
_NAME = _META.fields["name"]
_BY_VALUE = frozenset(("namespace", "generation", "creationTimestamp"))
_MAPS = frozenset(("labels", "annotations"))
_TOP_KEYS = frozenset(("apiVersion", "kind", "metadata"))
_MEMO_MOST = 1 << 12  # clean shapes remembered before starting over (a new second is a new shape)

_clean: dict[tuple[Any, ...], None] = {}
proven_count = 0  # claims admitted by a remembered verdict (tests, profile)


def _key(meta: dict[str, Any], strict: bool) -> tuple[Any, ...] | None:
    """What the walk's verdict on `meta` depends on, but the name's format; None: a
    shape this does not know (walked every time)."""
    parts: list[Any] = [strict]
    for k, v in meta.items():
        t = type(v)
        if k == "name" or k in _TYPE_ONLY:
            if t is not str:
                return None
            parts.append((k, v != ""))
        elif k in _BY_VALUE:
            if t is not str and t is not int:
                return None
            parts.append((k, t, v))
        elif k in _MAPS:
            if t is not dict:
                return None
            for a, b in v.items():
                if type(b) is not str:  # (keys are strings in a plain copy)
                    return None
            parts.append((k, tuple(v.items())))
        elif k == "ownerReferences":
            if t is not list:
                return None
            for ref in v:
                if type(ref) is not dict:
                    return None
                owner: list[Any] = []
                for a, b in ref.items():
                    tb = type(b)
                    if tb is not str and tb is not bool:
                        return None
                    owner.append((a, tb, b != "" if a in _OWNER_TYPE_ONLY and tb is str else b))
                parts.append(tuple(owner))
            parts.append(k)
        else:
            return None
    return tuple(parts)


def admitted_rest(raw: Any, fv: str | None, strict: bool) -> dict[str, Any] | None:
    """The write chain's decode stage for a claim made from a template, its spec taken
    out (`raw`: apiVersion, kind, metadata), written by an in-process writer (`fv` None):
    admission's copy when the schema's walk finds, or found for the same shape, nothing
    wrong; None otherwise (the chain's decode stage then walks it and reports)."""
    global proven_count
    if fv is not None or type(raw) is not dict or not raw.keys() <= _TOP_KEYS:
        return None
    copy, deep = plain_copy(raw)
    meta = copy.get("metadata")
    if deep is not None or type(meta) is not dict or type(copy.get("apiVersion")) is not str \
            or copy.get("kind") != "ResourceClaim" or schema_of("ResourceClaim", copy["apiVersion"]) is not _CLAIM:
        return None
    key = _key(meta, strict)
    if key is None:
        return None
    if key in _clean:
        name = meta.get("name")
        if name is not None:
            ctx = Ctx(strict=strict)
            _NAME.check(name, "metadata.name", ctx)
            if ctx.errors:
                return None
        proven_count += 1
        return to_storage(copy)
    if schema_errors(copy, "ResourceClaim", strict):  # the walk itself (the caller's walks again and reports)
        return None
    if len(_clean) >= _MEMO_MOST:
        _clean.clear()
    _clean[key] = None
    return to_storage(copy)
