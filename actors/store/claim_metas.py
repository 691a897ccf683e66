"""The rest of a claim made from a template (its metadata; the spec is proven by
claim_specs.py), judged by its parts instead of walked.

The resourceclaim controller makes every such claim with one metadata shape: a
generateName, the namespace, the pod as controlling owner, the template's annotations
with the pod claim's name, the template's labels; the chain then adds name, uid,
generation and creationTimestamp (fields.for_new_object). The claim schema's walk of
that (framework.api.schema: ObjectMeta's rules, its object checks, the claim's top-level
checks) finds errors that are the sum of independent verdicts: each field's rule on its
own value, and the object checks on the metadata. Here each field is asked of its own
rule in the schema (the very rule object the walk would call), the object checks of the
metadata and of the claim are run as the walk runs them, and the verdicts on values that
repeat from pod to pod are remembered by value: the namespace, the creation second, the
annotations, an owner reference's values (its name and uid by whether they are empty:
the only thing their rule, a plain `Str()`, asks of a string; checked at import). A
metadata field outside that shape, or any value refused, sends the claim through the
walk, whose errors (paths, messages, order) are the only ones ever reported.

The copy stored is admission's own (`plain_copy`, nulls dropped, keys interned), so the
stored claim is the walk's byte for byte. tests/actors/test_claim_metas.py holds the
shortcut to the walk on mutated claims (hypothesis)."""
from __future__ import annotations

from typing import Any

from framework.api.schema.plain import plain_copy
from framework.api.schema.registry import schema_of
from framework.api.schema.types import Ctx, ListOf, Obj, Str
from framework.kueue.versions import to_storage

_CLAIM = schema_of("ResourceClaim", "resource.k8s.io/v1")
assert _CLAIM is not None and isinstance(_CLAIM.fields["metadata"], Obj)
_META: Obj = _CLAIM.fields["metadata"]
_OWNERS = _META.fields["ownerReferences"]
assert isinstance(_OWNERS, ListOf) and isinstance(_OWNERS.item, Obj) and not _OWNERS.unique_key \
    and _OWNERS.max_items is None, "ownerReferences' rule changed: the shortcut's owner verdicts no longer hold"
_OWNER: Obj = _OWNERS.item
_OWNER_PLAIN = ("name", "uid")  # judged by emptiness alone: their rule must be a plain Str()
assert all(_OWNER.fields[k] == Str() for k in _OWNER_PLAIN), "an owner reference's name or uid rule changed"
# the walk's required fields: none on the claim's top or its metadata (else judge them here)
assert not (_CLAIM.required or _CLAIM.strict_required or _META.required or _META.strict_required)

_PER_OBJECT = frozenset(("name", "generateName", "uid"))  # run every time: they differ per claim
_REPEATED = frozenset(("namespace", "generation", "creationTimestamp"))  # remembered by value
_TOP_KEYS = frozenset(("apiVersion", "kind", "metadata"))
_MEMO_MOST = 1 << 12  # remembered verdicts before starting over

_verdicts: dict[tuple[Any, ...], bool] = {}
proven_count = 0  # claims admitted by their parts (tests, profile)


def _remembered(key: tuple[Any, ...], rule: Any, value: Any, path: str, strict: bool) -> bool:
    """`rule`'s verdict on `value` (clean or not), remembered under `key` (what it depends on)."""
    verdict = _verdicts.get(key)
    if verdict is None:
        ctx = Ctx(strict=strict)
        rule.check(value, path, ctx)
        verdict = not ctx.errors
        if len(_verdicts) >= _MEMO_MOST:
            _verdicts.clear()
        _verdicts[key] = verdict
    return verdict


def _owner_key(ref: Any, strict: bool) -> tuple[Any, ...] | None:
    """What the owner reference rule's verdict on `ref` depends on, or None (walk it)."""
    if type(ref) is not dict:
        return None
    parts: list[Any] = ["owner", strict]
    for k, v in ref.items():
        t = type(v)
        if t is not str and t is not bool:
            return None
        parts.append((k, t, v != "" if t is str and k in _OWNER_PLAIN else v))
    return tuple(parts)


def _meta_clean(meta: dict[str, Any], strict: bool) -> bool:
    fields = _META.fields
    ctx = Ctx(strict=strict)  # the rules run every time, and the object checks
    for k, v in meta.items():
        if k in _PER_OBJECT or k == "labels":  # (labels: a Remembered rule already)
            fields[k].check(v, "metadata." + k, ctx)
        elif k in _REPEATED:
            t = type(v)
            if (t is not str and t is not int) or not _remembered((k, t, v, strict), fields[k], v, "metadata." + k, strict):
                return False
        elif k == "annotations":
            if type(v) is not dict:
                return False
            key: list[Any] = [k, strict]
            for a, b in v.items():
                if type(a) is not str or type(b) is not str:
                    return False
                key += (a, b)
            if not _remembered(tuple(key), fields[k], v, "metadata.annotations", strict):
                return False
        elif k == "ownerReferences":
            if type(v) is not list:
                return False
            for i, ref in enumerate(v):
                owner = _owner_key(ref, strict)
                if owner is None or not _remembered(owner, _OWNER, ref, f"metadata.ownerReferences[{i}]", strict):
                    return False
        else:
            return False
    for extra in _META.checks:  # as the walk runs them (the name, the annotations' size)
        extra(meta, "metadata", ctx)
    return not ctx.errors


def admitted_rest(raw: Any, fv: str | None, strict: bool) -> dict[str, Any] | None:
    """The write chain's decode stage for a claim made from a template, its spec taken
    out (`raw`: apiVersion, kind, metadata), written by an in-process writer (`fv` None):
    admission's copy when the schema's walk would find nothing wrong, None otherwise
    (the walk then runs and reports)."""
    global proven_count
    if fv is not None or type(raw) is not dict or not raw.keys() <= _TOP_KEYS:
        return None
    copy, deep = plain_copy(raw)
    if deep is not None or type(copy.get("apiVersion")) is not str or copy.get("kind") != "ResourceClaim" \
            or schema_of("ResourceClaim", copy["apiVersion"]) is not _CLAIM:
        return None
    meta = copy.get("metadata")
    if meta is not None and (type(meta) is not dict or not _meta_clean(meta, strict)):
        return None
    ctx = Ctx(strict=strict)
    for extra in _CLAIM.checks:  # the claim's own (its status: none here)
        extra(copy, "", ctx)
    if ctx.errors:
        return None
    proven_count += 1
    return to_storage(copy)
