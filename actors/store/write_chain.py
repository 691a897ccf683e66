"""The store's write chain: one for every kind and both verbs, in kube-apiserver's order.

  prepare               server-owned fields (fields.py), fields of disabled features (gates.py)
  decode                fieldValidation, apiVersion, unknown fields, NamespaceLifecycle and the
                        kind's schema (front_door.decode_stage); the first schema error is refused here
  default               the kind's strategy (strategies.py)
  mutating admission    admission.mutated: a new pod's priority and Kueue's pod defaults,
                        a scheduling.k8s.io PodGroup's or Workload's priority
  prepare for create    a new pod's status and SchedulingGated condition (the pod strategy)
  validate              the object parsed as its kind; on update the resourceVersion precondition,
                        the kind's update rules (strategies.py) and no new finalizers while deleting
  validating admission  PriorityClass rules (admission.py)

then the store writes it (actor.py: AlreadyExists, the size limit, resourceVersion).
A new pod whose spec was admitted for an earlier pod of its template (pod_specs.py:
same exact encoding, fieldValidation, name formats, PriorityClass basis) takes that
admitted spec: decode keeps it unwalked, priority admission is skipped, and its
parsed part is shared; only its metadata and status go through each stage, and their
walk is remembered per shape (pod_metas.py). An in-process writer's scheduling.k8s.io
PodGroup (a bench's or a controller's create, the group cycle's condition update) is
decoded by a walk remembered per shape too (group_writes.py).
The kind is decided once, at the chain's start (`kind_key`), and handed to each
stage as a value; each stage is entered once and hands on what it decided.
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
from actors.store.admission import admit_pod, check_priority_class, kept_group_priority, mutated, priority_basis
from actors.store.fields import for_new_object, for_replacement
from actors.store.finalizers import check_no_new_finalizers
from actors.store.front_door import decode_stage, decoded
from actors.store.gates import gated
from actors.store.group_writes import admitted_group
from actors.store.messages import Conflict, Invalid, refuse
from actors.store import pod_metas
from actors.store.pod_specs import AdmittedPodSpecs
from actors.store.sharing import share_containers
from actors.store.strategies import strategy
from framework.api.errors import ValidationError
from framework.api.groups import POD_GROUP_KEY, kind_key
from framework.api.objects import KubeObject, PriorityClass, parse_as
from framework.api.pod import share_parsed_spec
from framework.api.schema import SchemaVerdict
from framework.api.workload_api import WORKLOAD_AWARE_PREEMPTION
from framework.features import FeatureGates
from framework.kueue.pods import kueue_may_default, kueue_pod_defaults


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
        self.pod_specs = AdmittedPodSpecs()

    def create(self, raw: Any, fv: str | None, template: str = "") -> Admitted:
        """`template`: messages.Create's (a claim whose spec is that template's admitted one).
        The kind is decided once, here, and handed to every stage."""
        said: list[str] = []
        key = kind_key(raw)
        if key == "Pod":
            return self._create_pod(raw, fv, said)
        spec = self.claim_specs.proven(raw, template)
        if spec is not None:  # admitted with its template: the rest is walked, the spec shared
            raw = {k: v for k, v in raw.items() if k != "spec"}
        raw = for_new_object(raw, self._clock(), self._rand, as_given=not self.rules.server_fields)
        raw = gated(key, raw, None, self.features)
        rest = self.claim_specs.rest_admitted(raw, fv, self.rules.name_formats) if spec is not None else \
            admitted_group(raw, fv, self.rules.name_formats) if key == POD_GROUP_KEY else None
        raw = rest if rest is not None else decoded(key, raw, fv, self.rules.name_formats, self._namespace_exists, said)
        kind = strategy(key)
        raw = kind.defaulted(raw) if isinstance(raw, dict) else raw
        if spec is not None:  # defaulted with its template (defaulting is idempotent)
            raw = {**raw, "spec": spec}
        try:
            raw = mutated(key, raw, self._priority_classes(), self._objects["PodGroup"],
                          self.features.enabled(WORKLOAD_AWARE_PREEMPTION))
        except ValidationError as e:
            raise Invalid(str(e), e.field) from None
        try:
            obj = parse_as(key, raw)
            if isinstance(obj, PriorityClass):
                check_priority_class(obj, None, self._priority_classes())
        except ValidationError as e:
            raise Invalid(str(e), e.field) from None
        self.claim_specs.note(obj)
        return Admitted(raw=raw, obj=obj, warnings=said)

    def _create_pod(self, raw: Any, fv: str | None, said: list[str]) -> Admitted:
        """create's stages for a pod. A pod whose spec (as decode receives it) is one the
        chain admitted before, under the same rules and PriorityClasses (pod_specs.py),
        takes that admitted spec: only its metadata and status are walked and parsed."""
        raw = for_new_object(raw, self._clock(), self._rand, as_given=not self.rules.server_fields)
        raw = gated("Pod", raw, None, self.features)
        classes = self._priority_classes()
        given = raw.get("spec") if type(raw) is dict else None
        memo = self.pod_specs.key(given, fv, self.rules.name_formats,
                                  priority_basis(given, classes) if type(given) is dict else None)
        spec = self.pod_specs.proven(memo)
        if spec is not None:
            raw = {**raw, "spec": spec}  # in its place, kept uncopied and unwalked by decode
        rest = pod_metas.admitted_rest(raw, fv, self.rules.name_formats, spec) if spec is not None else None
        checked = SchemaVerdict(rest, []) if rest is not None else \
            decode_stage("Pod", raw, fv, self.rules.name_formats, self._namespace_exists, said, spec)
        refuse(checked.errors)
        kind = strategy("Pod")
        raw = kind.defaulted(checked.raw) if isinstance(checked.raw, dict) else checked.raw
        try:  # mutating admission: the priority (the admitted spec has it), Kueue's pod defaults
            with_priority = raw if spec is not None else admit_pod(raw, classes)
            raw = kueue_pod_defaults(with_priority, self._objects["PodGroup"]) if kueue_may_default(with_priority) \
                else with_priority
            plain = raw is with_priority  # Kueue's defaults did not apply
            raw = kind.prepared(raw, self.rules.pod_create_status)  # decode's or Kueue's copy: ours
            if spec is None or not plain:
                share_containers(raw)  # the store's own copy with its own spec
            obj = parse_as("Pod", raw)  # the parsed spec part is taken when the spec is shared
        except ValidationError as e:
            raise Invalid(str(e), e.field) from None
        if spec is not None and plain:
            self.pod_specs.proven_count += 1
        elif memo is not None and spec is None and plain and not any(p.startswith("spec.") for p in checked.unknown):
            self.pod_specs.note(memo, raw["spec"])
            share_parsed_spec(obj)  # type: ignore[arg-type]
        return Admitted(raw=raw, obj=obj, warnings=said)

    def update(self, raw: Any, current: KubeObject, fv: str | None) -> Admitted:
        """The kind is decided once, here, and handed to every stage."""
        said: list[str] = []
        key = kind_key(raw)
        raw = gated(key, raw, current.raw, self.features)
        kind = strategy(key)
        if isinstance(raw, dict):
            raw = kind.prepared_for_update(raw, current.raw)
        rest = admitted_group(raw, fv, self.rules.name_formats) if key == POD_GROUP_KEY else None
        raw = rest if rest is not None else decoded(key, raw, fv, self.rules.name_formats, self._namespace_exists, said)
        if key == POD_GROUP_KEY and isinstance(raw, Mapping):
            raw = kept_group_priority(raw, current.raw)  # before the generation is judged
        raw = for_replacement(raw, current.raw, as_given=not self.rules.server_fields)
        raw = kind.defaulted(raw) if isinstance(raw, dict) else raw
        try:
            obj = parse_as(key, raw)
        except ValidationError as e:
            raise Invalid(str(e), e.field) from None
        want = obj.meta.resource_version  # an update naming a resourceVersion must name the stored one
        if want and want != current.meta.resource_version:
            raise Conflict.stale(obj.kind, obj.key)
        refuse(kind.update_errors(raw, current.raw))
        check_no_new_finalizers(raw, current.raw)
        if isinstance(obj, PriorityClass) and isinstance(current, PriorityClass):
            try:
                check_priority_class(obj, current, self._priority_classes())
            except ValidationError as e:
                raise Invalid(str(e), e.field) from None
        self.claim_specs.note(obj)
        return Admitted(raw=raw, obj=obj, warnings=said)

    def missing(self, raw: Any, fv: str | None) -> KubeObject:
        """An update's object that is not stored, decoded and parsed to name it in NotFound."""
        key = kind_key(raw)
        try:
            return parse_as(key, decode_stage(key, raw, fv, self.rules.name_formats, self._namespace_exists, []).raw)
        except ValidationError as e:
            raise Invalid(str(e), e.field) from None

    def _namespace_exists(self, ns: str) -> bool:
        return ns in self._objects["Namespace"]

    def _priority_classes(self) -> dict[str, PriorityClass]:
        return {pc.name: pc for pc in self._objects["PriorityClass"].values() if isinstance(pc, PriorityClass)}
