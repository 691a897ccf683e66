"""One schema per stored kind besides Pod (upstream's ValidateNode, ValidatePriorityClass,
ValidateService, ValidateReplicationController, ValidateReplicaSet, ValidateStatefulSet,
ValidatePodDisruptionBudget, ValidatePersistentVolume(Claim), ValidateStorageClass,
ValidateCSINode, ValidateCSIDriver, ValidateVolumeAttachment; the PodGroup CRD's
OpenAPI schema)."""
from __future__ import annotations

from typing import Any, Mapping

from framework.api.errors import ValidationError
from framework.api.schema.common import (
    LABEL_KEY, LABEL_SELECTOR, LABELS, NODE_SELECTOR, RESOURCE_LIST, RESOURCE_REQUIREMENTS, STRING_MAP, STRINGS,
    TAINT, TYPE_META, conditions, object_meta,
)
from framework.api.schema.pod import POD_TEMPLATE
from framework.api.schema.types import Any_, Bool, Ctx, Int, IntOrString, ListOf, MapOf, Obj, Str, Time, join
from framework.api.validation import is_dns1035_label, is_dns1123_label, is_dns1123_subdomain, show

NONNEG = "must be greater than or equal to 0"

def _taints_unique(spec: Mapping[str, Any], path: str, ctx: Ctx) -> None:
    """One taint per key and effect (validateNodeTaints)."""
    taints = spec.get("taints")
    seen: set[tuple[Any, Any]] = set()
    for i, t in enumerate(taints if isinstance(taints, list) else []):
        if not isinstance(t, dict) or not isinstance(t.get("key"), str) or not isinstance(t.get("effect"), str):
            continue
        pair = (t["key"], t["effect"])
        if pair in seen:
            ctx.add(ValidationError(f"{join(path, 'taints')}[{i}]", f"Duplicate value: {show(t)}: taints must be unique "
                                                                     "by key and effect pair"))
        seen.add(pair)


NODE = Obj({
    "metadata": object_meta(namespaced=False),
    "spec": Obj({
        "unschedulable": Bool(), "taints": ListOf(TAINT), "podCIDR": Str(), "podCIDRs": STRINGS,
        "providerID": Str(), "configSource": Any_(),
    }, checks=(_taints_unique,), more=frozenset({"externalID"})),
    "status": Obj({
        "capacity": RESOURCE_LIST, "allocatable": RESOURCE_LIST,
        "images": ListOf(Obj({"names": STRINGS, "sizeBytes": Int(64, lo=0)})),
        "conditions": conditions(),
        "addresses": ListOf(Obj({"type": Str(), "address": Str()}, required=("type", "address"))),
        "phase": Str(enum=("Pending", "Running", "Terminated")),
        "nodeInfo": MapOf(Str()), "volumesInUse": STRINGS,
        "volumesAttached": ListOf(Obj({"name": Str(), "devicePath": Str()})),
    }, more=frozenset({"daemonEndpoints", "config", "runtimeHandlers", "features"})),
}, more=TYPE_META)

POD_GROUP = Obj({
    "metadata": object_meta(),
    "spec": Obj({
        "minMember": Int(32, lo=0, range_msg=NONNEG),
        "minResources": RESOURCE_LIST,
        "scheduleTimeoutSeconds": Int(32, lo=0, range_msg=NONNEG),
    }),
    "status": Obj({
        "phase": Str(), "occupiedBy": Str(), "scheduleStartTime": Time(),
        **{k: Int(32, lo=0, range_msg=NONNEG) for k in ("scheduled", "running", "succeeded", "failed")},
    }),
})

PRIORITY_CLASS = Obj({
    "metadata": object_meta(namespaced=False),
    "value": Int(32), "globalDefault": Bool(), "description": Str(),
    "preemptionPolicy": Str(enum=("PreemptLowerPriority", "Never")),
}, required=("value",))

NAMESPACE = Obj({"metadata": object_meta(is_dns1123_label, namespaced=False), "spec": Obj({"finalizers": STRINGS}),
                 "status": Obj({"phase": Str(enum=("Active", "Terminating"))})})

SERVICE = Obj({
    "metadata": object_meta(is_dns1035_label),
    "spec": Obj({
        "selector": LABELS,
        "ports": ListOf(Obj({
            "name": Str(), "protocol": Str(enum=("TCP", "UDP", "SCTP")),
            "port": Int(32, lo=1, hi=65535, range_msg="must be between 1 and 65535, inclusive"),
            "targetPort": IntOrString(), "nodePort": Int(32, lo=0, hi=65535),
        }, required=("port",))),
        "type": Str(enum=("ClusterIP", "NodePort", "LoadBalancer", "ExternalName")),
        "clusterIP": Str(), "clusterIPs": STRINGS, "externalName": Str(),
    }),
})

REPLICAS = Int(32, lo=0, range_msg=NONNEG)
WORKLOAD_STATUS = Obj({k: Int(32, lo=0, range_msg=NONNEG)
                       for k in ("replicas", "readyReplicas", "availableReplicas", "fullyLabeledReplicas")})

REPLICATION_CONTROLLER = Obj({
    "metadata": object_meta(),
    "spec": Obj({"replicas": REPLICAS, "minReadySeconds": Int(32, lo=0, range_msg=NONNEG), "selector": LABELS,
                 "template": POD_TEMPLATE}),
    "status": WORKLOAD_STATUS,
})

REPLICA_SET = Obj({
    "metadata": object_meta(),
    "spec": Obj({"replicas": REPLICAS, "minReadySeconds": Int(32, lo=0, range_msg=NONNEG),
                 "selector": LABEL_SELECTOR, "template": POD_TEMPLATE}),
    "status": WORKLOAD_STATUS,
})

STATEFUL_SET = Obj({
    "metadata": object_meta(),
    "spec": Obj({"replicas": REPLICAS, "selector": LABEL_SELECTOR, "template": POD_TEMPLATE, "serviceName": Str(),
                 "podManagementPolicy": Str(enum=("OrderedReady", "Parallel")),
                 "volumeClaimTemplates": ListOf(Obj({"metadata": object_meta(named=False), "spec": Any_()}))}),
    "status": WORKLOAD_STATUS,
})

POD_DISRUPTION_BUDGET = Obj({
    "metadata": object_meta(),
    "spec": Obj({"minAvailable": IntOrString(), "maxUnavailable": IntOrString(), "selector": LABEL_SELECTOR,
                 "unhealthyPodEvictionPolicy": Str(enum=("IfHealthyBudget", "AlwaysAllow"))}),
    "status": Obj({
        **{k: Int(32, lo=0, range_msg=NONNEG)
           for k in ("disruptionsAllowed", "currentHealthy", "desiredHealthy", "expectedPods")},
        "observedGeneration": Int(64), "disruptedPods": MapOf(Time()), "conditions": conditions(),
    }),
})

ACCESS_MODES = ListOf(Str(enum=("ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany", "ReadWriteOncePod")))
VOLUME_MODE = Str(enum=("Block", "Filesystem"))

PERSISTENT_VOLUME = Obj({
    "metadata": object_meta(namespaced=False),
    "spec": Obj({
        "capacity": RESOURCE_LIST, "accessModes": ACCESS_MODES, "storageClassName": Str(),
        "nodeAffinity": Obj({"required": NODE_SELECTOR}),
        "persistentVolumeReclaimPolicy": Str(enum=("Retain", "Delete", "Recycle")),
        "volumeMode": VOLUME_MODE, "mountOptions": STRINGS,
        "claimRef": Obj({"namespace": Str(), "name": Str(), "uid": Str(), "kind": Str(), "apiVersion": Str()}),
        "csi": Obj({"driver": Str(fmt=is_dns1123_subdomain), "volumeHandle": Str(), "readOnly": Bool(),
                    "fsType": Str(), "volumeAttributes": STRING_MAP}, required=("driver", "volumeHandle")),
        "hostPath": Obj({"path": Str(), "type": Str()}, required=("path",)),
        "local": Obj({"path": Str(), "fsType": Str()}, required=("path",)),
    }),
    "status": Obj({"phase": Str(enum=("Pending", "Available", "Bound", "Released", "Failed")),
                   "message": Str(), "reason": Str()}),
})

PERSISTENT_VOLUME_CLAIM = Obj({
    "metadata": object_meta(),
    "spec": Obj({
        "accessModes": ACCESS_MODES, "resources": RESOURCE_REQUIREMENTS, "storageClassName": Str(),
        "volumeName": Str(), "volumeMode": VOLUME_MODE, "selector": LABEL_SELECTOR,
    }),
    "status": Obj({"phase": Str(enum=("Pending", "Bound", "Lost")), "capacity": RESOURCE_LIST,
                   "accessModes": ACCESS_MODES, "conditions": conditions()}),
})

STORAGE_CLASS = Obj({
    "metadata": object_meta(namespaced=False),
    "provisioner": Str(), "parameters": STRING_MAP,
    "reclaimPolicy": Str(enum=("Retain", "Delete")),
    "volumeBindingMode": Str(enum=("Immediate", "WaitForFirstConsumer")),
    "allowVolumeExpansion": Bool(), "mountOptions": STRINGS,
    "allowedTopologies": ListOf(Obj({"matchLabelExpressions": ListOf(
        Obj({"key": LABEL_KEY, "values": STRINGS}, required=("key", "values")))})),
}, required=("provisioner",))

CSI_NODE = Obj({
    "metadata": object_meta(namespaced=False),
    "spec": Obj({"drivers": ListOf(Obj({
        "name": Str(fmt=is_dns1123_subdomain), "nodeID": Str(), "topologyKeys": ListOf(LABEL_KEY),
        "allocatable": Obj({"count": Int(32, lo=0, range_msg=NONNEG)}),
    }, required=("name", "nodeID")), unique_key="name")}, required=("drivers",)),
})

CSI_DRIVER = Obj({
    "metadata": object_meta(namespaced=False),
    "spec": Obj({
        "attachRequired": Bool(), "podInfoOnMount": Bool(), "storageCapacity": Bool(), "requiresRepublish": Bool(),
        "seLinuxMount": Bool(), "fsGroupPolicy": Str(enum=("ReadWriteOnceWithFSType", "File", "None")),
        "volumeLifecycleModes": ListOf(Str(enum=("Persistent", "Ephemeral"))),
        "tokenRequests": ListOf(Obj({"audience": Str(), "expirationSeconds": Int(64, lo=600)})),
        "nodeAllocatableUpdatePeriodSeconds": Int(64, lo=10),
    }),
})

VOLUME_ATTACHMENT = Obj({
    "metadata": object_meta(namespaced=False),
    "spec": Obj({
        "attacher": Str(fmt=is_dns1123_subdomain), "nodeName": Str(fmt=is_dns1123_subdomain),
        "source": Obj({"persistentVolumeName": Str(), "inlineVolumeSpec": Any_()}),
    }, required=("attacher", "nodeName", "source")),
    "status": Obj({"attached": Bool(), "attachmentMetadata": STRING_MAP,
                   "attachError": Obj({"message": Str(), "time": Time()}),
                   "detachError": Obj({"message": Str(), "time": Time()})}),
})

