"""The parse's inline reads (ObjectMeta, a Pod's status) and the admission copy's one pass
with a kept value (plain_copy's `proven`) against what they replaced, over values of every
type in every field: the same parsed values (by identity where the old parse shared the
input) or the same error, and the same copy (values, types, key order, the kept value
itself)."""
from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from framework.api.errors import ValidationError
from framework.api.meta import DEFAULT_NAMESPACE, ObjectMeta, _list, _map, _str, _str_map
from framework.api.objects import parse_as
from framework.api.schema.plain import _json_copy, _NotPlainJson, plain_copy
from framework.api.timeutil import parse_time

META_FIELDS = ("name", "generateName", "namespace", "uid", "labels", "annotations", "creationTimestamp",
               "deletionTimestamp", "resourceVersion", "ownerReferences")
STATUS_FIELDS = ("phase", "nominatedNodeName", "conditions", "startTime")


class _Text(str):
    """A str that is not exactly str: the inline reads leave it to the readers."""


VALUES: list[Any] = [None, "", "web-0", _Text("sub"), 0, 3, True, 1.5, [], ["a"], {}, {"a": "b"},
                     {"a": 1}, {1: "x"}, MappingProxyType({"k": "v"}), "2026-11-29T22:00:00Z", (), b"x"]


def _meta_by_readers(raw: Mapping[str, Any], namespaced: bool, require_name: bool = True) -> dict[str, Any]:
    """ObjectMeta as it was parsed before: every field through its reader."""
    meta = _map(raw, "metadata", "")
    out: dict[str, Any] = {"name": _str(meta, "name", "metadata")}
    if require_name and not out["name"]:
        raise ValidationError("metadata.name", "is required")
    out["generate_name"] = _str(meta, "generateName", "metadata")
    out["namespace"] = (_str(meta, "namespace", "metadata", DEFAULT_NAMESPACE) or DEFAULT_NAMESPACE) \
        if namespaced else ""
    out["uid"] = _str(meta, "uid", "metadata")
    out["labels"] = _str_map(meta, "labels", "metadata")
    out["annotations"] = _str_map(meta, "annotations", "metadata")
    ts = meta.get("creationTimestamp")
    out["creation_timestamp"] = parse_time(ts, "metadata.creationTimestamp") if ts is not None else 0
    dts = meta.get("deletionTimestamp")
    out["deletion_timestamp"] = parse_time(dts, "metadata.deletionTimestamp") if dts is not None else None
    rv = meta.get("resourceVersion")
    out["resource_version"] = str(rv) if rv is not None else ""
    out["owner_references"] = _list(meta, "ownerReferences", "metadata")
    return out


def _outcome(parse: Any) -> Any:
    try:
        return "ok", parse()
    except ValidationError as e:
        return "error", e.field, str(e)


def _same(a: Any, b: Any, given: Any) -> bool:
    """Equal, of one type, and the very object where the old read gave a value of the input."""
    if a[0] != "ok" or b[0] != "ok":
        return a == b
    held = {id(v) for v in given.values()} if isinstance(given, Mapping) else set()
    return all(type(x) is type(y) and x == y and (x is y or id(y) not in held)
               for x, y in zip(a[1].values(), b[1].values())) and a[1].keys() == b[1].keys()


def _parsed(meta: ObjectMeta) -> dict[str, Any]:
    return {"name": meta.name, "generate_name": meta.generate_name, "namespace": meta.namespace, "uid": meta.uid,
            "labels": meta.labels, "annotations": meta.annotations, "creation_timestamp": meta.creation_timestamp,
            "deletion_timestamp": meta.deletion_timestamp, "resource_version": meta.resource_version,
            "owner_references": meta.owner_references}


def _check_meta(raw: Any) -> None:
    for namespaced in (True, False):
        for require_name in (True, False):
            new = _outcome(lambda: _parsed(ObjectMeta(raw, namespaced, require_name)))
            old = _outcome(lambda: _meta_by_readers(raw, namespaced, require_name))
            assert _same(new, old, raw.get("metadata")), (raw, namespaced, require_name, new, old)


def test_object_meta_reads_every_value_of_every_field_as_its_reader_does() -> None:
    base = {"name": "web-0", "namespace": "team-a", "uid": "u-1", "labels": {"app": "web"},
            "creationTimestamp": "2026-11-29T22:00:00Z", "ownerReferences": [{"kind": "Job"}]}
    for metadata in VALUES:
        _check_meta({"metadata": metadata})
    for field in META_FIELDS:
        for value in VALUES:
            _check_meta({"metadata": {**base, field: value}})
            _check_meta({"metadata": {"name": "x", field: value}})


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(META_FIELDS), st.sampled_from(VALUES)))
def test_object_meta_reads_random_metadata_as_its_readers_do(metadata: dict[str, Any]) -> None:
    _check_meta({"metadata": metadata})


def _status_by_readers(raw: Mapping[str, Any]) -> Any:
    status = _map(raw, "status", "")
    st_ = status.get("startTime")
    return {"phase": _str(status, "phase", "status") or "Pending",
            "nominated": _str(status, "nominatedNodeName", "status"),
            "conditions": _list(status, "conditions", "status"),
            "start": parse_time(st_, "status.startTime") if st_ is not None else None}


def test_a_pods_status_is_read_as_its_readers_do() -> None:
    spec = {"containers": [{"name": "c", "image": "pause"}]}
    for field in STATUS_FIELDS:
        for value in VALUES:
            raw = {"kind": "Pod", "metadata": {"name": "p"}, "spec": spec, "status": {field: value}}

            def parsed() -> dict[str, Any]:
                pod: Any = parse_as("Pod", raw)
                return {"phase": pod.phase, "nominated": pod.nominated_node_name, "conditions": pod.conditions,
                        "start": pod.start_time}

            new, old = _outcome(parsed), _outcome(lambda: _status_by_readers(raw))
            assert _same(new, old, raw["status"]), (field, value, new, old)


def _keeping_in_two_passes(raw: dict[str, Any], proven: Any) -> dict[str, Any]:
    """plain_copy's copy with a kept value as it was made before: the rest copied, then merged."""
    rest = {k: v for k, v in raw.items() if v is not proven}
    done = _json_copy(rest, 0)
    return {k: (v if v is proven else done[k]) for k, v in raw.items() if v is proven or k in done}


JSON = st.recursive(st.none() | st.booleans() | st.integers(-(1 << 63), (1 << 64) - 1) | st.text(max_size=3)
                    | st.floats(allow_nan=True, allow_infinity=True),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=2), inner, max_size=3),
                    max_leaves=12)


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(st.sampled_from(["apiVersion", "kind", "metadata", "status", "x"]), JSON, max_size=4),
       st.sampled_from(["spec", "metadata", "z"]), st.booleans())
def test_the_copy_keeping_a_value_is_the_two_pass_copy(raw: dict[str, Any], where: str, twice: bool) -> None:
    proven = {"containers": [{"name": "c", "v": None}]}
    raw = {**raw, where: proven}
    if twice:
        raw["again"] = proven
    try:
        old: Any = _keeping_in_two_passes(raw, proven)
    except _NotPlainJson:
        old = None
    if old is None:  # the one pass gives up too (plain_copy then takes its slow path, unchanged)
        with pytest.raises(_NotPlainJson):
            _json_copy(raw, 0, proven)
        return
    new, deep = plain_copy(raw, proven)
    assert deep is None
    assert msgpack.packb(new, strict_types=True) == msgpack.packb(old, strict_types=True)
    assert list(new) == list(old) and all(new[k] is proven for k in raw if raw[k] is proven)
