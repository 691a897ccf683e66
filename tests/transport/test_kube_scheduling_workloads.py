"""scheduling.k8s.io/v1alpha2 Workload and PodGroup over the REST API: discovered
beside PriorityClass, served with their bare kind, apart from Kueue's Workload and
Coscheduling's PodGroup of the same names, with the PodGroup's status subresource
and field-named refusals."""
from __future__ import annotations

from tests.transport.test_kube_api import TABLE, _watch_lines, api  # noqa: F401 - the fixture: a store behind the HTTP port
from tests.transport.test_kube_kueue import _workload as kueue_workload

S = "/apis/scheduling.k8s.io/v1alpha2"
WL = f"{S}/namespaces/demo/workloads"
PG = f"{S}/namespaces/demo/podgroups"


def workload(name: str = "training") -> dict:
    return {"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "Workload", "metadata": {"name": name},
            "spec": {"podGroupTemplates": [{"name": "workers", "schedulingPolicy": {"gang": {"minCount": 4}},
                                            "schedulingConstraints": {"topology": [{"key": "example.com/rack"}]}}]}}


def pod_group(name: str = "training", min_count: int = 4) -> dict:
    return {"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup", "metadata": {"name": name},
            "spec": {"podGroupTemplateRef": {"workload": {"workloadName": "training", "podGroupTemplateName": "workers"}},
                     "schedulingPolicy": {"gang": {"minCount": min_count}}}}


async def test_discovery_serves_workloads_and_podgroups_in_scheduling_k8s_io_v1alpha2(api):  # noqa: F811
    status, groups = await api.call("GET", "/apis")
    sched = next(g for g in groups["groups"] if g["name"] == "scheduling.k8s.io")
    assert [v["version"] for v in sched["versions"]] == ["v1", "v1alpha2"]
    _, gv = await api.call("GET", S)
    by_name = {r["name"]: r for r in gv["resources"]}
    assert by_name["workloads"]["kind"] == "Workload" and by_name["workloads"]["namespaced"]
    assert by_name["podgroups"]["kind"] == "PodGroup" and "podgroups/status" in by_name
    assert by_name["workloads"]["singularName"] == "workload" and not by_name["podgroups"].get("shortNames")


async def test_crud_keeps_them_apart_from_kueues_workload_and_coschedulings_podgroup(api):  # noqa: F811
    assert (await api.call("POST", WL, workload()))[0] == 201
    assert (await api.call("POST", PG, pod_group()))[0] == 201
    assert (await api.call("POST", "/apis/kueue.x-k8s.io/v1beta2/namespaces/demo/workloads",
                           kueue_workload("training", "lq")))[0] == 201
    assert (await api.call("POST", "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/demo/podgroups",
                           {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
                            "metadata": {"name": "training"}, "spec": {"minMember": 2}}))[0] == 201
    _, got = await api.call("GET", f"{WL}/training")
    assert got["kind"] == "Workload" and got["apiVersion"] == "scheduling.k8s.io/v1alpha2"
    _, listed = await api.call("GET", PG)
    assert listed["kind"] == "PodGroupList" and [i["spec"]["schedulingPolicy"] for i in listed["items"]] == [
        {"gang": {"minCount": 4}}]
    _, coscheduling = await api.call("GET", "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/demo/podgroups")
    assert [i["spec"]["minMember"] for i in coscheduling["items"]] == [2]
    assert (await api.call("DELETE", f"{WL}/training"))[0] == 200
    assert (await api.call("GET", "/apis/kueue.x-k8s.io/v1beta2/namespaces/demo/workloads/training"))[0] == 200
    assert (await api.call("GET", f"{WL}/training"))[0] == 404


async def test_the_status_subresource_writes_the_podgroupscheduled_condition_and_the_table_has_name_and_age(api):  # noqa: F811
    _, made = await api.call("POST", PG, pod_group())
    cond = {"type": "PodGroupScheduled", "status": "False", "reason": "Unschedulable",
            "message": "0/3 nodes are available", "lastTransitionTime": "2026-01-01T00:00:00Z"}
    status, body = await api.call("PUT", f"{PG}/training/status", {**made, "status": {"conditions": [cond]}})
    assert status == 200, body
    _, got = await api.call("GET", f"{PG}/training")
    assert got["status"]["conditions"][0]["reason"] == "Unschedulable"
    _, t = await api.call("GET", PG, accept=TABLE)
    assert [c["name"] for c in t["columnDefinitions"]] == ["Name", "Age"] and t["rows"][0]["cells"][0] == "training"


async def test_a_refused_podgroup_names_the_field_and_a_body_of_another_group_is_a_bad_request(api):  # noqa: F811
    status, body = await api.call("POST", PG, pod_group(min_count=0))
    assert status == 422 and body["details"]["kind"] == "PodGroup" and body["details"]["group"] == "scheduling.k8s.io"
    assert body["details"]["causes"][0]["field"] == "spec.schedulingPolicy.gang.minCount"
    status, body = await api.call("POST", WL, {**kueue_workload("x", "lq")})
    assert status == 400 and "does not match the expected API version" in body["message"]
    _, made = await api.call("POST", PG, pod_group())
    status, body = await api.call("PUT", f"{PG}/training", {**made, "spec": {**made["spec"], "schedulingPolicy": {
        "basic": {}}}})
    assert status == 422 and "field is immutable" in body["message"]
