"""Kueue's kinds as their CRDs' structural schemas describe them (apis/kueue/v1beta2/*_types.go
and apis/kueue/v1beta1/*_types.go: every field of every type, so the objects are
closed and a misspelled field is an unknown field under fieldValidation, as
kube-apiserver's pruning finds it). The rules here are shapes (types, int widths);
what Kueue's webhooks check (quotas, limits, enums, names) framework.kueue's parsers
check, with errors naming the field. Quantities and fields ksched does not read
(topology requests, admission checks' states) are any JSON.

`KUEUE_SCHEMAS` maps (kind, apiVersion) to the schema of that version; the two
versions differ as framework.kueue.versions describes.
"""
from __future__ import annotations

from typing import Mapping

from framework.api.schema.common import (
    LABEL_SELECTOR, STRING_MAP, STRINGS, TAINT, TOLERATION, TYPE_META, conditions, object_meta,
)
from framework.api.schema.pod import POD_TEMPLATE
from framework.api.schema.types import Any_, Bool, Int, ListOf, MapOf, Obj, Rule, Str, Time



def closed(fields: Mapping[str, Rule]) -> Obj:
    """An object whose every field is listed: any other is unknown."""
    return Obj(fields, more=frozenset())


GROUP = "kueue.x-k8s.io"
V1BETA1, V1BETA2 = f"{GROUP}/v1beta1", f"{GROUP}/v1beta2"

_CLUSTER_META = object_meta(namespaced=False)
_META = object_meta()
_QUANTITY = Any_()  # resource.Quantity: framework.kueue.amount parses it and names the field
_COUNT = Int(32)
_FAIR_SHARING = closed({"weight": _QUANTITY})

RESOURCE_GROUP = closed({
    "coveredResources": STRINGS,
    "flavors": ListOf(closed({"name": Str(), "resources": ListOf(closed({
        "name": Str(), "nominalQuota": _QUANTITY, "borrowingLimit": _QUANTITY, "lendingLimit": _QUANTITY,
    }))})),
})
_FLAVOR_USAGE = ListOf(closed({"name": Str(), "resources": ListOf(closed({
    "name": Str(), "total": _QUANTITY, "borrowed": _QUANTITY}))}))
_LOCAL_FLAVOR_USAGE = ListOf(closed({"name": Str(), "resources": ListOf(closed({"name": Str(), "total": _QUANTITY}))}))
_ADMISSION_FAIR_SHARING = closed({"consumedResources": MapOf(_QUANTITY), "lastUpdate": Time()})
_QUEUE_COUNTS = {"pendingWorkloads": _COUNT, "reservingWorkloads": _COUNT, "admittedWorkloads": _COUNT}


def _top(meta: Obj, **fields: object) -> Obj:
    return Obj({"metadata": meta, **fields}, more=TYPE_META)  # type: ignore[arg-type]


RESOURCE_FLAVOR = _top(_CLUSTER_META, spec=closed({
    "nodeLabels": STRING_MAP, "nodeTaints": ListOf(TAINT), "tolerations": ListOf(TOLERATION),
    "topologyName": Str()}))

WORKLOAD_PRIORITY_CLASS = _top(_CLUSTER_META, value=Int(32), description=Str())



def _fair_sharing_status(version: str) -> Obj:
    if version == V1BETA1:
        return closed({"weightedShare": Int(64), "admissionFairSharingStatus": _ADMISSION_FAIR_SHARING})
    return closed({"weightedShare": Int(64)})


def _cohort(version: str) -> Obj:
    return _top(_CLUSTER_META,
                spec=closed({"parentName": Str(), "resourceGroups": ListOf(RESOURCE_GROUP), "fairSharing": _FAIR_SHARING}),
                status=closed({"fairSharing": _fair_sharing_status(version)}))


def _cluster_queue(version: str) -> Obj:
    spec = {
        "resourceGroups": ListOf(RESOURCE_GROUP),
        "queueingStrategy": Str(),
        "namespaceSelector": LABEL_SELECTOR,
        "flavorFungibility": closed({"whenCanBorrow": Str(), "whenCanPreempt": Str(), "preference": Str()}),
        "preemption": closed({"reclaimWithinCohort": Str(), "withinClusterQueue": Str(),
                           "borrowWithinCohort": closed({"policy": Str(), "maxPriorityThreshold": Int(32)})}),
        "admissionChecksStrategy": closed({"admissionChecks": ListOf(closed({"name": Str(), "onFlavors": STRINGS}))}),
        "stopPolicy": Str(),
        "fairSharing": _FAIR_SHARING,
        "admissionScope": closed({"admissionMode": Str()}),
    }
    status = {
        "conditions": conditions(), "flavorsReservation": _FLAVOR_USAGE, "flavorsUsage": _FLAVOR_USAGE,
        **_QUEUE_COUNTS,
    }
    status["fairSharing"] = _fair_sharing_status(version)
    if version == V1BETA1:
        spec.update(cohort=Str(), admissionChecks=STRINGS)
        status.update(pendingWorkloadsStatus=Any_())
    else:
        spec.update(cohortName=Str(), concurrentAdmissionPolicy=Any_())
    return _top(_CLUSTER_META, spec=closed(spec), status=closed(status))


def _local_queue(version: str) -> Obj:
    status = {"conditions": conditions(), **_QUEUE_COUNTS, "flavorsReservation": _LOCAL_FLAVOR_USAGE,
              "fairSharing": closed({"weightedShare": Int(64), "admissionFairSharingStatus": _ADMISSION_FAIR_SHARING})}
    if version == V1BETA1:
        status.update(flavorUsage=_LOCAL_FLAVOR_USAGE, flavors=Any_())
    else:
        status.update(flavorsUsage=_LOCAL_FLAVOR_USAGE)
    return _top(_META, spec=closed({"clusterQueue": Str(), "stopPolicy": Str(), "fairSharing": _FAIR_SHARING}),
                status=closed(status))


_POD_SET = closed({"name": Str(), "template": POD_TEMPLATE, "count": Any_(), "minCount": Any_(),
                "topologyRequest": Any_()})
_ADMISSION = closed({"clusterQueue": Str(), "podSetAssignments": ListOf(closed({
    "name": Str(), "flavors": STRING_MAP, "resourceUsage": MapOf(_QUANTITY), "count": Int(32),
    "topologyAssignment": Any_(), "delayedTopologyRequest": Any_()}))})


def _workload(version: str) -> Obj:
    spec = {"podSets": ListOf(_POD_SET), "queueName": Str(), "priority": Any_(), "active": Bool(),
            "maximumExecutionTimeSeconds": Int(32)}
    status = {
        "conditions": conditions(), "admission": _ADMISSION,
        "requeueState": closed({"count": Int(32), "requeueAt": Time()}),
        "reclaimablePods": ListOf(closed({"name": Str(), "count": Int(32)})),
        "admissionChecks": Any_(), "resourceRequests": ListOf(closed({"name": Str(), "resources": MapOf(_QUANTITY)})),
        "schedulingStats": Any_(), "nominatedClusterNames": STRINGS, "clusterName": Str(), "unhealthyNodes": Any_(),
    }
    if version == V1BETA1:
        spec.update(priorityClassName=Str(), priorityClassSource=Str())
        status.update(accumulatedPastExexcutionTimeSeconds=Int(32))
    else:
        spec.update(priorityClassRef=closed({"group": Str(), "kind": Str(), "name": Str()}),
                    preemptionGates=ListOf(closed({"name": Str()})))
        status.update(accumulatedPastExecutionTimeSeconds=Int(32), preemptionGates=Any_())
    return _top(_META, spec=closed(spec), status=closed(status))


KUEUE_SCHEMAS: dict[tuple[str, str], Obj] = {
    (kind, version): schema
    for version in (V1BETA2, V1BETA1)
    for kind, schema in (("ResourceFlavor", RESOURCE_FLAVOR), ("WorkloadPriorityClass", WORKLOAD_PRIORITY_CLASS),
                         ("Cohort", _cohort(version)), ("ClusterQueue", _cluster_queue(version)),
                         ("LocalQueue", _local_queue(version)), ("Workload", _workload(version)))
}
KUEUE_KINDS = frozenset(kind for kind, _ in KUEUE_SCHEMAS)


def kueue_schema(kind: str, api_version: object) -> Obj | None:
    """The schema of a Kueue kind in the version written (v1beta2 when none is; None
    for a version that is not a string, which decoding refuses)."""
    if kind not in KUEUE_KINDS or not isinstance(api_version, (str, type(None))):
        return None
    return KUEUE_SCHEMAS.get((kind, api_version if api_version else V1BETA2))
