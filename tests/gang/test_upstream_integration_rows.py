"""The rows of upstream's TestCoschedulingPlugin (test/integration/coscheduling_test.go)
that the shared case file does not carry, run through the scenario driver like
the shared ones: one 300-byte node, Coscheduling at queueSort/preFilter/
postFilter/permit, permitWaitingTimeSeconds 3, podGroupRejectPercentage 0,
every PodGroup with scheduleTimeoutSeconds 10. Only the listed pods' bindings
are asserted, as upstream polls only for them. Row t8's minResources follow row t9
(150 for the group that fits, 400 for the others)."""
from __future__ import annotations

from typing import Any

import pytest

from conformance.runner import run_case
from conformance.compare import mismatches

MID, HIGH = 100, 1000
PROFILE = {"plugins": {"queueSort": {"enabled": [{"name": "Coscheduling"}], "disabled": [{"name": "*"}]},
                       **{pt: {"enabled": [{"name": "Coscheduling"}]} for pt in ("preFilter", "postFilter", "permit")}},
           "pluginConfig": [{"name": "Coscheduling", "args": {"permitWaitingTimeSeconds": 3, "podGroupBackoffSeconds": 0,
                                                              "podGroupRejectPercentage": 0}}]}
NODE = {"metadata": {"name": "fake-node", "labels": {"node": "fake-node"}},
        "status": {"capacity": {"pods": "32", "memory": "300"}, "allocatable": {"pods": "32", "memory": "300"}}}


def p(name: str, mem: int, prio: int, group: str = "") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if group:
        meta["labels"] = {"scheduling.x-k8s.io/pod-group": group}
    return {"metadata": meta, "spec": {"containers": [{"name": "con0", "image": "registry.k8s.io/pause",
                                                       "resources": {"requests": {"memory": str(mem)}}}],
                                       "priority": prio, "terminationGracePeriodSeconds": 0}}


def pg(name: str, min_member: int, min_memory: int | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"minMember": min_member, "scheduleTimeoutSeconds": 10}
    if min_memory is not None:
        spec["minResources"] = {"memory": str(min_memory)}
    return {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup", "metadata": {"name": name}, "spec": spec}


def interleaved(prefix: str, groups: list[tuple[str, int, int]]) -> list[dict[str, Any]]:
    """Members created round-robin across groups: (group, members, memory)."""
    out = []
    for i in range(max(n for _, n, _ in groups)):
        for gi, (g, n, mem) in enumerate(groups, start=1):
            if i < n:
                out.append(p(f"{prefix}-p{gi}-{i + 1}", mem, MID, g))
    return out


ROWS = {
    "equal priority, sequentially pg1 meet min and pg2 not meet min": (
        [p(f"t1-p1-{i}", 50, MID, "pg1-1") for i in (1, 2, 3)] + [p(f"t1-p2-{i}", 100, MID, "pg1-2") for i in (1, 2, 3, 4)],
        [pg("pg1-1", 3), pg("pg1-2", 4)], ["t1-p1-1", "t1-p1-2", "t1-p1-3"]),
    "equal priority, not sequentially pg1 not meet min and 3 regular pods": (
        [p("t3-p1-1", 50, MID, "pg3-1"), p("t3-p2", 100, MID), p("t3-p1-2", 50, MID, "pg3-1"), p("t3-p3", 100, MID),
         p("t3-p1-3", 50, MID, "pg3-1")],
        [pg("pg3-1", 4)], ["t3-p2", "t3-p3"]),
    "different priority, sequentially pg1 meet min and pg2 meet min": (
        [p(f"t4-p1-{i}", 100, MID, "pg4-1") for i in (1, 2, 3)] + [p(f"t4-p2-{i}", 50, HIGH, "pg4-2") for i in (1, 2, 3)],
        [pg("pg4-1", 3), pg("pg4-2", 3)], ["t4-p2-1", "t4-p2-2", "t4-p2-3"]),
    "different priority, not sequentially pg1 meet min and pg2 meet min": (
        [x for i in (1, 2, 3) for x in (p(f"t5-p1-{i}", 100, MID, "pg5-1"), p(f"t5-p2-{i}", 50, HIGH, "pg5-2"))],
        [pg("pg5-1", 3), pg("pg5-2", 3)], ["t5-p2-1", "t5-p2-2", "t5-p2-3"]),
    "equal priority, not sequentially pg1 meet min and p2 p3 not meet min": (
        interleaved("t7", [("pg7-1", 3, 50), ("pg7-2", 4, 100), ("pg7-3", 4, 100)]),
        [pg("pg7-1", 3), pg("pg7-2", 4), pg("pg7-3", 4)], ["t7-p1-1", "t7-p1-2", "t7-p1-3"]),
    "equal priority, not sequentially pg1 meet min and p2 p3 not meet min, pgs have min resources": (
        interleaved("t8", [("pg8-1", 3, 50), ("pg8-2", 4, 100), ("pg8-3", 4, 100)]),
        [pg("pg8-1", 3, 150), pg("pg8-2", 4, 400), pg("pg8-3", 4, 400)], ["t8-p1-1", "t8-p1-2", "t8-p1-3"]),
}


@pytest.mark.parametrize("row", list(ROWS), ids=list(ROWS))
def test_upstream_integration_row_binds_the_expected_pods(row: str) -> None:
    schedule, groups, expected = ROWS[row]
    case = {"name": row, "profile": PROFILE, "nodes": [NODE], "podGroups": groups, "schedule": schedule,
            "expect": {"bindings": {f"default/{name}": "fake-node" for name in expected}}}
    assert mismatches(case["expect"], run_case(case)) == []
