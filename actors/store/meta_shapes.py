"""An object's metadata admitted once per shape instead of walked for every object:
the machinery shared by a template claim's metadata (claim_metas.py) and a created
pod's metadata and status (pod_metas.py).

A kind's schema walk of ObjectMeta (framework.api.schema.common.object_meta: its rules
field by field, its two object checks) depends on:
- the name: its format rule, run for every object, and whether it is empty;
- generateName and uid, and an owner reference's name and uid: whether each is a string
  and whether it is empty (their rule is a plain `Str()`, which asks nothing else;
  checked when a kind's `ShapeVerdicts` is made, as the object checks are);
- every other value itself: the namespace, generation, creationTimestamp, the labels,
  the annotations (their keys, and their total size), an owner reference's apiVersion,
  kind and flags.
So a clean verdict of the walk is remembered under exactly those (`ShapeVerdicts.key`,
with whatever else the caller's walk reads: the strict mode, a pod's status), and an
object with the same key and a name its rule takes is clean too. Only the walk decides:
the first object of a shape is walked, a refused one is always walked (its errors, paths
and messages are the walk's), nothing refused is remembered, and a metadata field
outside the shape, or a value of another type, is walked every time. The caller stores
admission's own copy (`plain_copy`), so the stored object is the walk's byte for byte.
"""
from __future__ import annotations

from typing import Any, Callable

from framework.api.schema.common import _annotations_size, _name_or_generate_name
from framework.api.schema.types import Ctx, ListOf, Obj, Str

_TYPE_ONLY = ("generateName", "uid")  # a plain Str(): the type and emptiness decide
_OWNER_TYPE_ONLY = ("name", "uid")
_BY_VALUE = frozenset(("namespace", "generation", "creationTimestamp"))
_MAPS = frozenset(("labels", "annotations"))
MEMO_MOST = 1 << 12  # clean shapes remembered before starting over (a new second is a new shape)


def checked_meta(schema: Obj) -> Obj:
    """`schema`'s metadata rule, once it is shown to be the one the keys assume."""
    meta = schema.fields["metadata"]
    assert isinstance(meta, Obj), "metadata is no longer an object rule"
    owners = meta.fields["ownerReferences"]
    assert isinstance(owners, ListOf) and isinstance(owners.item, Obj) and not owners.unique_key \
        and owners.max_items is None, "ownerReferences' rule changed: the remembered verdicts no longer hold"
    assert all(meta.fields[k] == Str() for k in _TYPE_ONLY) \
        and all(owners.item.fields[k] == Str() for k in _OWNER_TYPE_ONLY), "a name or uid rule changed"
    assert meta.checks == (_name_or_generate_name, _annotations_size), "ObjectMeta's object checks changed"
    assert not meta.required and not meta.strict_required, "ObjectMeta now requires a field"
    return meta


def _owner_key(refs: Any) -> tuple[Any, ...] | None:
    if type(refs) is not list:
        return None
    parts: list[Any] = []
    for ref in refs:
        if type(ref) is not dict:
            return None
        owner: list[Any] = []
        for a, b in ref.items():
            tb = type(b)
            if tb is not str and tb is not bool:
                return None
            owner.append((a, tb, b != "" if a in _OWNER_TYPE_ONLY and tb is str else b))
        parts.append(tuple(owner))
    return tuple(parts)


def meta_key(meta: dict[str, Any], more: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """What the walk's verdict on `meta` depends on, but the name's format, after `more`
    (what else the caller's walk reads); None: a shape this does not know (walked every time)."""
    parts: list[Any] = [more]
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
            for b in v.values():
                if type(b) is not str:  # (keys are strings in a plain copy)
                    return None
            parts.append((k, tuple(v.items())))
        elif k == "ownerReferences":
            owners = _owner_key(v)
            if owners is None:
                return None
            parts.append((k, owners))
        else:
            return None
    return tuple(parts)


class ShapeVerdicts:
    """The clean verdicts of one kind's schema walk, by shape (bounded: when full it starts afresh)."""

    def __init__(self, schema: Obj) -> None:
        self._name = checked_meta(schema).fields["name"]
        self._clean: dict[tuple[Any, ...], None] = {}
        self.proven_count = 0  # objects admitted by a remembered verdict (tests, profile)

    def forget(self) -> None:
        self._clean.clear()

    def clean(self, meta: dict[str, Any], more: tuple[Any, ...], strict: bool,
              walk: Callable[[], list[Any]]) -> bool:
        """Whether the walk finds nothing wrong with the object holding `meta` (admission's
        copy): by a remembered verdict for its shape and its name's rule, else by `walk`
        (the walk's errors), whose clean verdict is then remembered. False: leave it to
        the caller's walk, which reports."""
        key = meta_key(meta, more)
        if key is None:
            return False
        if key in self._clean:
            name = meta.get("name")
            if name is not None:
                ctx = Ctx(strict=strict)
                self._name.check(name, "metadata.name", ctx)
                if ctx.errors:
                    return False
            self.proven_count += 1
            return True
        if walk():
            return False
        if len(self._clean) >= MEMO_MOST:
            self._clean.clear()
        self._clean[key] = None
        return True
