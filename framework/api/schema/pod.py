"""v1 Pod (upstream's ValidatePodCreate / ValidatePodSpec / ValidatePodStatus, the
fields ksched stores and reads)."""
from __future__ import annotations

from typing import Any, Mapping

from framework.api.schema.common import (
    AFFINITY, LABEL_KEY, LABEL_SELECTOR, LABELS, RESOURCE_LIST, RESOURCE_REQUIREMENTS, STRINGS,
    TOLERATION, TYPE_META, conditions, object_meta,
)
from framework.api.schema.pod_claims import POD_RESOURCE_CLAIM, check_resource_claims
from framework.api.schema.types import Any_, Bool, Ctx, Int, ListOf, MapOf, Obj, Quantity, Remembered, Str, Time, join
from framework.api.validation import (
    duplicate, forbidden, invalid, is_dns1123_label, is_dns1123_subdomain, is_qualified_name,
)

PORT_RANGE = "must be between 1 and 65535, inclusive"
PROTOCOLS = ("TCP", "UDP", "SCTP")


def _host_port(port: Mapping[str, Any], path: str, ctx: Ctx) -> None:
    hp = port.get("hostPort")
    if isinstance(hp, int) and not isinstance(hp, bool) and hp != 0 and not 1 <= hp <= 65535:
        ctx.add(invalid(join(path, "hostPort"), hp, PORT_RANGE))


CONTAINER_PORT = Obj({
    "name": Str(), "containerPort": Int(32, lo=1, hi=65535, range_msg=PORT_RANGE), "hostPort": Int(32),
    "hostIP": Str(), "protocol": Str(enum=PROTOCOLS),
}, required=("containerPort",), checks=(_host_port,))

ENV_VAR = Obj({"name": Str(), "value": Str(), "valueFrom": Any_()}, required=("name",))


def container(init: bool) -> Obj:
    return Obj({
        "name": Str(fmt=is_dns1123_label), "image": Str(), "command": STRINGS, "args": STRINGS,
        "workingDir": Str(), "ports": ListOf(CONTAINER_PORT), "env": ListOf(ENV_VAR),
        "resources": RESOURCE_REQUIREMENTS,
        "restartPolicy": Str(enum=("Always",) if init else ("Always", "OnFailure", "Never")),
        "imagePullPolicy": Str(enum=("Always", "Never", "IfNotPresent")),
        "volumeMounts": ListOf(Obj({"name": Str(), "mountPath": Str(), "readOnly": Bool(), "subPath": Str()},
                                   required=("name", "mountPath"))),
    }, required=("name",), more=CONTAINER_MORE)


# Upstream's other Container fields (kept, not read): with them the object is closed.
CONTAINER_MORE = frozenset({
    "envFrom", "resizePolicy", "volumeDevices", "livenessProbe", "readinessProbe", "startupProbe", "lifecycle",
    "terminationMessagePath", "terminationMessagePolicy", "securityContext", "stdin", "stdinOnce", "tty",
})
# Upstream's other PodSpec fields (kept, not read).
POD_SPEC_MORE = frozenset({
    "ephemeralContainers", "serviceAccount", "automountServiceAccountToken", "shareProcessNamespace",
    "securityContext", "imagePullSecrets", "hostAliases", "dnsConfig", "readinessGates", "setHostnameAsFQDN",
    "os", "hostUsers",
})


def _source(fields: dict[str, Any], *req: str) -> Obj:
    return Obj(fields, required=req)


VOLUME = Obj({
    "name": Str(fmt=is_dns1123_label),
    "persistentVolumeClaim": _source({"claimName": Str(), "readOnly": Bool()}, "claimName"),
    "hostPath": _source({"path": Str(), "type": Str()}, "path"),
    "emptyDir": Obj({"medium": Str(), "sizeLimit": Quantity()}),
    "configMap": Obj({"name": Str(), "optional": Bool(), "defaultMode": Int(32)}),
    "secret": Obj({"secretName": Str(), "optional": Bool(), "defaultMode": Int(32)}),
    "csi": _source({"driver": Str(), "readOnly": Bool(), "fsType": Str(), "volumeAttributes": MapOf(Str())}, "driver"),
    "ephemeral": Obj({"volumeClaimTemplate": Obj({"metadata": Any_(), "spec": Any_()})}),
    "gcePersistentDisk": _source({"pdName": Str(), "fsType": Str(), "partition": Int(32), "readOnly": Bool()},
                                 "pdName"),
    "awsElasticBlockStore": _source({"volumeID": Str(), "fsType": Str(), "partition": Int(32), "readOnly": Bool()},
                                    "volumeID"),
    "azureDisk": _source({"diskName": Str(), "diskURI": Str(), "readOnly": Bool()}, "diskName", "diskURI"),
    "iscsi": _source({"targetPortal": Str(), "iqn": Str(), "lun": Int(32, lo=0, hi=255), "readOnly": Bool()},
                     "targetPortal", "iqn"),
    "rbd": _source({"monitors": STRINGS, "image": Str(), "pool": Str(), "readOnly": Bool()}, "monitors", "image"),
    "nfs": _source({"server": Str(), "path": Str(), "readOnly": Bool()}, "server", "path"),
}, required=("name",))


def _when_unsatisfiable_min_domains(c: Mapping[str, Any], path: str, ctx: Ctx) -> None:
    if c.get("minDomains") is not None and c.get("whenUnsatisfiable") != "DoNotSchedule":
        ctx.add(invalid(join(path, "minDomains"), c.get("minDomains"),
                        "can only use minDomains if whenUnsatisfiable=DoNotSchedule, not "
                        f"{c.get('whenUnsatisfiable')}"))


NOT_POSITIVE = "must be greater than zero"

TOPOLOGY_SPREAD_CONSTRAINT = Obj({
    "maxSkew": Int(32, lo=1, range_msg=NOT_POSITIVE),
    "topologyKey": LABEL_KEY,
    "whenUnsatisfiable": Str(enum=("DoNotSchedule", "ScheduleAnyway")),
    "labelSelector": LABEL_SELECTOR,
    "minDomains": Int(32, lo=1, range_msg=NOT_POSITIVE),
    "nodeAffinityPolicy": Str(enum=("Honor", "Ignore")),
    "nodeTaintsPolicy": Str(enum=("Honor", "Ignore")),
    "matchLabelKeys": ListOf(LABEL_KEY),
}, required=("maxSkew", "topologyKey", "whenUnsatisfiable"), checks=(_when_unsatisfiable_min_domains,),
   required_detail={"topologyKey": "can not be empty"})


def _spread_constraints_not_repeated(spec: Mapping[str, Any], path: str, ctx: Ctx) -> None:
    """One constraint per {topologyKey, whenUnsatisfiable} (ValidateSpreadConstraintNotRepeat)."""
    items = spec.get("topologySpreadConstraints")
    seen: set[tuple[Any, Any]] = set()
    for i, c in enumerate(items if isinstance(items, list) else []):
        if not isinstance(c, dict) or not isinstance(c.get("topologyKey"), str):
            continue
        if not isinstance(c.get("whenUnsatisfiable"), (str, type(None))):
            continue  # the field's own rule names its type
        pair = (c.get("topologyKey"), c.get("whenUnsatisfiable"))
        if pair in seen:
            ctx.add(duplicate(join(path, f"topologySpreadConstraints[{i}].{{topologyKey, whenUnsatisfiable}}"),
                              f"{{{pair[0]}, {pair[1]}}}"))
        seen.add(pair)

def _unique_container_names(spec: Mapping[str, Any], path: str, ctx: Ctx) -> None:
    """Container names are unique across app and init containers."""
    seen: set[str] = set()
    for key in ("containers", "initContainers"):
        items = spec.get(key)
        for i, c in enumerate(items if isinstance(items, list) else []):
            name = c.get("name") if isinstance(c, dict) else None
            if isinstance(name, str) and name:
                if name in seen:
                    ctx.add(duplicate(join(path, f"{key}[{i}].name"), name))
                seen.add(name)


def _gated_pods_are_not_bound(spec: Mapping[str, Any], path: str, ctx: Ctx) -> None:
    if ctx.strict and spec.get("nodeName") and spec.get("schedulingGates"):
        ctx.add(forbidden(join(path, "nodeName"), "cannot be set until all schedulingGates have been cleared"))


# A spec's containers, remembered apart from it: pods whose specs differ elsewhere (a gang's
# members name their group in spec.schedulingGroup) share their containers' verdict.
_CONTAINERS = Remembered(ListOf(container(init=False)))

POD_SPEC = Obj({
    "containers": _CONTAINERS,
    "initContainers": ListOf(container(init=True)),
    "nodeName": Str(fmt=is_dns1123_subdomain),
    "nodeSelector": LABELS,
    "schedulerName": Str(fmt=is_dns1123_subdomain),
    "priority": Int(32),
    "priorityClassName": Str(fmt=is_dns1123_subdomain),
    "preemptionPolicy": Str(enum=("PreemptLowerPriority", "Never")),
    "overhead": RESOURCE_LIST,
    "resources": RESOURCE_REQUIREMENTS,
    "tolerations": ListOf(TOLERATION),
    "schedulingGates": ListOf(Obj({"name": Str(fmt=is_qualified_name)}, required=("name",)), unique_key="name"),
    "affinity": AFFINITY,
    "topologySpreadConstraints": ListOf(TOPOLOGY_SPREAD_CONSTRAINT),
    "volumes": ListOf(VOLUME, unique_key="name"),
    "restartPolicy": Str(enum=("Always", "OnFailure", "Never")),
    "activeDeadlineSeconds": Int(64, lo=1, range_msg="must be between 1 and 9223372036854775807, inclusive"),
    "terminationGracePeriodSeconds": Int(64),
    "hostNetwork": Bool(), "hostPID": Bool(), "hostIPC": Bool(),
    "serviceAccountName": Str(fmt=is_dns1123_subdomain),
    "hostname": Str(fmt=is_dns1123_label), "subdomain": Str(fmt=is_dns1123_label),
    "dnsPolicy": Str(enum=("ClusterFirstWithHostNet", "ClusterFirst", "Default", "None")),
    "runtimeClassName": Str(fmt=is_dns1123_subdomain),
    "enableServiceLinks": Bool(),
    "resourceClaims": ListOf(POD_RESOURCE_CLAIM),
    # core/v1 PodSchedulingGroup (1.36, gate GenericWorkload): the scheduling.k8s.io PodGroup the pod joins
    "schedulingGroup": Obj({"podGroupName": Str(fmt=is_dns1123_subdomain)}, more=frozenset()),
}, strict_required=("containers",), checks=(_unique_container_names, _gated_pods_are_not_bound,
                                            _spread_constraints_not_repeated, check_resource_claims),
   more=POD_SPEC_MORE)

POD_STATUS = Obj({
    "phase": Str(enum=("Pending", "Running", "Succeeded", "Failed", "Unknown")),
    "conditions": conditions(),
    "nominatedNodeName": Str(fmt=is_dns1123_subdomain),
    "startTime": Time(),
    "hostIP": Str(), "podIP": Str(), "message": Str(), "reason": Str(),
    "qosClass": Str(enum=("Guaranteed", "Burstable", "BestEffort")),
    "containerStatuses": ListOf(Obj({"name": Str(), "ready": Bool(), "restartCount": Int(32)})),
    "resize": Str(),
})

def _spec_left_out(pod: Mapping[str, Any], path: str, ctx: Ctx) -> None:
    """No spec is an empty spec (a Go struct): its containers are still required."""
    if pod.get("spec") is None:
        POD_SPEC.check({}, join(path, "spec"), ctx)


# Pods made from one template share their spec: its verdict is remembered (Remembered).
_SPEC = Remembered(POD_SPEC)
POD = Obj({"metadata": object_meta(), "spec": _SPEC, "status": POD_STATUS}, checks=(_spec_left_out,),
          more=TYPE_META)
POD_TEMPLATE = Obj({"metadata": object_meta(named=False), "spec": _SPEC}, more=frozenset())
