"""The parsed Pod and its containers: requests and their integer forms, host ports,
tolerations, node affinity and volumes, computed once per object (containers shared
between pods of one template)."""
from __future__ import annotations

from fractions import Fraction
from collections.abc import Mapping, Sequence
from typing import Any

from framework.api.affinity import PodAffinityTerms, parse_pod_affinity
from framework.api.errors import ValidationError
from framework.api.labels import NodeSelector, Toleration, parse_node_selector_term
from framework.api.meta import (
    _NO_MAP, _NONE, KubeObject, ObjectMeta, _list, _map, _opt_int, _str, _str_map, slot_copier, slot_filler,
)
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

DEFAULT_SCHEDULER_NAME = "default-scheduler"
POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"

_ZERO = Fraction(0)
_NON_MISSING = {CPU: Fraction(DEFAULT_MILLI_CPU_REQUEST, 1000), MEMORY: Fraction(DEFAULT_MEMORY_REQUEST)}


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
                 "resource", "non_zero_cpu", "non_zero_memory", "host_ports", "has_pod_affinity",
                 "scheduling_group", "_pod_affinity_terms")
    kind = "Pod"

    def __init__(self, raw: Mapping[str, Any]) -> None:
        super().__init__(raw)
        spec = _map(raw, "spec", "")
        parsed = _PARSED_SPECS.get(id(spec))
        if parsed is not None and parsed.spec is spec:  # a shared spec (share_parsed_spec): parsed once
            _take_spec_part(self, parsed)
            self._status(_map(raw, "status", ""))
            self._pod_affinity_terms = None  # its terms read the labels and namespace too
            return
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
        self.scheduling_group = _scheduling_group(spec)
        self._status(_map(raw, "status", ""))
        self._derive()

    def _status(self, status: Mapping[str, Any]) -> None:
        # inline when a field has its usual type, else its reader (the same value or error)
        v = status.get("phase")
        self.phase = (v if type(v) is str else _str(status, "phase", "status")) or "Pending"
        v = status.get("nominatedNodeName")
        self.nominated_node_name = v if type(v) is str else _str(status, "nominatedNodeName", "status")
        v = status.get("conditions")
        self.conditions = _NONE if v is None else v if type(v) is list else _list(status, "conditions", "status")
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
        self._pod_affinity_terms: PodAffinityTerms | None = None

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
        return _copy_pod(self)

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
        only in metadata, spec.nodeName and status: those are read again, the rest shared."""
        return self._reread(raw, ObjectMeta(raw, True))

    def with_status_written(self, raw: Mapping[str, Any]) -> "Pod":
        """As with_server_fields, for a `raw` whose metadata is this pod's but for its
        resourceVersion (the store's binding and status writes): the metadata is this
        pod's, with that version, not parsed again."""
        return self._reread(raw, self.meta.with_resource_version((raw.get("metadata") or {}).get("resourceVersion")))

    def _reread(self, raw: Mapping[str, Any], meta: ObjectMeta) -> "Pod":
        c = self._copy()
        c.raw = raw
        c.meta = meta
        c.spec = spec = _map(raw, "spec", "")
        c.node_name = _str(spec, "nodeName", "spec")
        c.scheduling_group = _scheduling_group(spec)
        c._status(_map(raw, "status", ""))
        return c

    @property
    def pod_affinity_terms(self) -> PodAffinityTerms:
        """parse_pod_affinity of this pod, parsed on first use and shared with the
        copies made after (with_node_name, with_server_fields change neither the
        affinity nor the labels and namespace its terms read)."""
        terms = self._pod_affinity_terms
        if terms is None:
            terms = self._pod_affinity_terms = parse_pod_affinity(self)
        return terms

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


def _scheduling_group(spec: Mapping[str, Any]) -> str:
    """spec.schedulingGroup.podGroupName: the scheduling.k8s.io PodGroup (same namespace)
    the pod belongs to, "" for none (gate GenericWorkload; the store drops the field while
    the gate is off). A Pod's `scheduling_group`, read once per parse (the gang plugins,
    the handle's index and the queue ask it about a dozen times a member)."""
    group = spec.get("schedulingGroup")
    if group is None:  # the usual pod: no ABC check
        return ""
    name = group.get("podGroupName") if isinstance(group, Mapping) else None
    return name if isinstance(name, str) else ""


_POD_SLOTS = (*KubeObject.__slots__, *Pod.__slots__)
_copy_pod = slot_copier(Pod, _POD_SLOTS)
# What Pod.__init__ reads of the spec alone (not the metadata, not the status).
_SPEC_PART = ("spec", "node_name", "scheduler_name", "priority_set", "priority", "priority_class_name",
              "preemption_policy", "node_selector", "containers", "init_containers", "overhead",
              "pod_level_requests", "tolerations", "scheduling_gates", "affinity", "required_node_affinity",
              "preferred_node_affinity", "topology_spread_constraints", "volumes", "requests",
              "non_zero_requests_list", "resource", "non_zero_cpu", "non_zero_memory", "host_ports",
              "has_pod_affinity", "scheduling_group")
_take_spec_part = slot_filler(_SPEC_PART)
_PARSED_SPECS: dict[int, Pod] = {}  # id of a shared spec -> a pod parsed with it (holding it)
MAX_PARSED_SPECS = 4096


def share_parsed_spec(pod: Pod) -> None:
    """Let each pod parsed later with `pod.spec` itself (the same object, shared by the
    store's pods of one template: actors/store/pod_specs.py) take the spec's parsed part
    from `pod` instead of parsing it again. Only for a spec never changed in place (every
    stored raw dict). Bounded: when full it starts afresh."""
    if len(_PARSED_SPECS) >= MAX_PARSED_SPECS:
        _PARSED_SPECS.clear()
    _PARSED_SPECS[id(pod.spec)] = pod

