"""The store's write chain: one for every kind and both verbs, in kube-apiserver's order.

  prepare               server-owned fields (fields.py), fields of disabled features (gates.py)
  decode                fieldValidation, apiVersion, unknown fields, NamespaceLifecycle and the
                        kind's schema (front_door.admission); the first schema error is refused here
  default               the kind's strategy (strategies.py)
  mutating admission    a new pod's priority (admission.py) and Kueue's pod defaults
  prepare for create    a new pod's status and SchedulingGated condition (the pod strategy)
  validate              the object parsed as its kind; on update the resourceVersion precondition,
                        the kind's update rules (strategies.py) and no new finalizers while deleting
  validating admission  PriorityClass rules (admission.py)

then the store writes it (actor.py: AlreadyExists, the size limit, resourceVersion).
What differs by kind is in the strategies' registry, never in this file; what the
client should be told comes back in `Admitted.warnings`.

`WriteRules` are the knobs, one effect each; the conformance driver's store uses
AS_WRITTEN (upstream's cases store objects as a fake clientset would: names such as
"p_without_nominated_node", chosen uids and creationTimestamps, their own statuses).
"""
from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Callable

from actors.store.claim_specs import AdmittedClaimSpecs
from actors.store.admission import (
    admit_pod, admit_pod_group, admit_workload, check_priority_class,
    kept_group_priority,
)
from actors.store.fields import for_new_object, for_replacement
from actors.store.finalizers import check_no_new_finalizers
from actors.store.front_door import admission, decoded
from actors.store.gates import gated
from actors.store.messages import Conflict, Invalid, refuse
from actors.store.sharing import share_containers
from actors.store.strategies import strategy
from framework.api.errors import ValidationError
from framework.api.groups import POD_GROUP_KEY, WORKLOAD_KEY, kind_key
from framework.api.objects import KubeObject, PriorityClass, parse_object
from framework.api.workload_api import WORKLOAD_AWARE_PREEMPTION
from framework.features import FeatureGates
from framework.kueue.pods import kueue_pod_defaults


@dataclass(frozen=True, slots=True, kw_only=True)
class WriteRules:
    """name_formats: the schema checks name formats and a pod's containers (decode);
    server_fields: the server sets uid, creationTimestamp, generation and keeps them on
    replacement, whatever the writer sent (off: what the writer set is kept, only what
    is missing is filled: fields.py's as_given);
    pod_create_status: a new pod gets phase Pending, its qosClass and the
    SchedulingGated condition (off: its status stays as written)."""

    name_formats: bool = True
    server_fields: bool = True
    pod_create_status: bool = True


STRICT = WriteRules()
AS_WRITTEN = WriteRules(name_formats=False, server_fields=False, pod_create_status=False)


@dataclass(slots=True, kw_only=True)
class Admitted:
    """An object through the chain: the store's own raw dict, parsed as its kind."""

    raw: dict[str, Any]
    obj: KubeObject
    warnings: list[str] = field(default_factory=list)


def parsed(raw: Any, kind: str | None = None) -> KubeObject:
    """`raw` parsed as its kind (or `kind` when it names none), or Invalid naming the field."""
    if isinstance(raw, Mapping) and kind and "kind" not in raw:
        raw = {**raw, "kind": kind}
    try:
        return parse_object(raw)
    except ValidationError as e:
        raise Invalid(str(e), e.field) from None


class WriteChain:
    """The chain over the store's objects (read only here: namespaces, PriorityClasses, PodGroups)."""

    def __init__(self, objects: Mapping[str, Mapping[str, KubeObject]], clock: Callable[[], float],
                 rand: random.Random, rules: WriteRules) -> None:
        self._objects = objects
        self._clock = clock
        self._rand = rand
        self.rules = rules
        self.features = FeatureGates()  # the daemon's gates (gates.py); the Pipeline sets them on the store
        self.claim_specs = AdmittedClaimSpecs()

    def create(self, raw: Any, fv: str | None, template: str = "") -> Admitted:
        """`template`: messages.Create's (a claim whose spec is that template's admitted one)."""
        said: list[str] = []
        spec = self.claim_specs.proven(raw, template)
        if spec is not None:  # admitted with its template: the rest is walked, the spec shared
            raw = {k: v for k, v in raw.items() if k != "spec"}
        raw = for_new_object(raw, self._clock(), self._rand, as_given=not self.rules.server_fields)
        raw = decoded(gated(raw, None, self.features), fv, self.rules.name_formats, self._namespace_exists, said)
        kind = strategy(kind_key(raw))
        raw = kind.defaulted(raw) if isinstance(raw, dict) else raw
        if spec is not None:  # defaulted with its template (defaulting is idempotent)
            raw = {**raw, "spec": spec}
        is_pod = isinstance(raw, Mapping) and raw.get("kind") == "Pod"
        if is_pod:
            raw = kind.prepared(self._admit_pod(raw), self.rules.pod_create_status)  # a copy with its own spec
            share_containers(raw)
        elif self._admits_group_priority(raw):
            raw = self._admit_group(raw)
        obj = parsed(raw)
        if isinstance(obj, PriorityClass):
            self._admit_priority_class(obj, None)
        self.claim_specs.note(obj)
        return Admitted(raw=raw, obj=obj, warnings=said)

    def update(self, raw: Any, current: KubeObject, fv: str | None) -> Admitted:
        said: list[str] = []
        raw = gated(raw, current.raw, self.features)
        if isinstance(raw, dict):
            raw = strategy(kind_key(raw)).prepared_for_update(raw, current.raw)
        raw = decoded(raw, fv, self.rules.name_formats, self._namespace_exists, said)
        if kind_key(raw) == POD_GROUP_KEY and isinstance(raw, Mapping):
            raw = kept_group_priority(raw, current.raw)  # before the generation is judged
        raw = for_replacement(raw, current.raw, as_given=not self.rules.server_fields)
        raw = strategy(kind_key(raw)).defaulted(raw) if isinstance(raw, dict) else raw
        obj = parsed(raw)
        _check_rv(obj, current)
        refuse(strategy(obj.kind).update_errors(raw, current.raw))
        check_no_new_finalizers(raw, current.raw)
        if isinstance(obj, PriorityClass) and isinstance(current, PriorityClass):
            self._admit_priority_class(obj, current)
        self.claim_specs.note(obj)
        return Admitted(raw=raw, obj=obj, warnings=said)

    def missing(self, raw: Any, fv: str | None) -> KubeObject:
        """An update's object that is not stored, decoded and parsed to name it in NotFound."""
        return parsed(admission(raw, fv, self.rules.name_formats, self._namespace_exists, []).raw)

    def _namespace_exists(self, ns: str) -> bool:
        return ns in self._objects["Namespace"]

    def _admit_pod(self, raw: Any) -> Any:
        try:
            return kueue_pod_defaults(admit_pod(raw, self._priority_classes()), self._objects["PodGroup"])
        except ValidationError as e:
            raise Invalid(str(e), e.field) from None

    def _admits_group_priority(self, raw: Any) -> bool:
        return (isinstance(raw, Mapping) and kind_key(raw) in (POD_GROUP_KEY, WORKLOAD_KEY)
                and self.features.enabled(WORKLOAD_AWARE_PREEMPTION))

    def _admit_group(self, raw: Any) -> Any:
        admit = admit_pod_group if kind_key(raw) == POD_GROUP_KEY else admit_workload
        try:
            return admit(raw, self._priority_classes())
        except ValidationError as e:
            raise Invalid(str(e), e.field) from None

    def _admit_priority_class(self, pc: PriorityClass, current: PriorityClass | None) -> None:
        try:
            check_priority_class(pc, current, self._priority_classes())
        except ValidationError as e:
            raise Invalid(str(e), e.field) from None

    def _priority_classes(self) -> dict[str, PriorityClass]:
        return {pc.name: pc for pc in self._objects["PriorityClass"].values() if isinstance(pc, PriorityClass)}


def _check_rv(obj: KubeObject, current: KubeObject) -> None:
    """An update naming a resourceVersion must name the stored one."""
    want = obj.meta.resource_version
    if want and want != current.meta.resource_version:
        raise Conflict(f'Operation cannot be fulfilled on {obj.kind} "{obj.key}": '
                       "the object has been modified; please apply your changes to the latest version and try again")
