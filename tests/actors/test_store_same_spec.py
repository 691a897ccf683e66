"""A bulk create of pods from one template copies their common spec once
(framework.api.schema.SameSpec, the write chain's batch pass): each later pod with
the exact same spec takes the admitted copy of the last clean one, while its own
errors, unknown fields and stored object stay its own."""
from __future__ import annotations

from typing import Any

import pytest

from actors.store import Invalid
from framework.api.schema import SameSpec, admit

from tests.actors.store_helpers import pod, running


def manifest(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", **pod(name, **spec)}


async def test_pods_of_one_template_in_a_bulk_apply_share_one_admitted_spec_copy() -> None:
    async with running() as (store, c):
        await c.apply_with_actions([manifest(f"p{i}") for i in range(50)], field_validation="Strict")
        stored = [store.peek("Pod", "default", f"p{i}").raw for i in range(50)]
        reused = store._chain.same_spec.reused
    assert reused == 49
    # each pod's spec is its own dict (priority admission copies it); what it holds is one copy
    assert len({id(r["spec"]) for r in stored}) == 50
    assert len({id(r["spec"]["containers"]) for r in stored}) == 1
    assert [r["metadata"]["name"] for r in stored] == [f"p{i}" for i in range(50)]
    assert len({r["metadata"]["uid"] for r in stored}) == 50


async def test_a_pod_with_the_same_spec_but_a_bad_name_is_refused_for_its_name_alone() -> None:
    async with running() as (store, c):
        await c.apply_with_actions([manifest("good")], field_validation="Strict")
        with pytest.raises(Invalid) as err:
            await c.apply_with_actions([manifest("Bad_Name")], field_validation="Strict")
        await c.apply_with_actions([manifest("after")], field_validation="Strict")
        names = sorted(p.name for p in store.peek_all("Pod"))
        reused = store._chain.same_spec.reused
    assert err.value.field == "metadata.name"
    assert names == ["after", "good"]
    assert reused == 2  # the refused pod took good's spec too, and left it for the next


def test_a_spec_equal_only_in_python_is_copied_again_with_its_own_types() -> None:
    same = SameSpec()
    first = manifest("a", cpu="100m")
    first["spec"]["terminationGracePeriodSeconds"] = 30
    second = manifest("b", cpu="100m")
    second["spec"]["terminationGracePeriodSeconds"] = 30.0  # == 30 in Python, another JSON value
    a, b = admit(first, same=same), admit(second, same=same)
    assert same.reused == 0
    assert type(b.raw["spec"]["terminationGracePeriodSeconds"]) is float
    assert a.raw["spec"] is not b.raw["spec"]


def test_a_spec_with_an_unknown_field_is_never_handed_on_so_each_pod_hears_of_its_own() -> None:
    same = SameSpec()
    odd = [manifest(n) for n in ("a", "b")]
    for m in odd:
        m["spec"]["colour"] = "blue"
    first, second = (admit(m, unknown=True, same=same) for m in odd)
    assert first.unknown == second.unknown == ["spec.colour"]
    assert same.reused == 0
    assert "colour" not in first.raw["spec"] and "colour" not in second.raw["spec"]


def test_a_reused_spec_keeps_its_place_among_the_objects_keys() -> None:
    same = SameSpec()
    admit(manifest("a"), same=same)
    b = admit(manifest("b"), same=same)
    assert same.reused == 1
    assert list(b.raw) == list(manifest("b"))
