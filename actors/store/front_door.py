"""The one admission of each object written to the store, for every front door
(msgpack, REST, CLI, in-process writers): `admission` copies it without its null
fields and walks its kind's schema once (framework.api.schema.admit). For a write
that says how to treat unknown fields (messages.Create's field_validation), the
same walk serves kube-apiserver's decode stage (framework.api.decode: apiVersion,
unknown fields), followed by its NamespaceLifecycle admission (a namespaced object
goes into a namespace that exists; `default`, `kube-system` and `kube-public`
always do). In-process writers (the bench, the conformance driver) send no
field_validation and skip the decode stage.

This is the write chain's decode stage (actors/store/write_chain.py); defaulting
is each kind's strategy (actors/store/strategies.py). The pod strategy's create-time
status (`created_pod_status`: phase Pending, qosClass) and condition
(`gated_condition`) apply to every pod created (WriteRules.pod_create_status)."""
from __future__ import annotations

from typing import Any, Callable

from actors.store.messages import BadRequest, NotFound
from framework.api.decode import DecodeError, decodable, unknown_field_warnings
from framework.api.groups import kind_key
from framework.api.objects import KINDS
from framework.api.qos import pod_qos_class
from framework.api.schema import Admission, admit
from framework.kueue.versions import to_storage

BUILTIN_NAMESPACES = frozenset({"default", "kube-system", "kube-public"})
# NamespaceLifecycle's immortal namespaces: deleting one is Forbidden.
IMMORTAL_NAMESPACES = BUILTIN_NAMESPACES
# Kinds whose objects a controller would act on; ksched runs none.
WORKLOADS = frozenset({"ReplicaSet", "StatefulSet", "ReplicationController"})


def admission(raw: Any, mode: str | None, strict: bool, namespace_exists: Callable[[str], bool],
              warnings: list[str] | None) -> Admission:
    """`raw` admitted (framework.api.schema.admit; strict: name formats, as the
    store's WriteRules.name_formats). With fieldValidation `mode` it is decoded as well:
    BadRequest when it cannot be (a wrong apiVersion; unknown fields under Strict),
    NotFound when its namespace does not exist; unknown fields are dropped from the
    copy, and what the client should be told is added to `warnings`. The schema's
    errors are the caller's to refuse (after the decode stage's, as upstream).
    An object of a kind served in several versions is checked in the version it is
    written in and kept in its storage version (Kueue's v1beta1 as v1beta2)."""
    if mode is None:
        return _in_storage_version(admit(raw, strict))
    try:
        decoded = decodable(raw, mode)
        checked = admit(raw, strict, unknown=decoded)
        said = unknown_field_warnings(raw, checked.unknown, mode) if decoded else []
    except DecodeError as e:
        raise BadRequest(e.message) from None
    out = checked.raw
    kind = kind_key(out)
    cls = KINDS.get(kind) if kind is not None else None
    if cls is not None and cls.namespaced:
        meta = out.get("metadata")
        ns = meta.get("namespace") if isinstance(meta, dict) else None
        ns = ns if isinstance(ns, str) and ns else "default"
        if ns not in BUILTIN_NAMESPACES and not namespace_exists(ns):
            raise NotFound(f'namespaces "{ns}" not found')
    if kind in WORKLOADS:
        said.append(f"ksched runs no controllers: no pods will be created from this {kind}")
    if warnings is not None:
        warnings.extend(said)
    return _in_storage_version(checked)


def _in_storage_version(checked: Admission) -> Admission:
    if not checked.errors:
        checked.raw = to_storage(checked.raw)
    return checked


SCHEDULING_GATED = {"type": "PodScheduled", "status": "False", "reason": "SchedulingGated",
                    "message": "Scheduling is blocked due to non-empty scheduling gates"}


def created_pod_status(pod: dict[str, Any]) -> dict[str, Any]:
    """The status the pod strategy's PrepareForCreate gives a new pod: phase Pending and
    its QoS class (framework.api.qos). Upstream replaces the whole status; a status a
    writer gives (in-process writers seed bound or finished pods) is kept here, with
    Pending only where it names no phase. The class is always computed: a client
    cannot choose it. `pod` is the store's own copy; its status is copied before it changes."""
    status = pod.get("status") if isinstance(pod.get("status"), dict) else {}
    pod["status"] = {**status, "phase": status.get("phase") or "Pending", "qosClass": pod_qos_class(pod)}
    return pod


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
