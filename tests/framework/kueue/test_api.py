"""Kueue objects: defaults as Kueue sets them, errors that name the field."""
import pytest

from framework.api.errors import ValidationError
from framework.kueue.api import parse_cluster_queue, parse_cohort, parse_local_queue, parse_workload_priority_class
from framework.kueue.workload import parse_workload


def _cq(spec):
    return parse_cluster_queue({"metadata": {"name": "a"}, "spec": spec})


def _rg(**res):
    return [{"coveredResources": ["cpu"], "flavors": [{"name": "f", "resources": [dict(name="cpu", **res)]}]}]


def test_cluster_queue_defaults_are_kueues():
    c = _cq({"resourceGroups": _rg(nominalQuota="4")})
    assert c.queueing_strategy == "BestEffortFIFO"
    assert (c.preemption.within_cluster_queue, c.preemption.reclaim_within_cohort,
            c.preemption.borrow_within_cohort) == ("Never", "Never", "Never")
    assert (c.fungibility.when_can_borrow, c.fungibility.when_can_preempt) == ("MayStopSearch", "TryNextFlavor")
    assert c.weight == 1.0 and c.stop_policy == "None" and c.cohort == ""
    assert c.resource_groups[0].flavors[0].resources[0].nominal == 4000  # cpu in millicores


@pytest.mark.parametrize("spec, field", [
    ({"resourceGroups": _rg(nominalQuota="4", borrowingLimit="1")}, "spec.resourceGroups[0].flavors[0].resources[0].borrowingLimit"),
    ({"cohortName": "c", "resourceGroups": _rg(nominalQuota="4", lendingLimit="5")}, "spec.resourceGroups[0].flavors[0].resources[0].lendingLimit"),
    ({"resourceGroups": _rg()}, "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota"),
    ({"resourceGroups": _rg(nominalQuota="x")}, "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota"),
    ({"queueingStrategy": "LIFO"}, "spec.queueingStrategy"),
    ({"preemption": {"withinClusterQueue": "Any"}}, "spec.preemption.withinClusterQueue"),
    ({"preemption": {"borrowWithinCohort": {"policy": "LowerPriority"}}}, "spec.preemption"),
    ({"flavorFungibility": {"preference": "PreemptionOverBorrowing"}}, "spec.flavorFungibility.preference"),
    ({"fairSharing": {"weight": "-1"}}, "spec.fairSharing.weight"),
    ({"resourceGroups": [{"coveredResources": ["cpu", "memory"], "flavors": [
        {"name": "f", "resources": [{"name": "cpu", "nominalQuota": "1"}]}]}]}, "spec.resourceGroups[0].flavors[0].resources"),
])
def test_invalid_cluster_queue_names_the_field(spec, field):
    with pytest.raises(ValidationError) as e:
        _cq(spec)
    assert e.value.field == field


def test_other_kinds_validate_with_field_names():
    with pytest.raises(ValidationError, match="spec.clusterQueue"):
        parse_local_queue({"metadata": {"name": "q", "namespace": "ns"}, "spec": {}})
    with pytest.raises(ValidationError, match="^value"):
        parse_workload_priority_class({"metadata": {"name": "p"}, "value": "high"})
    with pytest.raises(ValidationError, match="spec.resourceGroups"):
        parse_cohort({"metadata": {"name": "c"}, "spec": {"resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
            {"name": "f", "resources": [{"name": "cpu", "nominalQuota": "1", "borrowingLimit": "1"}]}]}]}})
    with pytest.raises(ValidationError) as e:
        parse_workload({"metadata": {"name": "w"}, "spec": {"podSets": [{"name": "a", "count": -1}]}})
    assert e.value.field == "spec.podSets[0].count"


def test_workload_defaults_and_requests():
    w = parse_workload({"metadata": {"name": "w", "namespace": "ns"}, "spec": {"podSets": [
        {"template": {"spec": {"containers": [{"resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}},
                                              {"resources": {"requests": {"cpu": "1"}}}]}}}]}})
    ps = w.pod_sets[0]
    assert (ps.name, ps.count, w.priority, w.active) == ("main", 1, 0, True)
    assert ps.requests == {"cpu": 1500, "memory": 2**30}
    assert w.key == "ns/w"
