"""A pod's spec and an object's labels are checked once per distinct value: a clean
verdict is remembered by the value's exact encoding, per mode. What differs in type
only (1, 1.0 and True; a list and a tuple), what has errors, and unknown fields looked
for in a mode where they were not are never taken from memory."""
from __future__ import annotations

from typing import Any

import pytest

from framework.api.schema import admit, validate_object
from framework.api.schema.types import Ctx, ListOf, Remembered, Str


def pod(name: str = "p", labels: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"containers": [{"name": "c", "image": "pause",
                                            "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]}
    body.update(spec)
    meta: dict[str, Any] = {"name": name, "namespace": "default", "labels": labels or {"app": "web"}}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": body}


class Walks:
    """A rule that counts its walks, refusing the strings it is told to."""

    def __init__(self, refused: str = "") -> None:
        self.walks, self.refused = 0, refused

    def check(self, value: Any, path: str, ctx: Ctx) -> None:
        self.walks += 1
        Str(enum=("ok",) if self.refused else ()).check(value, path, ctx)


def test_a_clean_value_is_walked_once_per_mode() -> None:
    inner = Walks()
    rule = Remembered(inner)
    for ctx in (Ctx(), Ctx(), Ctx(strict=False), Ctx(strict=False), Ctx(unknown=[]), Ctx(unknown=[])):
        rule.check("x", "f", ctx)
        assert ctx.errors == []
    assert inner.walks == 3


def test_a_value_with_errors_is_walked_every_time_and_named_at_its_path() -> None:
    rule = Remembered(Walks(refused="x"))
    first, second = Ctx(), Ctx()
    rule.check("x", "a.f", first)
    rule.check("x", "b.f", second)
    assert [e.field for e in first.errors] == ["a.f"] and [e.field for e in second.errors] == ["b.f"]
    assert rule.rule.walks == 2


@pytest.mark.parametrize("clean, wrong, field", [
    (1, True, "spec.priority"),
    (1, 1.0, "spec.priority"),
])
def test_a_value_equal_in_python_but_of_another_type_is_walked_again(clean: Any, wrong: Any, field: str) -> None:
    assert validate_object(pod(priority=clean)) == []
    assert [e.field for e in validate_object(pod(priority=wrong))] == [field]


def test_a_tuple_where_a_list_was_remembered_is_still_refused() -> None:
    rule = Remembered(ListOf(Str()))
    clean, wrong = Ctx(), Ctx()
    rule.check(["a"], "f", clean)
    rule.check(("a",), "f", wrong)
    assert clean.errors == [] and [str(e) for e in wrong.errors] == ['f: Invalid value: ["a"]: must be of type array']


def test_unknown_fields_are_found_in_a_spec_remembered_clean_when_they_were_not_looked_for() -> None:
    odd = pod(colour="blue")
    assert admit(odd).errors == []  # no unknown fields looked for: clean
    checked = admit(odd, unknown=True)
    assert checked.unknown == ["spec.colour"] and "colour" not in checked.raw["spec"]


def test_pods_of_one_template_differ_in_name_and_share_the_spec_verdict() -> None:
    assert all(validate_object(pod(f"web-{i}")) == [] for i in range(3))
    bad_label = pod("web-9", labels={"app": "-web"})
    assert [e.field for e in validate_object(bad_label)] == ["metadata.labels"]
    bad_name = pod("Web_9")
    assert [e.field for e in validate_object(bad_name)] == ["metadata.name"]


def test_a_value_that_cannot_be_encoded_leaves_nothing_behind_for_the_next_key() -> None:
    """The encoding's Packer is reused: a refused value (a tuple inside) must not
    prefix the next value's key, or two different values could share one."""
    inner = Walks()
    rule = Remembered(inner)
    rule.check(["x", ("y",)], "f", Ctx())  # not plain JSON: walked, never remembered
    rule.check("x", "f", Ctx())
    rule.check("x", "f", Ctx())
    assert inner.walks == 2 and list(rule.clean)[0][3] == b"\xa1x"


def test_a_proven_value_passes_unwalked_and_only_by_identity() -> None:
    inner = Walks()
    rule = Remembered(inner)
    proven = {"a": "x"}
    rule.check(proven, "f", Ctx(proven=proven))
    rule.check({"a": "x"}, "f", Ctx(proven=proven))  # equal, not the same object: walked
    assert inner.walks == 1


def test_a_gangs_members_whose_specs_differ_in_their_group_share_their_containers_verdict() -> None:
    from framework.api.schema import pod as pod_schema

    containers = pod_schema.POD_SPEC.fields["containers"]
    assert isinstance(containers, Remembered)
    containers.clean.clear()
    for group in ("pg-1", "pg-2", "pg-3"):
        assert validate_object(pod(f"{group}-0", schedulingGroup={"podGroupName": group})) == []
    assert len(containers.clean) == 1  # three specs, one containers' verdict
    bad = pod("pg-4-0", schedulingGroup={"podGroupName": "pg-4"})
    bad["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "lots"
    again = pod("pg-5-0", schedulingGroup={"podGroupName": "pg-5"})
    again["spec"]["containers"] = bad["spec"]["containers"]
    assert [e.field for e in validate_object(bad)] == ["spec.containers[0].resources.requests[cpu]"]
    assert [e.field for e in validate_object(again)] == ["spec.containers[0].resources.requests[cpu]"]
    assert len(containers.clean) == 1  # a refused value is never remembered
