"""Kueue's kinds over the REST API: discovery under kueue.x-k8s.io/v1beta2 with
Kueue's short names, and Tables with the columns of Kueue's CRDs
(additionalPrinterColumns), counts as Kueue's status fields count them."""
from __future__ import annotations

from tests.actors.admission.kueue_objects import V, cluster_queue, flavor, local_queue
from tests.transport.test_kube_api import TABLE, _watch_lines, api  # noqa: F401 - the fixture: a store behind the HTTP port

G = "/apis/kueue.x-k8s.io/v1beta2"


def _workload(name: str, queue: str) -> dict:
    return {"apiVersion": V, "kind": "Workload", "metadata": {"name": name, "namespace": "demo"},
            "spec": {"queueName": queue, "podSets": [{"name": "main", "count": 1, "template": {"spec": {
                "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}]}}}]}}


def _rows(t: dict) -> tuple[list[tuple[str, int]], list[dict]]:
    cols = [(c["name"], c["priority"]) for c in t["columnDefinitions"]]
    return cols, [dict(zip([c for c, _ in cols], r["cells"])) for r in t["rows"]]


async def test_discovery_lists_kueues_kinds_with_kueues_short_names(api):  # noqa: F811
    _, gv = await api.call("GET", G)
    short = {r["name"]: r.get("shortNames") for r in gv["resources"] if "/" not in r["name"]}
    assert short["clusterqueues"] == ["cq"] and short["localqueues"] == ["queue", "queues", "lq"]
    assert short["workloads"] == ["kwl", "kueueworkload", "kueueworkloads"]  # Kueue dropped `wl` (kueue#8472)
    assert short["resourceflavors"] == ["flavor", "flavors", "rf"]


async def test_tables_have_the_columns_of_kueues_crds(api):  # noqa: F811
    for path, obj in [(f"{G}/resourceflavors", flavor("on-demand")), (f"{G}/clusterqueues", cluster_queue("cq", "", "4")),
                      (f"{G}/namespaces/demo/localqueues", local_queue("lq", "cq", "demo")),
                      (f"{G}/namespaces/demo/workloads", _workload("w1", "lq")),
                      (f"{G}/namespaces/demo/workloads", _workload("w2", "lq"))]:
        status, body = await api.call("POST", path, obj)
        assert status == 201, body
    admitted = {"admission": {"clusterQueue": "cq", "podSetAssignments": []}, "conditions": [
        {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved", "message": "",
         "lastTransitionTime": "2026-01-01T00:00:00Z"},
        {"type": "Admitted", "status": "True", "reason": "Admitted", "message": "",
         "lastTransitionTime": "2026-01-01T00:00:00Z"}]}
    status, body = await api.call("PATCH", f"{G}/namespaces/demo/workloads/w2/status", {"status": admitted},
                                  ctype="application/merge-patch+json")
    assert status == 200, body

    cols, rows = _rows((await api.call("GET", f"{G}/clusterqueues", accept=TABLE))[1])
    assert cols == [("Name", 0), ("Cohort", 0), ("Strategy", 1), ("Pending Workloads", 0), ("Admitted Workloads", 1)]
    assert rows == [{"Name": "cq", "Cohort": None, "Strategy": "BestEffortFIFO", "Pending Workloads": 1,
                     "Admitted Workloads": 1}]
    cols, rows = _rows((await api.call("GET", f"{G}/namespaces/demo/localqueues", accept=TABLE))[1])
    assert cols == [("Name", 0), ("ClusterQueue", 0), ("Pending Workloads", 0), ("Admitted Workloads", 0)]
    assert list(rows[0].values()) == ["lq", "cq", 1, 1]
    cols, rows = _rows((await api.call("GET", f"{G}/namespaces/demo/workloads", accept=TABLE))[1])
    assert [c for c, _ in cols] == ["Name", "Queue", "Reserved in", "Admitted", "Finished", "Age"]
    assert [list(r.values())[:5] for r in rows] == [["w1", "lq", None, None, None], ["w2", "lq", "cq", "True", None]]
    cols, _ = _rows((await api.call("GET", f"{G}/resourceflavors", accept=TABLE))[1])
    assert cols == [("Name", 0), ("Age", 0)]  # a CRD without printer columns


async def test_kueues_kinds_refuse_strategic_merge_as_custom_resources_do(api):  # noqa: F811
    await api.call("POST", f"{G}/clusterqueues", cluster_queue("cq", "", "4"))
    status, err = await api.call("PATCH", f"{G}/clusterqueues/cq", {"spec": {"cohortName": "x"}},
                                 ctype="application/strategic-merge-patch+json")
    assert (status, err["reason"]) == (415, "UnsupportedMediaType")
    status, cq = await api.call("PATCH", f"{G}/clusterqueues/cq", {"spec": {"cohortName": "x"}},
                                ctype="application/merge-patch+json")
    assert status == 200 and cq["spec"]["cohortName"] == "x"


B1 = "/apis/kueue.x-k8s.io/v1beta1"


async def test_kueue_is_discovered_in_v1beta2_and_v1beta1_with_v1beta2_preferred(api):  # noqa: F811
    _, group = await api.call("GET", "/apis/kueue.x-k8s.io")
    assert [v["version"] for v in group["versions"]] == ["v1beta2", "v1beta1"]
    assert group["preferredVersion"]["version"] == "v1beta2"
    status, gv = await api.call("GET", B1)
    assert status == 200 and gv["groupVersion"] == "kueue.x-k8s.io/v1beta1"
    assert {r["name"] for r in gv["resources"] if "/" not in r["name"]} == {
        "resourceflavors", "clusterqueues", "cohorts", "localqueues", "workloads", "workloadpriorityclasses"}


async def test_a_v1beta1_clusterqueue_is_stored_once_and_served_in_the_version_asked(api):  # noqa: F811
    cq = {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ClusterQueue", "metadata": {"name": "team-a"},
          "spec": {"cohort": "research", "namespaceSelector": {},
                   "flavorFungibility": {"whenCanBorrow": "Borrow", "whenCanPreempt": "Preempt"},
                   "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                       {"name": "default-flavor", "resources": [{"name": "cpu", "nominalQuota": 9}]}]}]}}
    status, made = await api.call("POST", f"{B1}/clusterqueues?fieldValidation=Strict", cq)
    assert status == 201, made
    assert made["apiVersion"] == "kueue.x-k8s.io/v1beta1" and made["spec"]["cohort"] == "research"
    _, v2 = await api.call("GET", f"{G}/clusterqueues/team-a")
    assert v2["apiVersion"] == "kueue.x-k8s.io/v1beta2" and v2["spec"]["cohortName"] == "research"
    assert "cohort" not in v2["spec"]
    assert v2["spec"]["flavorFungibility"] == {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "MayStopSearch"}
    _, v1 = await api.call("GET", f"{B1}/clusterqueues/team-a")
    assert v1["spec"]["cohort"] == "research" and "cohortName" not in v1["spec"]
    _, listed = await api.call("GET", f"{B1}/clusterqueues")
    assert listed["apiVersion"] == "kueue.x-k8s.io/v1beta1" and listed["items"][0]["spec"]["cohort"] == "research"
    # a merge patch through v1beta1 speaks v1beta1's field names
    status, patched = await api.call("PATCH", f"{B1}/clusterqueues/team-a", {"spec": {"cohort": "other"}},
                                     ctype="application/merge-patch+json")
    assert status == 200 and patched["spec"]["cohort"] == "other"
    _, v2 = await api.call("GET", f"{G}/clusterqueues/team-a")
    assert v2["spec"]["cohortName"] == "other"


async def test_a_v1beta1_workloads_priority_class_source_becomes_a_priority_class_ref(api):  # noqa: F811
    wl = _workload("w1", "lq")
    wl["apiVersion"] = "kueue.x-k8s.io/v1beta1"
    wl["spec"].update(priorityClassSource="kueue.x-k8s.io/workloadpriorityclass", priorityClassName="high")
    status, made = await api.call("POST", f"{B1}/namespaces/demo/workloads", wl)
    assert status == 201, made
    _, v2 = await api.call("GET", f"{G}/namespaces/demo/workloads/w1")
    assert v2["spec"]["priorityClassRef"] == {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass",
                                              "name": "high"}
    assert "priorityClassName" not in v2["spec"] and "priorityClassSource" not in v2["spec"]
    _, v1 = await api.call("GET", f"{B1}/namespaces/demo/workloads/w1")
    assert (v1["spec"]["priorityClassSource"], v1["spec"]["priorityClassName"]) == (
        "kueue.x-k8s.io/workloadpriorityclass", "high")


def _cq_with_typo() -> dict:
    cq = cluster_queue("team-a", "research", "4")
    cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["borowingLimit"] = "2"
    return cq


async def test_a_misspelled_kueue_field_is_refused_under_strict_with_kube_apiservers_message(api):  # noqa: F811
    status, err = await api.call("POST", f"{G}/clusterqueues?fieldValidation=Strict", _cq_with_typo())
    assert (status, err["reason"]) == (400, "BadRequest")
    assert err["message"] == ('ClusterQueue in version "v1beta2" cannot be handled as a ClusterQueue: strict decoding '
                              'error: unknown field "spec.resourceGroups[0].flavors[0].resources[0].borowingLimit"')
    status, _ = await api.call("GET", f"{G}/clusterqueues/team-a")
    assert status == 404  # nothing was stored


async def test_a_misspelled_kueue_field_is_warned_of_and_dropped_under_warn(api):  # noqa: F811
    async with api.s.post(f"{api.base}{G}/clusterqueues?fieldValidation=Warn", json=_cq_with_typo()) as r:
        assert r.status == 201
        warnings = r.headers.getall("Warning")
    assert warnings == ['299 - "unknown field \\"spec.resourceGroups[0].flavors[0].resources[0].borowingLimit\\""']
    _, cq = await api.call("GET", f"{G}/clusterqueues/team-a")
    assert cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0] == {"name": "cpu", "nominalQuota": "4"}


async def test_a_v1beta2_field_in_a_v1beta1_manifest_is_unknown(api):  # noqa: F811
    cq = cluster_queue("team-a", "research", "4")
    cq["apiVersion"] = "kueue.x-k8s.io/v1beta1"
    status, err = await api.call("POST", f"{B1}/clusterqueues?fieldValidation=Strict", cq)
    assert status == 400 and err["message"].endswith('strict decoding error: unknown field "spec.cohortName"')


async def test_every_kueue_kind_refuses_a_misspelled_field_under_strict(api):  # noqa: F811
    wl = _workload("w1", "lq")
    wl["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["resource"] = {}
    typos = [(f"{G}/resourceflavors", {**flavor("f"), "spec": {"nodeLabel": {}}}, "spec.nodeLabel"),
             (f"{G}/cohorts", {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort", "metadata": {"name": "c"},
                               "spec": {"parent": "x"}}, "spec.parent"),
             (f"{G}/namespaces/demo/localqueues", {**local_queue("lq", "cq", "demo"), "spec": {"clusterQeue": "cq"}},
              "spec.clusterQeue"),
             (f"{G}/namespaces/demo/workloads", wl, "spec.podSets[0].template.spec.containers[0].resource"),
             (f"{G}/workloadpriorityclasses", {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass",
                                               "metadata": {"name": "p"}, "value": 1, "descripton": ""}, "descripton")]
    for path, obj, field in typos:
        status, err = await api.call("POST", f"{path}?fieldValidation=Strict", obj)
        assert status == 400 and err["message"].endswith(f'unknown field "{field}"'), (path, err)


async def test_a_v1beta1_watch_sends_objects_in_v1beta1(api):  # noqa: F811
    await api.call("POST", f"{G}/clusterqueues", cluster_queue("team-a", "research", "4"))
    (event,) = await _watch_lines(api, f"{B1}/clusterqueues?watch=true&resourceVersion=0", 1)
    assert event["type"] == "ADDED" and event["object"]["apiVersion"] == "kueue.x-k8s.io/v1beta1"
    assert event["object"]["spec"]["cohort"] == "research" and "cohortName" not in event["object"]["spec"]
