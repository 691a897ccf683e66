"""cel-go's static cost estimate of device selectors (framework/dra/cel_cost.py), worked by
hand from cel-go's checker rules and the sizes upstream gives the `device` variable, and
the refusal of a selector whose estimate exceeds Kubernetes' limit, per DRA kind."""
from __future__ import annotations

from typing import Any

import pytest

from framework.api.schema import validate_object
from framework.dra.cel_selector import compile_selector
from tests import dra_manifests as m


def cost(expression: str) -> int:
    return compile_selector(expression).estimated_cost


@pytest.mark.parametrize(("expression", "expected"), [
    ("true", 0),                                        # constants cost nothing
    ("device.driver == 'gpu.example.com'", 4),          # 2 selections + ceil(min(63, 15) / 10)
    ('device.attributes["a.example.com"].x == "abcdefghijk"', 6),  # index and select + ceil(11 / 10)
    ('"a.example.com" in device.capacity', 3),          # map membership is one unit
    # list 10 + result accu 1 + 3 * (cond not_strictly_false(!accu) 3 + step accu || x > 2 3)
    ("[1, 2, 3].exists(x, x > 2)", 10 + 1 + 3 * (3 + 3)),
    # range 2 + result 1 + 32 attribute domains * (cond 2 + step accu && d == "x" 3)
    ('device.attributes.all(d, d == "x")', 2 + 1 + 32 * (2 + 3)),
    ('device.attributes["a.example.com"].s.matches("abcd")', 4 + 7 * 1),  # 64-char string, 4-char regex
    ('device.attributes["a.example.com"].s.split(",").size() > 1', 4 + 13 + 1 + 1),
    ('cel.bind(v, device.driver, v == "x")', 10 + 2 + 1 + 1),
    ('{"a": device.driver}["a"] == "x"', 30 + 2 + 1 + 1),   # map literal 30 + its entries + index + ==
    ('device.driver < "abcdefghijklmnopqrstu"', 2 + 3),      # string ordering: ceil(min(63, 21) / 10)
    ('device.driver.contains("abcdefghijk")', 2 + 7 * 2),    # ceil(63 / 10) * ceil(11 / 10)
    ('device.driver.startsWith("abcdefghijk")', 2 + 2),      # the prefix's length / 10
])
def test_the_estimate_is_cel_gos_sum_of_node_costs_with_upstreams_device_sizes(expression: str, expected: int) -> None:
    assert cost(expression) == expected


def test_nested_comprehensions_multiply_by_the_range_size() -> None:
    # all(): range 10 + init 0 + result 1 + 10 * (not_strictly_false(accu) 2 + accu && body (1 + body))
    assert cost(m.nested_all(1)) == 10 + 1 + 10 * (2 + 1 + 2)
    assert cost(m.nested_all(2)) == 10 + 1 + 10 * (2 + 1 + cost(m.nested_all(1)))


def with_selector(raw: dict[str, Any], expression: str) -> dict[str, Any]:
    spec = raw["spec"]["spec"] if raw["kind"] == "ResourceClaimTemplate" else raw["spec"]
    spec["devices"]["requests"][0]["exactly"]["selectors"] = [{"cel": {"expression": expression}}]
    return raw


KINDS = [
    ("DeviceClass", lambda e: m.device_class(expression=e), "spec.selectors[0].cel.expression"),
    ("ResourceClaim", lambda e: with_selector(m.resource_claim(), e),
     "spec.devices.requests[0].exactly.selectors[0].cel.expression"),
    ("ResourceClaimTemplate", lambda e: with_selector(m.claim_template(), e),
     "spec.spec.devices.requests[0].exactly.selectors[0].cel.expression"),
]


@pytest.mark.parametrize(("kind", "make", "path"), KINDS, ids=[k[0] for k in KINDS])
def test_a_selector_estimated_over_the_cost_limit_is_forbidden(kind: str, make: Any, path: str) -> None:
    assert cost(m.nested_all(6)) > 1_000_000
    assert [str(e) for e in validate_object(make(m.nested_all(6)))] == [
        f"{path}: Forbidden: too complex, exceeds cost limit"]


@pytest.mark.parametrize(("kind", "make", "path"), KINDS, ids=[k[0] for k in KINDS])
def test_a_selector_estimated_under_the_cost_limit_is_accepted(kind: str, make: Any, path: str) -> None:
    assert cost(m.nested_all(5)) < 1_000_000
    assert [str(e) for e in validate_object(make(m.nested_all(5)))] == []
