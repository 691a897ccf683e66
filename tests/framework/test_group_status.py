"""PodGroupScheduled as upstream's submitPodGroupAlgorithmResult and
updatePodGroupCondition set it (framework/workload/group_status.py)."""
from __future__ import annotations

from framework.interface import Code, Status
from framework.workload.group_status import scheduled_condition, with_condition

T0 = 1_767_225_600 * 1_000_000_000
PG = {"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup",
      "metadata": {"name": "g", "namespace": "default", "generation": 2}, "spec": {}}


def test_each_outcome_gets_upstreams_status_and_reason() -> None:
    assert scheduled_condition(Status()) == {"type": "PodGroupScheduled", "status": "True", "reason": "Scheduled",
                                             "message": ""}
    assert scheduled_condition(Status(Code.Unschedulable, "minCount (3) cannot be satisfied: 1 scheduled, 0 remaining")) \
        == {"type": "PodGroupScheduled", "status": "False", "reason": "Unschedulable",
            "message": "minCount (3) cannot be satisfied: 1 scheduled, 0 remaining"}
    assert scheduled_condition(Status(Code.Error, "boom"))["reason"] == "SchedulerError"


def test_the_condition_carries_the_generation_and_keeps_its_transition_time_while_the_status_holds() -> None:
    first = with_condition(PG, scheduled_condition(Status(Code.Unschedulable, "a")), T0)
    assert first is not None
    [c] = first["status"]["conditions"]
    assert c["observedGeneration"] == 2 and c["lastTransitionTime"] == "2026-01-01T00:00:00Z"
    again = with_condition(first, scheduled_condition(Status(Code.Unschedulable, "b")), T0 + 5_000_000_000)
    assert again is not None and again["status"]["conditions"][0]["lastTransitionTime"] == "2026-01-01T00:00:00Z"
    assert with_condition(again, scheduled_condition(Status(Code.Unschedulable, "b")), T0 + 9_000_000_000) is None


def test_a_scheduled_group_is_never_set_back_to_unschedulable() -> None:
    done = with_condition(PG, scheduled_condition(Status()), T0)
    assert done is not None and done["status"]["conditions"][0]["status"] == "True"
    assert with_condition(done, scheduled_condition(Status(Code.Unschedulable, "extra pods")), T0 + 1) is None
