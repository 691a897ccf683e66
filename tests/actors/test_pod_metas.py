"""The rest of a created pod whose spec is an admitted one (its metadata and status)
judged by its parts (actors/store/pod_metas.py): whenever the shortcut takes a pod, the
write chain's decode stage (the schema's full walk, the spec kept) finds nothing wrong
with it and its copy is the walk's, byte for byte; a template's pods take it; anything
refused, or any shape it does not know, is left to the walk."""
from __future__ import annotations

import copy
import random
from typing import Any

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from actors.store import pod_metas
from actors.store.fields import for_new_object
from actors.store.front_door import decode_stage
from actors.store.pod_metas import admitted_rest
from tests.actors.test_claim_metas import BAD, META_PLACES, VALUES, mutations
from tests.actors.test_claim_statuses import _with

SPEC = decode_stage("Pod", {"kind": "Pod", "metadata": {"name": "x"}, "spec": {
    "containers": [{"name": "c", "image": "pause", "resources": {"requests": {"cpu": "100m"}}}]}},
    None, True, lambda _ns: True, []).raw["spec"]  # an admitted spec (plain, no nulls, interned)


def _pod(labels: dict[str, Any] | None = None, status: dict[str, Any] | None = None,
         name: str = "web-0") -> dict[str, Any]:
    """A pod of a template as an in-process writer sends it, after the chain's for_new_object."""
    meta: dict[str, Any] = {"name": name, "namespace": "team-a",
                            "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "web",
                                                 "uid": "9c3c2bde-5a52-4a41-8c0f-2b1a7d6f0a11",
                                                 "controller": True}]}
    if labels is not None:
        meta["labels"] = labels
    raw: dict[str, Any] = {"kind": "Pod", "metadata": meta}
    if status is not None:
        raw["status"] = status
    return for_new_object(raw, 1_700_000_000.0, random.Random(7))


def _with_spec(raw: Any) -> Any:
    """A deep copy of `raw` carrying the admitted spec itself."""
    out = copy.deepcopy(raw)
    if type(out) is dict:
        out["spec"] = SPEC
    return out


def _exact(value: Any) -> bytes:
    return msgpack.packb(value, strict_types=True)


def _same_as_the_walk(raw: Any, strict: bool) -> bool:
    """The shortcut's answer for `raw` (given the admitted spec) against the decode
    stage's; True when it was taken."""
    full = decode_stage("Pod", _with_spec(raw), None, strict, lambda _ns: True, [], SPEC)
    taken = admitted_rest(_with_spec(raw), None, strict, SPEC)
    if taken is None:
        return False
    assert full.errors == [], (raw, full.errors)
    assert _exact(taken) == _exact(full.raw), raw  # same values, types and key order
    assert taken["spec"] is SPEC
    return True


STATUSES: list[dict[str, Any] | None] = [None, {}, {"phase": "Pending"}, {"phase": "Lost"},
                                         {"nominatedNodeName": "node-1", "conditions": []}]


@pytest.mark.parametrize("strict", [True, False])
@pytest.mark.parametrize("status", STATUSES)
@pytest.mark.parametrize("labels", [None, {"app": "web"}, {"Bad Key": "x"}])
def test_whenever_the_shortcut_takes_a_pod_the_walk_finds_nothing_and_stores_the_same_bytes(
        strict: bool, status: dict[str, Any] | None, labels: dict[str, Any] | None) -> None:
    taken = refused = 0
    base = _pod(labels, status)
    for raw in [base, {**base, "apiVersion": "v1"}, *mutations(base, ("metadata", "status", "apiVersion", "kind"))]:
        if _same_as_the_walk(raw, strict):
            taken += 1
        else:
            refused += 1
    base_clean = not decode_stage("Pod", _with_spec(base), None, strict, lambda _ns: True, [], SPEC).errors
    assert refused > 100 and (taken > 0 or not base_clean)  # both ways were tried


def test_a_templates_pods_are_walked_once_per_shape_and_a_refused_part_is_left_to_the_walk() -> None:
    pod_metas.SHAPES.forget()
    before = pod_metas.SHAPES.proven_count
    assert _same_as_the_walk(_pod({"app": "web"}), True) and pod_metas.SHAPES.proven_count == before  # walked
    other = _with(_pod({"app": "web"}, name="web-1"), ("metadata", "uid"), "another-uid")
    assert _same_as_the_walk(other, True) and pod_metas.SHAPES.proven_count == before + 1  # remembered
    bad = _with(other, ("metadata", "ownerReferences", 0, "uid"), "")
    assert admitted_rest(_with_spec(bad), None, True, SPEC) is None
    assert decode_stage("Pod", _with_spec(bad), None, True, lambda _ns: True, [], SPEC).errors  # the walk's
    assert admitted_rest(_with_spec(bad), None, True, SPEC) is None  # a refusal is never remembered
    named = _with(other, ("metadata", "name"), "Bad_Name")
    assert admitted_rest(_with_spec(named), None, True, SPEC) is None  # the name: every time
    assert decode_stage("Pod", _with_spec(named), None, True, lambda _ns: True, [], SPEC).errors
    assert admitted_rest(_with_spec(named), None, False, SPEC) is not None  # no name formats: no name rule


def test_a_clients_create_another_spec_or_an_unknown_field_is_not_taken() -> None:
    assert admitted_rest(_with_spec(_pod()), "Strict", True, SPEC) is None
    assert admitted_rest({**_pod(), "spec": copy.deepcopy(SPEC)}, None, True, SPEC) is None  # not the spec itself
    assert admitted_rest({**_with_spec(_pod()), "colour": "blue"}, None, True, SPEC) is None


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(META_PLACES + [("..", "status"), ("..", "status", "phase"),
                                                         ("..", "apiVersion")]), VALUES), max_size=4),
       st.booleans())
def test_random_changes_to_a_templates_pod_are_taken_only_when_the_walk_takes_them(
        changes: list[tuple[Any, Any]], strict: bool) -> None:
    raw = _pod({"app": "web"}, {"phase": "Pending"})
    raw["metadata"]["annotations"] = {"team": "a"}
    for where, value in changes:
        path = where[1:] if isinstance(where, tuple) and where[0] == ".." else \
            ("metadata",) + (where if isinstance(where, tuple) else (where,))
        try:
            raw = _with(raw, path, value)
        except (KeyError, IndexError, TypeError):
            continue  # the place is gone (an earlier change replaced its parent)
    _same_as_the_walk(raw, strict)
