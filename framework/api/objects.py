"""Typed, validated views of Kubernetes objects.

Each class is built from the object's JSON dict (kept as `raw`, never mutated) and
parses once what the scheduler reads on the hot path. Bad input raises
ValidationError naming the field path. Objects are immutable: a change is a new
object built from a new dict.
"""
from __future__ import annotations

from fractions import Fraction
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

from framework.api.errors import ValidationError
from framework.api.labels import LabelSelector, NodeSelector, Taint, Toleration, parse_node_selector_term
from framework.api.resources import (
    CPU,
    DEFAULT_MEMORY_REQUEST,
    DEFAULT_MILLI_CPU_REQUEST,
    MEMORY,
    Resource,
    ResourceList,
    parse_resource_list,
    pod_requests,
    quantity_in_units,
)
from framework.api.timeutil import parse_time

DEFAULT_NAMESPACE = "default"
DEFAULT_SCHEDULER_NAME = "default-scheduler"
POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"

_ZERO = Fraction(0)
_NONE: tuple[Any, ...] = ()  # every empty sequence of a parsed object
_NO_MAP: Mapping[str, Any] = MappingProxyType({})  # and every empty map read only
_NON_MISSING = {CPU: Fraction(DEFAULT_MILLI_CPU_REQUEST, 1000), MEMORY: Fraction(DEFAULT_MEMORY_REQUEST)}


def _map(raw: Mapping[str, Any], key: str, field: str) -> Mapping[str, Any]:
    v = raw.get(key)
    if v is None:
        return {}
    if not isinstance(v, Mapping):
        raise ValidationError(f"{field}{key}" if not field else f"{field}.{key}", "must be an object")
    return v


def _list(raw: Mapping[str, Any], key: str, field: str) -> Sequence[Any]:
    v = raw.get(key)
    if v is None:
        return _NONE
    if not isinstance(v, list):
        raise ValidationError(f"{field}.{key}" if field else key, "must be a list")
    return v


def _str_map(raw: Mapping[str, Any], key: str, field: str) -> dict[str, str]:
    """The map itself, checked: raw dicts are never changed, so it is not copied."""
    v = _map(raw, key, field)
    if not v:
        return _NO_MAP  # type: ignore[return-value]
    for k, val in v.items():
        if not isinstance(k, str) or not isinstance(val, str):
            raise ValidationError(f"{field}.{key}", "must be a map of strings to strings")
    return v if isinstance(v, dict) else dict(v)


def _opt_int(raw: Mapping[str, Any], key: str, field: str) -> int | None:
    v = raw.get(key)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int):
        raise ValidationError(f"{field}.{key}", "must be an integer")
    return v


def _str(raw: Mapping[str, Any], key: str, field: str, default: str = "") -> str:
    v = raw.get(key)
    if v is None:
        return default
    if not isinstance(v, str):
        raise ValidationError(f"{field}.{key}", "must be a string")
    return v


class ObjectMeta:
    __slots__ = ("name", "namespace", "uid", "labels", "annotations", "creation_timestamp",
                 "deletion_timestamp", "resource_version", "owner_references", "generate_name")

    def __init__(self, raw: Mapping[str, Any], namespaced: bool, require_name: bool = True) -> None:
        meta = _map(raw, "metadata", "")
        self.name = _str(meta, "name", "metadata")
        if require_name and not self.name:
            raise ValidationError("metadata.name", "is required")
        self.generate_name = _str(meta, "generateName", "metadata")
        self.namespace = _str(meta, "namespace", "metadata", DEFAULT_NAMESPACE) if namespaced else ""
        if namespaced and not self.namespace:
            self.namespace = DEFAULT_NAMESPACE
        self.uid = _str(meta, "uid", "metadata")
        self.labels = _str_map(meta, "labels", "metadata")
        self.annotations = _str_map(meta, "annotations", "metadata")
        ts = meta.get("creationTimestamp")
        self.creation_timestamp = parse_time(ts, "metadata.creationTimestamp") if ts is not None else 0
        dts = meta.get("deletionTimestamp")
        self.deletion_timestamp = parse_time(dts, "metadata.deletionTimestamp") if dts is not None else None
        rv = meta.get("resourceVersion")
        self.resource_version = str(rv) if rv is not None else ""
        self.owner_references = _list(meta, "ownerReferences", "metadata")


class KubeObject:
    """Base of the typed objects: `raw` is the JSON dict, `meta` the parsed metadata."""

    __slots__ = ("raw", "meta", "name", "namespace", "labels", "key", "uid")
    kind = ""
    namespaced = True

    def __init__(self, raw: Mapping[str, Any]) -> None:
        if not isinstance(raw, Mapping):
            raise ValidationError("", "object must be a map")
        self.raw: Mapping[str, Any] = raw
        meta = self.meta = ObjectMeta(raw, self.namespaced)
        # Plain attributes, not properties: the scheduler reads these per node per plugin.
        self.name: str = meta.name
        self.namespace: str = meta.namespace
        self.labels: dict[str, str] = meta.labels
        self.key: str = f"{meta.namespace}/{meta.name}" if self.namespaced else meta.name
        self.uid: str = meta.uid or self.key

    def as_stored(self, raw: Mapping[str, Any]) -> "KubeObject":
        """This object, just parsed from `raw` less its resourceVersion, as the store
        keeps it: `raw` is the same object with metadata.resourceVersion set (the one
        parsed field that depends on it). Only for an object no one else holds yet."""
        self.raw = raw
        rv = (raw.get("metadata") or {}).get("resourceVersion")
        self.meta.resource_version = str(rv) if rv is not None else ""
        return self

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.key})"


class ContainerPort:
    __slots__ = ("host_ip", "host_port", "protocol", "container_port")

    def __init__(self, host_ip: str, host_port: int, protocol: str, container_port: int) -> None:
        self.host_ip = host_ip
        self.host_port = host_port
        self.protocol = protocol
        self.container_port = container_port


class PodResources:
    """What a pod's requests come to (see Pod): shared by every pod with the same
    containers, so never changed after it is made."""

    __slots__ = ("requests", "non_zero_requests_list", "resource", "non_zero_cpu", "non_zero_memory")

    def __init__(self, requests: ResourceList, non_zero: ResourceList) -> None:
        self.requests = requests
        self.non_zero_requests_list = non_zero
        self.resource = Resource.from_list(requests)
        self.non_zero_cpu = quantity_in_units(CPU, non_zero.get(CPU, _ZERO))
        self.non_zero_memory = quantity_in_units(MEMORY, non_zero.get(MEMORY, _ZERO))


class Container:
    """A parsed container. Identical containers of different pods (the usual case:
    pods of one template) are one shared object (see `Container.of`), never changed."""

    __slots__ = ("name", "image", "requests", "limits", "ports", "restart_policy", "_alone")

    def __init__(self, raw: object, field: str) -> None:
        if not isinstance(raw, Mapping):
            raise ValidationError(field, "must be an object")
        self.name = _str(raw, "name", field)
        self.image = _str(raw, "image", field)
        res = _map(raw, "resources", field)
        self.requests = parse_resource_list(res.get("requests"), f"{field}.resources.requests")
        self.limits = parse_resource_list(res.get("limits"), f"{field}.resources.limits")
        # Kubernetes defaults requests to limits when only limits are given.
        for k, v in self.limits.items():
            self.requests.setdefault(k, v)
        self.restart_policy = _str(raw, "restartPolicy", field)
        ports: list[ContainerPort] = []
        for i, p in enumerate(_list(raw, "ports", field)):
            pf = f"{field}.ports[{i}]"
            if not isinstance(p, Mapping):
                raise ValidationError(pf, "must be an object")
            hp = _opt_int(p, "hostPort", pf) or 0
            cp = _opt_int(p, "containerPort", pf) or 0
            if not 0 <= hp <= 65535:
                raise ValidationError(f"{pf}.hostPort", "must be between 0 and 65535")
            ports.append(ContainerPort(_str(p, "hostIP", pf), hp, _str(p, "protocol", pf, "TCP") or "TCP", cp))
        self.ports: Sequence[ContainerPort] = ports or _NONE
        self._alone: PodResources | None = None

    @classmethod
    def of(cls, raw: object, field: str) -> "Container":
        """The parsed container, the shared one when an identical container was parsed
        before. Only containers without ports and with string quantities are shared;
        the key holds every field parsing reads."""
        key = _container_key(raw)
        if key is None:
            return cls(raw, field)
        try:
            hit = _CONTAINERS.get(key)
        except TypeError:  # a value that cannot be hashed: the parse names what is wrong
            return cls(raw, field)
        if hit is None:
            hit = cls(raw, field)
            if len(_CONTAINERS) >= _CONTAINERS_MAX:
                _CONTAINERS.clear()
            _CONTAINERS[key] = hit
        return hit

    def alone(self) -> PodResources:
        """The requests of a pod whose only container this is (made once per container)."""
        r = self._alone
        if r is None:
            r = self._alone = PodResources(
                pod_requests([self.requests], [], {}), pod_requests([self.requests], [], {}, non_missing=_NON_MISSING))
        return r


_CONTAINERS: dict[tuple[Any, ...], Container] = {}
_CONTAINERS_MAX = 4096


def _container_key(raw: object) -> tuple[Any, ...] | None:
    if not isinstance(raw, dict) or raw.get("ports"):
        return None
    res = raw.get("resources")
    if res is None:
        req = lim = None
    elif isinstance(res, dict):
        req, lim = res.get("requests"), res.get("limits")
        if not (req is None or isinstance(req, dict)) or not (lim is None or isinstance(lim, dict)):
            return None
    else:
        return None
    key = (raw.get("name"), raw.get("image"), raw.get("restartPolicy"),
           tuple(req.items()) if req else None, tuple(lim.items()) if lim else None)
    # Quantities as strings only: 1, 1.0 and True are equal keys but not equally valid.
    for amounts in (req, lim):
        if amounts and not all(type(v) is str for v in amounts.values()):
            return None
    return key


class Pod(KubeObject):
    """A parsed Pod. Slotted and computed once: what the scheduler reads is a plain
    attribute (requests and their integer forms included); empty sequences are a
    shared empty tuple; labels, node selector and the raw sections are the raw
    dict's own (never changed)."""

    __slots__ = ("spec", "node_name", "scheduler_name", "priority_set", "priority", "priority_class_name",
                 "preemption_policy", "node_selector", "containers", "init_containers", "overhead",
                 "pod_level_requests", "tolerations", "scheduling_gates", "affinity", "required_node_affinity",
                 "preferred_node_affinity", "topology_spread_constraints", "volumes", "phase",
                 "nominated_node_name", "conditions", "start_time", "requests", "non_zero_requests_list",
                 "resource", "non_zero_cpu", "non_zero_memory", "host_ports", "has_pod_affinity")
    kind = "Pod"

    def __init__(self, raw: Mapping[str, Any]) -> None:
        super().__init__(raw)
        spec = _map(raw, "spec", "")
        self.spec = spec
        self.node_name = _str(spec, "nodeName", "spec")
        self.scheduler_name = _str(spec, "schedulerName", "spec") or DEFAULT_SCHEDULER_NAME
        prio = _opt_int(spec, "priority", "spec")
        self.priority_set = prio is not None
        self.priority = prio or 0
        self.priority_class_name = _str(spec, "priorityClassName", "spec")
        self.preemption_policy = _str(spec, "preemptionPolicy", "spec") or "PreemptLowerPriority"
        self.node_selector = _str_map(spec, "nodeSelector", "spec")
        self.containers: Sequence[Container] = [
            Container.of(c, f"spec.containers[{i}]") for i, c in enumerate(_list(spec, "containers", "spec"))] or _NONE
        self.init_containers: Sequence[Container] = [
            Container.of(c, f"spec.initContainers[{i}]") for i, c in enumerate(_list(spec, "initContainers", "spec"))
        ] or _NONE
        self.overhead: Mapping[str, Fraction] = parse_resource_list(spec.get("overhead"), "spec.overhead") or _NO_MAP
        pod_res = _map(spec, "resources", "spec")
        pod_level = parse_resource_list(pod_res.get("requests"), "spec.resources.requests")
        for k, v in parse_resource_list(pod_res.get("limits"), "spec.resources.limits").items():
            pod_level.setdefault(k, v)
        self.pod_level_requests: Mapping[str, Fraction] = pod_level or _NO_MAP
        self.tolerations: Sequence[Toleration] = self._tolerations(spec)
        self.scheduling_gates: Sequence[str] = [
            g.get("name", "") if isinstance(g, Mapping) else "" for g in _list(spec, "schedulingGates", "spec")] or _NONE
        self.affinity = _map(spec, "affinity", "spec")
        for section in ("podAffinity", "podAntiAffinity"):  # read raw by the cache and InterPodAffinity
            _map(self.affinity, section, "spec.affinity")
        self._node_affinity()
        self.topology_spread_constraints = _list(spec, "topologySpreadConstraints", "spec")
        self.volumes = self._volumes(spec)
        self._status(_map(raw, "status", ""))
        self._derive()

    def _status(self, status: Mapping[str, Any]) -> None:
        self.phase = _str(status, "phase", "status") or "Pending"
        self.nominated_node_name = _str(status, "nominatedNodeName", "status")
        self.conditions = _list(status, "conditions", "status")
        st = status.get("startTime")
        self.start_time = parse_time(st, "status.startTime") if st is not None else None

    def _derive(self) -> None:
        """Requests (resourcehelper.PodRequests), their non-zero form for scoring and
        the integer units (framework.Resource), host ports and the affinity flag."""
        if len(self.containers) == 1 and not self.init_containers and not self.overhead \
                and not self.pod_level_requests:
            r = self.containers[0].alone()  # the usual pod: shared with its container
        else:
            containers = [c.requests for c in self.containers]
            inits = [(c.requests, c.restart_policy == "Always") for c in self.init_containers]
            r = PodResources(pod_requests(containers, inits, self.overhead, self.pod_level_requests),
                             pod_requests(containers, inits, self.overhead, self.pod_level_requests,
                                          non_missing=_NON_MISSING))
        self.requests: ResourceList = r.requests
        self.non_zero_requests_list: ResourceList = r.non_zero_requests_list
        self.resource: Resource = r.resource
        self.non_zero_cpu: int = r.non_zero_cpu
        self.non_zero_memory: int = r.non_zero_memory
        # Ports with a hostPort, from sidecar init containers (restartPolicy Always,
        # they run for the pod's whole life) and containers (upstream's GetHostPorts).
        sidecars = [c for c in self.init_containers if c.restart_policy == "Always"]
        self.host_ports: Sequence[ContainerPort] = [
            p for c in (*sidecars, *self.containers) for p in c.ports if p.host_port > 0] or _NONE
        self.has_pod_affinity = bool(self.affinity.get("podAffinity") or self.affinity.get("podAntiAffinity"))

    def _tolerations(self, spec: Mapping[str, Any]) -> Sequence[Toleration]:
        out = []
        for i, t in enumerate(_list(spec, "tolerations", "spec")):
            f = f"spec.tolerations[{i}]"
            if not isinstance(t, Mapping):
                raise ValidationError(f, "must be an object")
            op = _str(t, "operator", f) or "Equal"
            if op not in ("Equal", "Exists", "Lt", "Gt"):
                raise ValidationError(f"{f}.operator", f"unsupported operator {op!r}")
            out.append(Toleration(_str(t, "key", f), op, _str(t, "value", f), _str(t, "effect", f),
                                  _opt_int(t, "tolerationSeconds", f)))
        return out or _NONE

    @staticmethod
    def _volumes(spec: Mapping[str, Any]) -> Sequence[Any]:
        """spec.volumes, each an object whose sources are objects (the cache and the
        volume plugins read them raw, for this pod and for every pod on a node)."""
        volumes = _list(spec, "volumes", "spec")
        for i, v in enumerate(volumes):
            if not isinstance(v, Mapping):
                raise ValidationError(f"spec.volumes[{i}]", "must be an object")
            for source, body in v.items():
                if source != "name" and body is not None and not isinstance(body, Mapping):
                    raise ValidationError(f"spec.volumes[{i}].{source}", "must be an object")
        return volumes

    def _node_affinity(self) -> None:
        na = _map(self.affinity, "nodeAffinity", "spec.affinity")
        field = "spec.affinity.nodeAffinity"
        req = na.get("requiredDuringSchedulingIgnoredDuringExecution")
        self.required_node_affinity: NodeSelector | None = (
            NodeSelector.parse(req, f"{field}.requiredDuringSchedulingIgnoredDuringExecution") if req is not None else None
        )
        preferred: list[tuple[int, Any]] = []
        for i, p in enumerate(_list(na, "preferredDuringSchedulingIgnoredDuringExecution", field)):
            pf = f"{field}.preferredDuringSchedulingIgnoredDuringExecution[{i}]"
            if not isinstance(p, Mapping):
                raise ValidationError(pf, "must be an object")
            w = _opt_int(p, "weight", pf) or 0
            preferred.append((w, parse_node_selector_term(p.get("preference") or {}, f"{pf}.preference")))
        self.preferred_node_affinity: Sequence[tuple[int, Any]] = preferred or _NONE

    # --- copies sharing what is parsed ----------------------------------------------------

    def _copy(self) -> "Pod":
        c = Pod.__new__(Pod)
        for name in _POD_SLOTS:
            setattr(c, name, getattr(self, name))
        return c

    def with_node_name(self, node_name: str) -> "Pod":
        """This pod with spec.nodeName set (the scheduler's assumed copy), sharing
        everything already parsed or derived from it: nothing of that depends on
        the node name."""
        c = self._copy()
        raw = dict(self.raw)
        c.spec = raw["spec"] = {**self.spec, "nodeName": node_name}
        c.raw = raw
        c.node_name = node_name
        return c

    def with_server_fields(self, raw: Mapping[str, Any]) -> "Pod":
        """The parsed form of `raw`, a newer version of this pod that differs from it
        only in metadata.resourceVersion, spec.nodeName and status (what the store's
        binding and status writes change): those are read again, the rest shared."""
        c = self._copy()
        c.raw = raw
        c.meta = ObjectMeta(raw, True)
        c.spec = spec = _map(raw, "spec", "")
        c.node_name = _str(spec, "nodeName", "spec")
        c._status(_map(raw, "status", ""))
        return c

    @property
    def has_required_anti_affinity(self) -> bool:
        anti = self.affinity.get("podAntiAffinity") or {}
        return bool(anti.get("requiredDuringSchedulingIgnoredDuringExecution"))

    @property
    def pod_group(self) -> str:
        return self.labels.get(POD_GROUP_LABEL, "")

    @property
    def is_terminal(self) -> bool:
        return self.phase in ("Succeeded", "Failed")

    @property
    def is_deleting(self) -> bool:
        return self.meta.deletion_timestamp is not None


_POD_SLOTS = (*KubeObject.__slots__, *Pod.__slots__)


class Node(KubeObject):
    kind = "Node"
    namespaced = False

    def __init__(self, raw: Mapping[str, Any]) -> None:
        super().__init__(raw)
        spec = _map(raw, "spec", "")
        status = _map(raw, "status", "")
        unsched = spec.get("unschedulable", False)
        if not isinstance(unsched, bool):
            raise ValidationError("spec.unschedulable", "must be a boolean")
        self.unschedulable = unsched
        self.taints: list[Taint] = []
        for i, t in enumerate(_list(spec, "taints", "spec")):
            f = f"spec.taints[{i}]"
            if not isinstance(t, Mapping):
                raise ValidationError(f, "must be an object")
            key = _str(t, "key", f)
            if not key:
                raise ValidationError(f"{f}.key", "is required")
            effect = _str(t, "effect", f)
            if effect not in ("NoSchedule", "PreferNoSchedule", "NoExecute"):
                raise ValidationError(f"{f}.effect", f"unsupported effect {effect!r}")
            self.taints.append(Taint(key, _str(t, "value", f), effect))
        self.capacity = parse_resource_list(status.get("capacity"), "status.capacity")
        self.allocatable_list = parse_resource_list(status.get("allocatable"), "status.allocatable")
        self.allocatable = Resource.from_list(self.allocatable_list)
        self.images: list[tuple[list[str], int]] = []
        for i, img in enumerate(_list(status, "images", "status")):
            f = f"status.images[{i}]"
            if not isinstance(img, Mapping):
                raise ValidationError(f, "must be an object")
            names = img.get("names") or []
            if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
                raise ValidationError(f"{f}.names", "must be a list of strings")
            self.images.append((names, _opt_int(img, "sizeBytes", f) or 0))


class PodGroup(KubeObject):
    kind = "PodGroup"

    def __init__(self, raw: Mapping[str, Any]) -> None:
        super().__init__(raw)
        spec = _map(raw, "spec", "")
        mm = _opt_int(spec, "minMember", "spec")
        if mm is None:
            mm = 0
        if mm < 0:
            raise ValidationError("spec.minMember", "must be greater than or equal to 0")
        self.min_member = mm
        self.min_resources = parse_resource_list(spec.get("minResources"), "spec.minResources") if spec.get("minResources") is not None else None
        t = _opt_int(spec, "scheduleTimeoutSeconds", "spec")
        if t is not None and t < 0:
            raise ValidationError("spec.scheduleTimeoutSeconds", "must be greater than or equal to 0")
        self.schedule_timeout_seconds = t
        self.status = _map(raw, "status", "")


class PriorityClass(KubeObject):
    kind = "PriorityClass"
    namespaced = False

    def __init__(self, raw: Mapping[str, Any]) -> None:
        super().__init__(raw)
        v = raw.get("value")
        if isinstance(v, bool) or not isinstance(v, int):
            raise ValidationError("value", "must be an integer")
        if v > 1_000_000_000 and not self.name.startswith("system-"):
            raise ValidationError("value", "must be at most 1000000000 for user priority classes")
        self.value = v
        gd = raw.get("globalDefault", False)
        if not isinstance(gd, bool):
            raise ValidationError("globalDefault", "must be a boolean")
        self.global_default = gd
        self.preemption_policy = _str(raw, "preemptionPolicy", "") or "PreemptLowerPriority"


class SelectorObject(KubeObject):
    """Service, ReplicationController, ReplicaSet, StatefulSet: what SelectorSpread reads."""

    def __init__(self, raw: Mapping[str, Any]) -> None:
        super().__init__(raw)
        spec = _map(raw, "spec", "")
        sel = spec.get("selector")
        self.selector: LabelSelector | None
        if sel is None:
            self.selector = None
        elif self.kind in ("Service", "ReplicationController"):
            if not isinstance(sel, Mapping) or not all(isinstance(v, str) for v in sel.values()):
                raise ValidationError("spec.selector", "must be a map of strings to strings")
            self.selector = LabelSelector.from_map(sel) if sel else None
        else:
            self.selector = LabelSelector.parse(sel, "spec.selector")


class Service(SelectorObject):
    kind = "Service"


class ReplicationController(SelectorObject):
    kind = "ReplicationController"


class ReplicaSet(SelectorObject):
    kind = "ReplicaSet"


class StatefulSet(SelectorObject):
    kind = "StatefulSet"


class PodDisruptionBudget(KubeObject):
    kind = "PodDisruptionBudget"

    def __init__(self, raw: Mapping[str, Any]) -> None:
        super().__init__(raw)
        spec = _map(raw, "spec", "")
        self.selector = LabelSelector.parse(spec.get("selector"), "spec.selector")
        status = _map(raw, "status", "")
        self.disruptions_allowed = _opt_int(status, "disruptionsAllowed", "status") or 0
        self.disrupted_pods = _map(status, "disruptedPods", "status")


class Namespace(KubeObject):
    kind = "Namespace"
    namespaced = False


BETA_STORAGE_CLASS_ANNOTATION = "volume.beta.kubernetes.io/storage-class"


def _str_list(raw: Mapping[str, Any], key: str, field: str) -> list[str]:
    v = _list(raw, key, field)
    if not all(isinstance(x, str) for x in v):
        raise ValidationError(f"{field}.{key}", "must be a list of strings")
    return v


class PersistentVolumeClaim(KubeObject):
    """v1 PersistentVolumeClaim: what the volume plugins read."""

    kind = "PersistentVolumeClaim"

    def __init__(self, raw: Mapping[str, Any]) -> None:
        super().__init__(raw)
        spec = _map(raw, "spec", "")
        status = _map(raw, "status", "")
        self.volume_name = _str(spec, "volumeName", "spec")
        self.storage_class_name = _str(spec, "storageClassName", "spec")
        self.access_modes = _str_list(spec, "accessModes", "spec")
        self.phase = _str(status, "phase", "status") or "Pending"

    @property
    def storage_class(self) -> str:
        """The claim's class: the beta annotation wins over spec.storageClassName
        (upstream's GetPersistentVolumeClaimClass); "" for none."""
        beta = self.meta.annotations.get(BETA_STORAGE_CLASS_ANNOTATION)
        return beta if beta is not None else self.storage_class_name


class PersistentVolume(KubeObject):
    """v1 PersistentVolume: what the volume plugins read."""

    kind = "PersistentVolume"
    namespaced = False

    def __init__(self, raw: Mapping[str, Any]) -> None:
        super().__init__(raw)
        spec = _map(raw, "spec", "")
        affinity = _map(spec, "nodeAffinity", "spec")
        req = affinity.get("required")
        self.required_node_affinity: NodeSelector | None = (
            NodeSelector.parse(req, "spec.nodeAffinity.required") if req is not None else None
        )
        self.storage_class_name = _str(spec, "storageClassName", "spec")
        csi = _map(spec, "csi", "spec")
        # CSI source: the driver and its id for the volume ("" when not a CSI volume).
        self.csi_driver = _str(csi, "driver", "spec.csi")
        self.csi_volume_handle = _str(csi, "volumeHandle", "spec.csi")


class StorageObject(KubeObject):
    """A storage.k8s.io/v1 object the volume plugins read as JSON (StorageClass,
    CSINode, CSIDriver, VolumeAttachment): cluster-scoped, no parsing beyond metadata.
    The store holds and validates them (framework.api.schema.kinds)."""

    namespaced = False


class StorageClass(StorageObject):
    kind = "StorageClass"


class CSINode(StorageObject):
    kind = "CSINode"


class CSIDriver(StorageObject):
    kind = "CSIDriver"


class VolumeAttachment(StorageObject):
    kind = "VolumeAttachment"


KINDS: dict[str, type[KubeObject]] = {
    cls.kind: cls
    for cls in (Pod, Node, PodGroup, PriorityClass, Service, ReplicationController, ReplicaSet, StatefulSet,
                PodDisruptionBudget, Namespace, PersistentVolumeClaim, PersistentVolume, StorageClass, CSINode,
                CSIDriver, VolumeAttachment)
}


def parse_object(raw: Mapping[str, Any]) -> KubeObject:
    """Build the typed object for `raw["kind"]`."""
    if not isinstance(raw, Mapping):
        raise ValidationError("", "object must be a map")
    kind = raw.get("kind")
    cls = KINDS.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise ValidationError("kind", f"unsupported kind {kind!r}; expected one of {', '.join(sorted(KINDS))}")
    try:
        return cls(raw)
    except ValidationError:
        raise
    except (TypeError, ValueError, AttributeError, KeyError, IndexError, OverflowError, RecursionError) as e:
        # The schema (framework.api.schema) refuses bad shapes first; this keeps the
        # contract for callers that parse without it: bad input is a ValidationError.
        raise ValidationError("", f"{kind} cannot be parsed: {type(e).__name__}: {e}") from None
