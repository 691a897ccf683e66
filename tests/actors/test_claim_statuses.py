"""A claim status in the allocator's plain shape judged by its parts
(actors/store/claim_statuses.py): whenever the shortcut takes a status, the claim
schema's full walk finds nothing wrong with it and the copy is the walk's copy; the
scheduler's own statuses take it; anything refused is left to the walk, whose paths and
messages the store then reports."""
from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import pytest

from actors.store import claim_statuses
from actors.store.claim_statuses import plain_status_copy
from actors.store.messages import Invalid
from framework.api.schema.dra_claim import claim_status_errors
from framework.api.schema.plain import plain_copy
from tests import dra_manifests as m
from tests.actors.store_helpers import running

SPEC = m.claim_spec(count=1)
SUBREQUEST_SPEC = {"devices": {"requests": [{"name": "gpu", "firstAvailable": [
    {"name": "big", "deviceClassName": "c"}, {"name": "small", "deviceClassName": "c"}]}]}}

BAD_STRINGS: list[Any] = ["", "Node_1", "-node", "a" * 64, "a" * 254, "gpu/x", "gpu/big", "gpu/big/x", "x.y",
                          "node-1/pool-2", "UPPER.example.com", "a..b", None, 3, ["x"], {"x": "y"}]


def _status(node: str = "node-1", pods: int = 1) -> dict[str, Any]:
    return {"allocation": m.allocation(node=node),
            "reservedFor": [{"resource": "pods", "name": f"p{i}", "uid": f"u{i}"} for i in range(pods)]}


def _leaves(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """The path of every value inside `value` (maps' keys and lists' indexes)."""
    yield path
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _leaves(v, path + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _leaves(v, path + (i,))


def _with(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    out = copy.deepcopy(value)
    if not path:
        return new
    at = out
    for step in path[:-1]:
        at = at[step]
    at[path[-1]] = new
    return out


def _without(value: Any, path: tuple[Any, ...]) -> Any:
    out = copy.deepcopy(value)
    at = out
    for step in path[:-1]:
        at = at[step]
    del at[path[-1]]
    return out


def _mutations(base: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """`base` with each of its values replaced by bad and odd ones, removed, or given a
    neighbour; lists doubled, emptied and grown past their bounds."""
    for path in list(_leaves(base)):
        for new in BAD_STRINGS:
            yield _with(base, path, new)
        if path:
            yield _without(base, path)
        here = base
        for step in path:
            here = here[step]
        if isinstance(here, dict):
            yield _with(base, path, {**here, "extra": "x"})
            yield _with(base, path, {**here, "allocationTimestamp": "2026-01-01T00:00:00Z"})
        if isinstance(here, list):
            yield _with(base, path, here + here)
            yield _with(base, path, [])
            yield _with(base, path, here * 300)


@pytest.mark.parametrize("strict", [True, False])
@pytest.mark.parametrize("spec", [SPEC, SUBREQUEST_SPEC, {}])
def test_whenever_the_shortcut_takes_a_status_the_full_walk_finds_nothing_and_copies_it_alike(
        strict: bool, spec: dict[str, Any]) -> None:
    bases = [_status(), _status(pods=2), {"allocation": m.allocation()},
             {"allocation": {"devices": m.allocation()["devices"]}, "reservedFor": []}]
    sub = m.allocation(request="gpu/small")
    bases.append({"allocation": sub, "reservedFor": _status()["reservedFor"]})
    taken = refused = 0
    for base in bases:
        for status in [base, *_mutations(base)]:
            copied = plain_status_copy(status, spec, strict)
            if copied is None:
                refused += 1
                continue
            taken += 1
            assert claim_status_errors(status, spec, strict) == [], status
            assert copied == plain_copy(status)[0] and list(copied) == list(status)
            assert json.dumps(copied) == json.dumps(plain_copy(status)[0])  # byte for byte: every map's key order
    assert taken > 0 and refused > 100  # both ways were tried


def test_the_allocators_plain_status_is_taken_and_a_refused_part_is_left_to_the_walk() -> None:
    assert plain_status_copy(_status(), SPEC, True) == _status()
    assert plain_status_copy(_status(node="Node_1"), SPEC, True) is None
    assert claim_status_errors(_status(node="Node_1"), SPEC, True) != []
    # the names' rules are strict only (the conformance driver's mode keeps upstream's test names)
    assert plain_status_copy(_status(node="Node_1"), SPEC, False) is not None


async def test_the_stores_status_write_of_a_plain_allocation_takes_the_shortcut_and_stores_the_same_claim() -> None:
    async with running() as (store, c):
        claim = await c.create(m.resource_claim())
        before = claim_statuses.proven_count
        written = await c.update_status({**claim, "status": _status()})
        assert claim_statuses.proven_count == before + 1
        assert written["status"] == _status()
        stored = store.peek("ResourceClaim", "default", "one-gpu")
        assert stored.allocated is not None and [uid for _, _, uid in stored.reserved_for] == ["u0"]
        moved = _with(_status(pods=2), ("allocation", "devices", "results", 0, "device"), "gpu-1")
        with pytest.raises(Invalid) as e:  # the allocation may not change: the update rules still run
            await c.update_status({**written, "status": moved})
        assert e.value.field == "status.allocation" and e.value.message.endswith("field is immutable")


async def test_a_refused_part_of_a_plain_status_is_reported_with_the_walks_path_and_message() -> None:
    async with running() as (store, c):
        claim = await c.create(m.resource_claim())
        rv = store.resource_version
        for status in (_status(node="Node_1"), _with(_status(), ("allocation", "devices", "results", 0, "pool"), "P")):
            walk = claim_status_errors(status, claim["spec"])
            with pytest.raises(Invalid) as e:
                await c.update_status({**claim, "status": status})
            assert e.value.field == walk[0].field and walk[0].detail in e.value.message
        assert store.resource_version == rv
