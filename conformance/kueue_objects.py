"""Kueue cases' objects (incoming/kueue CASE_SCHEMA.md) turned into their API form and
parsed by framework/kueue, as the daemon parses stored objects (strict=False: the
upstream tests build objects the webhooks would reject, and run no validation)."""
from __future__ import annotations

from typing import Any

from framework.kueue.api import (API_VERSION, ClusterQueueSpec, CohortSpec, ResourceFlavorSpec, parse_cluster_queue,
                                 parse_cohort, parse_resource_flavor)
from framework.kueue.workload import WorkloadInfo, parse_workload

NOW = 1_000_000 * 1_000_000_000  # the test clock's "now", ns
SECOND = 1_000_000_000


def _obj(kind: str, name: str, spec: dict[str, Any], namespace: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    return {"apiVersion": API_VERSION, "kind": kind, "metadata": meta, "spec": spec}


def flavors(case: dict[str, Any]) -> list[ResourceFlavorSpec]:
    out = []
    for f in case["objects"].get("resourceFlavors") or []:
        spec = {k: f[k] for k in ("nodeLabels", "nodeTaints", "tolerations") if k in f}
        out.append(parse_resource_flavor(_obj("ResourceFlavor", f["name"], spec), strict=False))
    return out


def cohorts(case: dict[str, Any]) -> list[CohortSpec]:
    out = []
    for c in case["objects"].get("cohorts") or []:
        spec: dict[str, Any] = {"parentName": c.get("parent") or "", "resourceGroups": c.get("resourceGroups") or []}
        if "fairSharing" in c:
            spec["fairSharing"] = c["fairSharing"]
        out.append(parse_cohort(_obj("Cohort", c["name"], spec), strict=False))
    return out


def cluster_queues(case: dict[str, Any]) -> list[ClusterQueueSpec]:
    out = []
    for q in case["objects"].get("clusterQueues") or []:
        spec: dict[str, Any] = {
            "cohortName": q.get("cohort") or "",
            "resourceGroups": q.get("resourceGroups") or [],
            "queueingStrategy": q.get("queueingStrategy"),
            "preemption": q.get("preemption"),
            "flavorFungibility": q.get("flavorFungibility"),
            # absent = the Go wrapper's empty selector, which matches every namespace
            "namespaceSelector": q.get("namespaceSelector") or {},
        }
        if "fairSharing" in q:
            spec["fairSharing"] = q["fairSharing"]
        out.append(parse_cluster_queue(_obj("ClusterQueue", q["name"], spec), strict=False))
    return out


def _pod_spec(ps: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": dict(ps.get("requests") or {})}}]}
    if ps.get("tolerations"):
        spec["tolerations"] = ps["tolerations"]
    if ps.get("nodeSelector"):
        spec["nodeSelector"] = ps["nodeSelector"]
    if ps.get("requiredNodeAffinity"):
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": ps["requiredNodeAffinity"]}}}
    return spec


def workload(w: dict[str, Any]) -> WorkloadInfo:
    """A case workload in the API form (conditions implied by the Go wrappers added)."""
    meta: dict[str, Any] = {"name": w["name"], "namespace": w.get("namespace", ""), "labels": w.get("labels") or {}}
    if w.get("uid"):
        meta["uid"] = w["uid"]
    meta["creationTimestamp"] = (NOW + int(w["creationTime"] * SECOND)) / SECOND if "creationTime" in w else 0
    pod_sets = []
    for ps in w.get("podSets") or []:
        p: dict[str, Any] = {"name": ps["name"], "count": ps.get("count", 1), "template": {"spec": _pod_spec(ps)}}
        if ps.get("minCount") is not None:
            p["minCount"] = ps["minCount"]
        pod_sets.append(p)
    spec: dict[str, Any] = {"podSets": pod_sets, "queueName": w.get("queueName") or "", "priority": w.get("priority", 0)}
    status: dict[str, Any] = {}
    conds: list[dict[str, Any]] = []
    if w.get("admission"):
        status["admission"] = w["admission"]
        cq = w["admission"]["clusterQueue"]
        t = (NOW + int(w.get("quotaReservedTime", 0) * SECOND)) / SECOND
        conds.append({"type": "QuotaReserved", "status": "True", "reason": "AdmittedByTest",
                      "message": f"Admitted by ClusterQueue {cq}", "lastTransitionTime": t})
        if w.get("admitted"):
            conds.append({"type": "Admitted", "status": "True", "reason": "ByTest",
                          "message": f"Admitted by ClusterQueue {cq}", "lastTransitionTime": t})
    for c in w.get("conditions") or []:
        conds = [x for x in conds if x["type"] != c["type"]] + [dict(c, lastTransitionTime=NOW / SECOND)]
    status["conditions"] = conds
    return parse_workload({"apiVersion": API_VERSION, "kind": "Workload", "metadata": meta, "spec": spec,
                           "status": status}, strict=False)
