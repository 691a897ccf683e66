"""An in-process writer's update of a scheduling.k8s.io PodGroup judged by its shape
(actors/store/group_writes.py): whenever the shortcut takes an update, the write
chain's decode stage (the schema's full walk) finds nothing wrong with it and its copy
is the walk's, byte for byte; the group cycle's condition writes take it; anything
refused, a client's update, or any shape it does not know, is left to the walk; and the
write chain's whole update answers the same with and without it (stored bytes, errors)."""
from __future__ import annotations

import copy
import random
from typing import Any

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from actors.store import fields, group_writes, write_chain
from actors.store.fields import for_new_object
from actors.store.front_door import decode_stage
from actors.store.group_writes import admitted_group
from actors.store.messages import StoreError
from actors.store.write_chain import STRICT, WriteChain, WriteRules
from framework.api.groups import POD_GROUP_KEY, PREFERRED_TOPOLOGY_ANNOTATION
from framework.api.objects import parse_as
from framework.types import Code, Status
from framework.workload.group_status import scheduled_condition, with_condition
from tests.actors.test_claim_metas import META_PLACES, VALUES, mutations
from tests.actors.test_claim_statuses import _with

V1A2 = "scheduling.k8s.io/v1alpha2"
KEPT_FIELDS = WriteRules(server_fields=False)  # the uid and creationTimestamp given are kept


def _group(name: str = "pg-0", annotations: dict[str, Any] | None = None, rv: str = "17",
           ok: bool = True) -> dict[str, Any]:
    """A stored PodGroup as the group cycle sends it back with its PodGroupScheduled condition."""
    meta: dict[str, Any] = {"name": name, "namespace": "default"}
    if annotations is not None:
        meta["annotations"] = annotations
    raw = for_new_object({"apiVersion": V1A2, "kind": "PodGroup", "metadata": meta, "spec": {
        "podGroupTemplateRef": {"workload": {"workloadName": "bench", "podGroupTemplateName": "workers"}},
        "schedulingPolicy": {"gang": {"minCount": 8}}}}, 1_700_000_000.0, random.Random(7))
    raw["metadata"]["resourceVersion"] = rv
    raw["metadata"]["uid"] = f"0b5f1c7e-1d2a-4b7e-9a51-{abs(hash(name)) % 10 ** 12:012d}"  # the same each call
    status = Status() if ok else Status(Code.Unschedulable, "0/3 nodes are available")
    written = with_condition(raw, scheduled_condition(status), 1_700_000_001_500_000_000)
    assert written is not None
    return written


def _exact(value: Any) -> bytes:
    return msgpack.packb(value, strict_types=True)


def _same_as_the_walk(raw: Any, strict: bool) -> bool:
    """The shortcut's answer for `raw` against the decode stage's; True when it was taken
    (the walk then finds nothing, and its copy has the same values, types and key order)."""
    taken = admitted_group(copy.deepcopy(raw), None, strict)
    walked = decode_stage(POD_GROUP_KEY, copy.deepcopy(raw), None, strict, lambda _ns: True, [])
    assert taken is None or (walked.errors == [] and _exact(taken) == _exact(walked.raw)), (raw, walked.errors)
    return taken is not None


ANNOTATIONS: list[dict[str, Any] | None] = [None, {"team": "a"}, {PREFERRED_TOPOLOGY_ANNOTATION: "rack"},
                                            {PREFERRED_TOPOLOGY_ANNOTATION: "Bad Key"}]


@pytest.mark.parametrize("strict", [True, False])
@pytest.mark.parametrize("ok", [True, False])
@pytest.mark.parametrize("annotations", ANNOTATIONS)
def test_whenever_the_shortcut_takes_an_update_the_walk_finds_nothing_and_stores_the_same_bytes(
        strict: bool, ok: bool, annotations: dict[str, Any] | None) -> None:
    taken = refused = 0
    base = _group(annotations=annotations, ok=ok)
    for raw in [base, {**base, "apiVersion": "v1"}, _with(base, ("metadata", "resourceVersion"), ""),
                *mutations(base, ("metadata", "spec", "status", "apiVersion", "kind"))]:
        if _same_as_the_walk(raw, strict):
            taken += 1
        else:
            refused += 1
    base_clean = not decode_stage(POD_GROUP_KEY, base, None, strict, lambda _ns: True, []).errors
    assert refused > 100 and (taken > 0 or not base_clean)  # both ways were tried


def test_a_workloads_groups_are_walked_once_per_shape_and_a_refused_part_is_left_to_the_walk() -> None:
    group_writes.SHAPES.forget()
    before = group_writes.SHAPES.proven_count
    assert _same_as_the_walk(_group("pg-0"), True) and group_writes.SHAPES.proven_count == before  # walked
    other = _with(_group("pg-1", rv="40"), ("metadata", "uid"), "another-uid")
    assert _same_as_the_walk(other, True) and group_writes.SHAPES.proven_count == before + 1  # remembered
    bad = _with(other, ("status", "conditions", 0, "status"), "Maybe")
    assert admitted_group(bad, None, True) is None
    assert decode_stage(POD_GROUP_KEY, bad, None, True, lambda _ns: True, []).errors  # the walk's
    assert admitted_group(bad, None, True) is None  # a refusal is never remembered
    named = _with(other, ("metadata", "name"), "Bad_Name")
    assert admitted_group(named, None, True) is None  # the name: every time
    assert decode_stage(POD_GROUP_KEY, named, None, True, lambda _ns: True, []).errors
    assert admitted_group(named, None, False) is not None  # no name formats: no name rule


def test_a_clients_update_an_unknown_top_level_field_or_an_odd_resource_version_is_not_taken() -> None:
    assert admitted_group(_group(), "Strict", True) is None
    assert admitted_group(_group(), "Ignore", True) is None
    assert admitted_group({**_group(), "colour": "blue"}, None, True) is None
    assert admitted_group(_with(_group(), ("metadata", "resourceVersion"), 17), None, True) is None
    assert admitted_group({k: v for k, v in _group().items() if k != "apiVersion"}, None, True) is None


STATUS_PLACES: list[Any] = [("status",), ("status", "conditions"), ("status", "conditions", 0),
                            ("status", "conditions", 0, "type"), ("status", "conditions", 0, "status"),
                            ("status", "conditions", 0, "lastTransitionTime"),
                            ("status", "conditions", 0, "observedGeneration"), ("status", "resourceClaimStatuses"),
                            ("spec", "schedulingPolicy", "gang", "minCount"), ("spec", "priority")]


def _changed(raw: dict[str, Any], changes: list[tuple[Any, Any]]) -> dict[str, Any]:
    """`raw` with each (place, value) set: a status or spec path as it is, else below the
    metadata; a place an earlier change took away is skipped."""
    for where, value in changes:
        path = where if isinstance(where, tuple) and where[0] in ("status", "spec") else \
            ("metadata",) + (where if isinstance(where, tuple) else (where,))
        try:
            raw = _with(raw, path, value)
        except (KeyError, IndexError, TypeError):
            continue
    return raw


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(META_PLACES + STATUS_PLACES), VALUES), max_size=4), st.booleans())
def test_random_changes_to_a_groups_update_are_taken_only_when_the_walk_takes_them(
        changes: list[tuple[Any, Any]], strict: bool) -> None:
    raw = _group(annotations={"team": "a"})
    raw = _changed(raw, changes)
    _same_as_the_walk(raw, strict)


# --- the write chain's whole update, with and without the shortcut -------------------------------

def _through_chain(raw: dict[str, Any], current: dict[str, Any] | None, shortcut: bool,
                   monkeypatch: pytest.MonkeyPatch) -> tuple[str, Any]:
    """The write chain's update of the stored `current` by `raw` (None: its create of
    `raw`, the uid and creationTimestamp given kept): ("ok", exact bytes) or (error type,
    (message, field))."""
    chain = WriteChain({"Namespace": {}, "PriorityClass": {}, "PodGroup": {}}, lambda: 1_700_000_002.0,
                       random.Random(3), STRICT if current is not None else KEPT_FIELDS)
    with monkeypatch.context() as m:
        m.setattr(fields, "new_uid", lambda: "1c0ffee0-0000-4000-8000-000000000001")  # a uid left out: the same
        if not shortcut:
            m.setattr(write_chain, "admitted_group", lambda *_a: None)
        try:
            new = chain.create(copy.deepcopy(raw), None) if current is None else \
                chain.update(copy.deepcopy(raw), parse_as(POD_GROUP_KEY, copy.deepcopy(current)), None)
        except StoreError as e:
            return type(e).__name__, (str(e), getattr(e, "field", None))
    return "ok", _exact(new.raw)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(STATUS_PLACES + ["name", "uid", "resourceVersion"]), VALUES),
                max_size=3))
def test_a_groups_status_update_is_stored_or_refused_the_same_with_and_without_the_shortcut(
        changes: list[tuple[Any, Any]]) -> None:
    current = {k: v for k, v in _group().items() if k != "status"}
    raw = _group()
    raw = _changed(raw, changes)
    with pytest.MonkeyPatch.context() as mp:
        assert _through_chain(raw, current, True, mp) == _through_chain(raw, current, False, mp)


def test_the_group_cycles_condition_writes_are_remembered_through_the_write_chain(
        monkeypatch: pytest.MonkeyPatch) -> None:
    group_writes.SHAPES.forget()
    before = group_writes.SHAPES.proven_count
    for i in range(3):
        current = {k: v for k, v in _group(f"pg-{i}").items() if k != "status"}
        assert _through_chain(_group(f"pg-{i}"), current, True, monkeypatch)[0] == "ok"
    assert group_writes.SHAPES.proven_count == before + 2  # the first walked, the next two remembered


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(META_PLACES + STATUS_PLACES), VALUES), max_size=3))
def test_a_created_group_is_stored_or_refused_the_same_with_and_without_the_shortcut(
        changes: list[tuple[Any, Any]]) -> None:
    raw = {k: v for k, v in _group().items() if k != "status"}
    del raw["metadata"]["resourceVersion"]
    raw = _changed(raw, changes)
    with pytest.MonkeyPatch.context() as mp:
        assert _through_chain(raw, None, True, mp) == _through_chain(raw, None, False, mp)


def test_a_workloads_created_groups_are_remembered_through_the_write_chain(monkeypatch: pytest.MonkeyPatch) -> None:
    group_writes.SHAPES.forget()
    before = group_writes.SHAPES.proven_count
    for i in range(3):
        raw = {k: v for k, v in _group(f"pg-{i}").items() if k != "status"}
        del raw["metadata"]["resourceVersion"]
        assert _through_chain(raw, None, True, monkeypatch)[0] == "ok"
    assert group_writes.SHAPES.proven_count == before + 2  # the first walked, the next two remembered
