"""The rest of a claim made from a template (its metadata) judged by its parts
(actors/store/claim_metas.py): whenever the shortcut takes a claim, the write chain's
decode stage (the schema's full walk) finds nothing wrong with it and its copy is the
walk's, byte for byte; the controller's own claims take it; anything refused, or any
shape it does not know, is left to the walk."""
from __future__ import annotations

import copy
import random
from collections.abc import Iterator
from typing import Any

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from actors.store import claim_metas
from actors.store.claim_metas import admitted_rest
from actors.store.fields import for_new_object
from actors.store.front_door import decode_stage
from tests.actors.test_claim_statuses import _leaves, _with, _without

BAD: list[Any] = ["", "Bad_Name", "-x", "a" * 64, "a" * 254, "x..y", "UPPER", "a/b/c", "example.com/" + "k" * 64,
                  "not-a-time", None, 0, 1, True, 2 ** 70, 1.5, ["x"], {"x": "y"}, {"x": 1}, [{"x": None}]]


def _claim(labels: dict[str, Any] | None = None) -> dict[str, Any]:
    """A claim as the resourceclaim controller sends it (claim_from_template's shape,
    the spec taken out) after the chain's for_new_object."""
    meta: dict[str, Any] = {
        "generateName": "trainer-0-gpu-", "namespace": "team-a",
        "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "trainer-0",
                             "uid": "9c3c2bde-5a52-4a41-8c0f-2b1a7d6f0a11", "controller": True,
                             "blockOwnerDeletion": True}],
        "annotations": {"resource.kubernetes.io/pod-claim-name": "gpu", "team": "a"}}
    if labels is not None:
        meta["labels"] = labels
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": for_new_object({"metadata": meta}, 1_700_000_000.0, random.Random(7))["metadata"]}


def _exact(value: Any) -> bytes:
    return msgpack.packb(value, strict_types=True)


def _same_as_the_walk(raw: Any, strict: bool) -> bool:
    """The shortcut's answer for `raw` against the decode stage's; True when it was taken."""
    full = decode_stage("ResourceClaim", copy.deepcopy(raw), None, strict, lambda _ns: True, [])
    taken = admitted_rest(copy.deepcopy(raw), None, strict)
    if taken is None:
        return False
    assert full.errors == [], (raw, full.errors)
    assert _exact(taken) == _exact(full.raw), raw  # same values, types and key order
    return True


def mutations(base: dict[str, Any], tops: tuple[str, ...] = ("metadata",)) -> Iterator[dict[str, Any]]:
    """`base` with each value under its `tops` replaced by bad and odd ones, removed, or
    given a neighbour; lists emptied and doubled."""
    for path in [p for top in tops if top in base for p in _leaves(base[top], (top,))]:
        for new in BAD:
            yield _with(base, path, new)
        if len(path) > 1:
            yield _without(base, path)
        here = base
        for step in path:
            here = here[step]
        if isinstance(here, dict):
            for extra in ("extra", "finalizers", "selfLink", "resourceVersion", "deletionTimestamp"):
                yield _with(base, path, {**here, extra: "x"})
        if isinstance(here, list):
            yield _with(base, path, here + here)
            yield _with(base, path, [])


@pytest.mark.parametrize("strict", [True, False])
@pytest.mark.parametrize("labels", [None, {"app": "trainer"}, {"Bad Key": "x"}, {"app": "-bad-"}])
def test_whenever_the_shortcut_takes_a_claim_the_walk_finds_nothing_and_stores_the_same_bytes(
        strict: bool, labels: dict[str, Any] | None) -> None:
    taken = refused = 0
    base = _claim(labels)
    for raw in [base, *mutations(base)]:
        if _same_as_the_walk(raw, strict):
            taken += 1
        else:
            refused += 1
    assert taken > 0 and refused > 100  # both ways were tried


def test_the_controllers_claims_are_walked_once_per_shape_and_a_refused_part_is_left_to_the_walk() -> None:
    claim_metas.SHAPES.forget()
    before = claim_metas.SHAPES.proven_count
    assert _same_as_the_walk(_claim(), True) and claim_metas.SHAPES.proven_count == before  # the first: walked
    other = _with(_with(_claim(), ("metadata", "name"), "trainer-1-gpu-abcde"),
                  ("metadata", "ownerReferences", 0, "uid"), "another-uid")
    assert _same_as_the_walk(other, True) and claim_metas.SHAPES.proven_count == before + 1  # remembered
    bad = _with(_claim(), ("metadata", "ownerReferences", 0, "uid"), "")
    assert admitted_rest(bad, None, True) is None
    assert decode_stage("ResourceClaim", bad, None, True, lambda _ns: True, []).errors  # the walk reports it
    assert admitted_rest(bad, None, True) is None  # a refusal is never remembered: walked again
    assert admitted_rest(_with(other, ("metadata", "name"), "Bad_Name"), None, True) is None  # the name: every time


def test_a_clients_create_with_a_field_validation_mode_or_a_spec_is_not_taken() -> None:
    assert admitted_rest(_claim(), "Strict", True) is None
    assert admitted_rest({**_claim(), "spec": {}}, None, True) is None
    assert admitted_rest({**_claim(), "status": {}}, None, True) is None


def test_annotations_past_their_total_size_are_refused_by_the_walk() -> None:
    big = _with(_claim(), ("metadata", "annotations", "team"), "x" * (256 * 1024))
    assert admitted_rest(big, None, True) is None
    assert decode_stage("ResourceClaim", big, None, True, lambda _ns: True, []).errors


VALUES = st.one_of(st.sampled_from(BAD), st.text(max_size=8), st.booleans(), st.integers(-2, 3))
# places in the metadata a random change lands (a tuple: a path below it)
META_PLACES: list[Any] = ["name", "generateName", "namespace", "uid", "generation", "creationTimestamp", "labels",
                          "annotations", "ownerReferences", ("ownerReferences", 0, "name"),
                          ("ownerReferences", 0, "uid"), ("ownerReferences", 0, "kind"),
                          ("ownerReferences", 0, "controller"), ("annotations", "team"), ("labels", "app")]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(META_PLACES), VALUES), max_size=4), st.booleans())
def test_random_changes_to_the_controllers_claim_are_taken_only_when_the_walk_takes_them(
        changes: list[tuple[Any, Any]], strict: bool) -> None:
    raw = _claim({"app": "trainer"})
    for where, value in changes:
        path = ("metadata",) + (where if isinstance(where, tuple) else (where,))
        try:
            raw = _with(raw, path, value)
        except (KeyError, IndexError, TypeError):
            continue  # the place is gone (an earlier change replaced its parent)
    _same_as_the_walk(raw, strict)
