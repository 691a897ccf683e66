"""Per-kind strategies of the store's write chain (actors/store/write_chain.py), as
kube-apiserver's registry gives each resource a strategy: what defaulting fills in
and which rules a create or an update of that kind must pass beyond its schema.

One registry, `STRATEGIES`, keyed by the store's kind key; a kind without an entry
gets `PLAIN` (no defaulting, no extra rules). Rules are pure functions over raw
objects returning ValidationErrors (the chain refuses the first, naming its field):
add a kind's rules by giving it a strategy here (`register`), never by a branch in
the chain.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from actors.store.sharing import exact_key
from framework.api.errors import ValidationError
from framework.api.groups import POD_GROUP_KEY, WORKLOAD_KEY
from framework.api.qos import pod_qos_class
from framework.api.schema.dra_status import drop_deallocated_status_devices
from framework.api.schema.dra_update import dra_defaults, validate_dra_update
from framework.api.validation import validate_pod_update
from framework.api.workload_api import update_errors

Raw = dict[str, Any]
UpdateRule = Callable[[Mapping[str, Any], Mapping[str, Any]], list[ValidationError]]
Defaulter = Callable[[Raw], Raw]
UpdatePreparer = Callable[[Any, Mapping[str, Any]], Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class KindStrategy:
    """`default`: fills what a client left out (the store's own copy, returned);
    `prepare_for_create`: what the server sets on a new object after admission
    (skipped under WriteRules.pod_create_status off: the only kind with one is Pod);
    `prepare_for_update`: what the server changes in an update given the stored object,
    before the update is decoded and checked;
    `validate_update`: the rules an update must pass against the stored object."""

    default: tuple[Defaulter, ...] = ()
    prepare_for_create: tuple[Defaulter, ...] = ()
    prepare_for_update: tuple[UpdatePreparer, ...] = ()
    validate_update: tuple[UpdateRule, ...] = field(default=())

    def defaulted(self, raw: Raw) -> Raw:
        for step in self.default:
            raw = step(raw)
        return raw

    def prepared(self, raw: Raw, server_status: bool) -> Raw:
        if server_status:
            for step in self.prepare_for_create:
                raw = step(raw)
        return raw

    def prepared_for_update(self, raw: Any, old: Mapping[str, Any]) -> Any:
        for step in self.prepare_for_update:
            raw = step(raw, old)
        return raw

    def update_errors(self, new: Mapping[str, Any], old: Mapping[str, Any]) -> list[ValidationError]:
        return [e for rule in self.validate_update for e in rule(new, old)]


PLAIN = KindStrategy()
# Kueue's finalizer on what a ClusterQueue or a workload uses (kueue.ResourceInUseFinalizerName)
RESOURCE_IN_USE = "kueue.x-k8s.io/resource-in-use"
IN_USE_KINDS = frozenset({"ResourceFlavor", "ClusterQueue"})


def _in_use_finalizer(raw: Raw) -> Raw:
    """Kueue's webhooks' Default: a ResourceFlavor or ClusterQueue not being deleted
    carries the resource-in-use finalizer."""
    meta = raw.get("metadata")
    if isinstance(meta, dict) and not meta.get("deletionTimestamp"):
        have = meta.get("finalizers") if isinstance(meta.get("finalizers"), list) else []
        if RESOURCE_IN_USE not in have:
            raw["metadata"] = {**meta, "finalizers": [*have, RESOURCE_IN_USE]}
    return raw


def _node_allocatable(raw: Raw) -> Raw:
    """SetDefaults_NodeStatus: status.allocatable is the capacity when left out."""
    status = raw.get("status")
    if isinstance(status, dict) and status.get("capacity") and status.get("allocatable") is None:
        raw["status"] = {**status, "allocatable": dict(status["capacity"])}
    return raw


SCHEDULING_GATED = {"type": "PodScheduled", "status": "False", "reason": "SchedulingGated",
                    "message": "Scheduling is blocked due to non-empty scheduling gates"}


def created_pod_status(pod: dict[str, Any]) -> dict[str, Any]:
    """The status the pod strategy's PrepareForCreate gives a new pod: phase Pending and
    its QoS class (framework.api.qos). Upstream replaces the whole status; a status a
    writer gives (in-process writers seed bound or finished pods) is kept here, with
    Pending only where it names no phase. The class is always computed: a client
    cannot choose it. `pod` is the store's own copy; its status is copied before it changes."""
    status = pod.get("status") if isinstance(pod.get("status"), dict) else {}
    pod["status"] = {**status, "phase": status.get("phase") or "Pending", "qosClass": _qos_class(pod)}
    return pod


MAX_QOS_CLASSES = 4096
_QOS_CLASSES: dict[bytes, str] = {}
_LAST_CLASSED: list[Any] = [None, ""]  # the spec classed last (held, so its identity stays its own), its class


def _qos_class(pod: dict[str, Any]) -> str:
    """pod_qos_class, remembered by the exact encoding (sharing.exact_key) of all it
    reads: the spec's resources, containers and initContainers. Pods made from one
    template are classed once (the class costs ~20 us a pod, the key ~3 us). A spec
    that is the one classed last (pods sharing one admitted spec, pod_specs.py) is not
    encoded again: the store's specs are never changed in place (share_containers
    swaps in an equal list)."""
    spec = pod.get("spec")
    if spec is _LAST_CLASSED[0] and spec is not None:
        return _LAST_CLASSED[1]
    key = exact_key([spec.get("resources"), spec.get("containers"), spec.get("initContainers")]) \
        if type(spec) is dict else None
    if key is None:
        return pod_qos_class(pod)
    qos = _QOS_CLASSES.get(key)
    if qos is None:
        if len(_QOS_CLASSES) >= MAX_QOS_CLASSES:
            _QOS_CLASSES.clear()
        qos = _QOS_CLASSES[key] = pod_qos_class(pod)
    _LAST_CLASSED[0], _LAST_CLASSED[1] = spec, qos
    return qos


def gated_condition(pod: dict[str, Any]) -> dict[str, Any]:
    """A pod created with scheduling gates and no PodScheduled condition gets
    PodScheduled=False, reason SchedulingGated (the pod strategy's PrepareForCreate).
    `pod` is the store's own copy; its status is copied before it changes."""
    spec = pod.get("spec")
    if not isinstance(spec, dict) or not spec.get("schedulingGates"):
        return pod
    status = pod.get("status") if isinstance(pod.get("status"), dict) else {}
    conds = status.get("conditions") if isinstance(status.get("conditions"), list) else []
    if any(isinstance(c, dict) and c.get("type") == "PodScheduled" for c in conds):
        return pod
    pod["status"] = {**status, "conditions": [*conds, dict(SCHEDULING_GATED)]}
    return pod


STRATEGIES: dict[str, KindStrategy] = {
    "Pod": KindStrategy(prepare_for_create=(created_pod_status, gated_condition), validate_update=(validate_pod_update,)),
    "Node": KindStrategy(default=(_node_allocatable,)),
    **{kind: KindStrategy(default=(_in_use_finalizer,)) for kind in IN_USE_KINDS},
    # dra_defaults: requests' allocationMode and count
    "ResourceClaim": KindStrategy(default=(dra_defaults,), prepare_for_update=(drop_deallocated_status_devices,),
                                  validate_update=(validate_dra_update,)),
    "ResourceClaimTemplate": KindStrategy(default=(dra_defaults,), validate_update=(validate_dra_update,)),
    "ResourceSlice": KindStrategy(validate_update=(validate_dra_update,)),
    # what an update of a Workload or PodGroup may not change
    **{kind: KindStrategy(validate_update=(update_errors,)) for kind in (WORKLOAD_KEY, POD_GROUP_KEY)},
}


def register(kind: str, strategy: KindStrategy) -> None:
    """Give `kind` its strategy (replacing the one it had)."""
    STRATEGIES[kind] = strategy


def strategy(kind: str | None) -> KindStrategy:
    return STRATEGIES.get(kind or "", PLAIN)
