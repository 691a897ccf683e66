"""An in-process writer's scheduling.k8s.io PodGroup, created (a bench's, a controller's)
or updated (the whole-group cycle's PodGroupScheduled condition, actors/group_cycle.py:
one a group), admitted once per shape instead of walked for every group.

The groups of one workload differ in their name and uid, their resourceVersion and the
second they were made in; the condition a cycle writes differs by its outcome and the
second. The PodGroup schema's walk depends on the metadata as meta_shapes.py says (the
name's format checked every time), on the resourceVersion's type alone (its rule is a
plain `Str()`, which any string passes), and on the spec and status by value (their
exact encodings are in the key), with the two top-level checks reading the spec and the
metadata's annotations. So a clean verdict is remembered under those, as pod_metas.py
does for a created pod. Only the walk decides: the first of a shape is walked, a
refused one is always walked (its errors and messages are the walk's), nothing refused
is remembered, and a writer that names a fieldValidation (a client: REST, kubectl, the
msgpack front door with one), a top-level field outside the schema's, or a value of
another type goes to the walk every time. The copy kept is admission's own
(`plain_copy`), so the stored group is the walk's byte for byte.
tests/actors/test_group_writes.py holds the shortcut to the decode stage (hypothesis).
"""
from __future__ import annotations

from typing import Any

from actors.store.meta_shapes import ShapeVerdicts
from actors.store.sharing import exact_key
from framework.api.groups import POD_GROUP_KEY
from framework.api.schema.plain import plain_copy
from framework.api.schema.registry import schema_errors, schema_of
from framework.api.schema.types import Obj, Str
from framework.kueue.versions import to_storage

_GROUP = schema_of(POD_GROUP_KEY, None)
assert isinstance(_GROUP, Obj) and set(_GROUP.fields) == {"metadata", "spec", "status"} \
    and [c.__qualname__ for c in _GROUP.checks] == ["_spec_left_out.<locals>.check", "_preferred_topology_key"] \
    and not _GROUP.required and not _GROUP.strict_required, "the PodGroup schema's top level changed"
SHAPES = ShapeVerdicts(_GROUP)
_META = _GROUP.fields["metadata"]
assert isinstance(_META, Obj) and _META.fields["resourceVersion"] == Str(), "resourceVersion's rule changed"
_TOP_KEYS = frozenset(("apiVersion", "kind", "metadata", "spec", "status"))


def _exact_or_none(raw: dict[str, Any], key: str) -> bytes | None:
    """The exact encoding of `raw[key]` (b"" when absent); None when it has none."""
    value = raw.get(key)
    return b"" if value is None else exact_key(value)


def admitted_group(raw: Any, fv: str | None, strict: bool) -> dict[str, Any] | None:
    """The write chain's decode stage for a scheduling.k8s.io PodGroup created or updated
    by an in-process writer (`fv` None): admission's copy when the schema's walk finds, or
    found for the same shape, nothing wrong; None otherwise (the chain's decode stage
    then walks it and reports)."""
    if fv is not None or type(raw) is not dict or not raw.keys() <= _TOP_KEYS:
        return None
    copy, deep = plain_copy(raw)
    meta = copy.get("metadata")
    version = copy.get("apiVersion")
    if deep is not None or type(meta) is not dict or type(version) is not str or copy.get("kind") != "PodGroup":
        return None
    spec, status = _exact_or_none(copy, "spec"), _exact_or_none(copy, "status")
    if spec is None or status is None:
        return None
    rv = meta.get("resourceVersion")
    if rv is not None:  # any string passes its rule: only its type is read
        if type(rv) is not str:
            return None
        meta = {k: v for k, v in meta.items() if k != "resourceVersion"}
    if not SHAPES.clean(meta, (strict, spec, status), strict,
                        lambda: schema_errors(copy, POD_GROUP_KEY, strict)):
        return None  # the walk's (the caller's walks again and reports)
    return to_storage(copy)
