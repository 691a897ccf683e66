"""Kueue's objects (group kueue.x-k8s.io, version v1beta2) with Kueue's field names
and defaults, parsed from their API form and validated with errors naming the field
(apis/kueue/v1beta2/*_types.go, pkg/webhooks/*). `strict=False` keeps what upstream's
unit tests build without validation (empty flavors, huge quotas)."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Mapping

from framework.api.errors import ValidationError
from framework.api.labels import LabelSelector
from framework.api.quantity import parse_quantity
from framework.kueue.amount import parse_amount

GROUP = "kueue.x-k8s.io"
VERSION = "v1beta2"
API_VERSION = f"{GROUP}/{VERSION}"
KINDS = ("ResourceFlavor", "ClusterQueue", "Cohort", "LocalQueue", "Workload", "WorkloadPriorityClass")

QUEUEING = ("StrictFIFO", "BestEffortFIFO")
WITHIN_CQ = ("Never", "LowerPriority", "LowerOrNewerEqualPriority")
RECLAIM = ("Never", "LowerPriority", "Any")
BORROW_WITHIN = ("Never", "LowerPriority")
FUNGIBILITY = ("MayStopSearch", "TryNextFlavor")
PREFERENCES = ("BorrowingOverPreemption", "PreemptionOverBorrowing")
STOP_POLICIES = ("None", "Hold", "HoldAndDrain")
_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def _map(raw: object, f: str) -> Mapping[str, Any]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise ValidationError(f, "must be an object")
    return raw


def _list(raw: object, f: str) -> list[Any]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise ValidationError(f, "must be a list")
    return raw


def _enum(raw: object, f: str, allowed: tuple[str, ...], default: str) -> str:
    if raw is None or raw == "":
        return default
    if raw not in allowed:
        raise ValidationError(f, f"Unsupported value: {raw!r}: supported values: {', '.join(map(repr, allowed))}")
    return str(raw)


def _name(raw: object, f: str, strict: bool) -> str:
    if not isinstance(raw, str) or not raw:
        raise ValidationError(f, "Required value")
    if strict and (len(raw) > 253 or not _NAME.match(raw)):
        raise ValidationError(f, f"Invalid value: {raw!r}: a lowercase RFC 1123 subdomain must consist of lower case "
                                 "alphanumeric characters, '-' or '.'")
    return raw


@dataclass(frozen=True)
class ResourceQuotaSpec:
    name: str
    nominal: int
    borrowing_limit: int | None
    lending_limit: int | None


@dataclass(frozen=True)
class FlavorQuotas:
    name: str
    resources: tuple[ResourceQuotaSpec, ...]


@dataclass(frozen=True)
class ResourceGroup:
    covered: tuple[str, ...]
    flavors: tuple[FlavorQuotas, ...]


def parse_resource_groups(raw: object, f: str, *, has_parent: bool, strict: bool) -> tuple[ResourceGroup, ...]:
    groups = _list(raw, f)
    if strict and len(groups) > 16:
        raise ValidationError(f, "Too many: must have at most 16 items")
    out: list[ResourceGroup] = []
    seen_res: set[str] = set()
    seen_flavor: set[str] = set()
    total_flavors = 0
    for i, g in enumerate(groups):
        gf = f"{f}[{i}]"
        g = _map(g, gf)
        covered = tuple(_list(g.get("coveredResources"), f"{gf}.coveredResources"))
        if strict and not 1 <= len(covered) <= 64:
            raise ValidationError(f"{gf}.coveredResources", "must have 1 to 64 items")
        for r in covered:
            if strict and r in seen_res:
                raise ValidationError(f"{gf}.coveredResources", f"Duplicate value: {r!r}: a resource belongs to at most one group")
            seen_res.add(r)
        flavors: list[FlavorQuotas] = []
        fl = _list(g.get("flavors"), f"{gf}.flavors")
        if strict and not 1 <= len(fl) <= 64:
            raise ValidationError(f"{gf}.flavors", "must have 1 to 64 items")
        for j, fq in enumerate(fl):
            ff = f"{gf}.flavors[{j}]"
            fq = _map(fq, ff)
            fname = _name(fq.get("name"), f"{ff}.name", strict)
            if strict and fname in seen_flavor:
                raise ValidationError(f"{ff}.name", f"Duplicate value: {fname!r}: a flavor belongs to at most one group")
            seen_flavor.add(fname)
            res: list[ResourceQuotaSpec] = []
            rl = _list(fq.get("resources"), f"{ff}.resources")
            if strict and [(_map(r, ff).get("name")) for r in rl] != list(covered):
                raise ValidationError(f"{ff}.resources", "must list exactly the coveredResources, in the same order")
            for k, r in enumerate(rl):
                rf = f"{ff}.resources[{k}]"
                r = _map(r, rf)
                rname = r.get("name")
                if not isinstance(rname, str) or not rname:
                    raise ValidationError(f"{rf}.name", "Required value")
                if "nominalQuota" not in r:
                    raise ValidationError(f"{rf}.nominalQuota", "Required value")
                nominal = parse_amount(rname, r["nominalQuota"], f"{rf}.nominalQuota")
                bl = r.get("borrowingLimit")
                ll = r.get("lendingLimit")
                b = None if bl is None else parse_amount(rname, bl, f"{rf}.borrowingLimit")
                lend = None if ll is None else parse_amount(rname, ll, f"{rf}.lendingLimit")
                if strict:
                    for v, n in ((nominal, "nominalQuota"), (b, "borrowingLimit"), (lend, "lendingLimit")):
                        if v is not None and v < 0:
                            raise ValidationError(f"{rf}.{n}", "must be greater than or equal to 0")
                    if b is not None and not has_parent:
                        raise ValidationError(f"{rf}.borrowingLimit", "must be nil when cohort is empty")
                    if lend is not None and not has_parent:
                        raise ValidationError(f"{rf}.lendingLimit", "must be nil when cohort is empty")
                    if lend is not None and lend > nominal:
                        raise ValidationError(f"{rf}.lendingLimit", "must be less than or equal to the nominalQuota")
                res.append(ResourceQuotaSpec(rname, nominal, b, lend))
            flavors.append(FlavorQuotas(fname, tuple(res)))
            total_flavors += 1
        out.append(ResourceGroup(covered, tuple(flavors)))
    if strict and total_flavors > 256:
        raise ValidationError(f, "must have at most 256 flavors in total")
    return tuple(out)


def _weight(raw: object, f: str) -> float:
    fs = _map(raw, f)
    if fs.get("weight") is None:
        return 1.0
    w = parse_quantity(fs["weight"], f"{f}.weight")
    if w < 0 or (0 < w <= parse_quantity("1n")):
        raise ValidationError(f"{f}.weight", "must be 0 or greater than 10^-9")
    return float(w)


@dataclass(frozen=True)
class Preemption:
    within_cluster_queue: str = "Never"
    reclaim_within_cohort: str = "Never"
    borrow_within_cohort: str = "Never"
    max_priority_threshold: int | None = None


@dataclass(frozen=True)
class Fungibility:
    when_can_borrow: str = "MayStopSearch"
    when_can_preempt: str = "TryNextFlavor"
    preference: str | None = None


@dataclass(frozen=True)
class ClusterQueueSpec:
    name: str
    cohort: str = ""
    resource_groups: tuple[ResourceGroup, ...] = ()
    queueing_strategy: str = "BestEffortFIFO"
    namespace_selector: LabelSelector | None = None
    preemption: Preemption = field(default_factory=Preemption)
    fungibility: Fungibility = field(default_factory=Fungibility)
    weight: float = 1.0
    stop_policy: str = "None"
    terminating: bool = False  # metadata.deletionTimestamp set: it admits nothing more


def _named_with_parent(obj: Mapping[str, Any], parent_field: str, strict: bool) -> tuple[str, Mapping[str, Any], str]:
    """(metadata.name, spec, the cohort this object hangs under: spec.cohortName or spec.parentName)."""
    name = _name(_map(obj.get("metadata"), "metadata").get("name"), "metadata.name", strict)
    spec = _map(obj.get("spec"), "spec")
    parent = spec.get(parent_field) or ""
    if not isinstance(parent, str):
        raise ValidationError(f"spec.{parent_field}", "must be a string")
    return name, spec, parent


def parse_cluster_queue(obj: Mapping[str, Any], strict: bool = True) -> ClusterQueueSpec:
    name, spec, cohort = _named_with_parent(obj, "cohortName", strict)
    if cohort and strict:
        _name(cohort, "spec.cohortName", strict)
    p = _map(spec.get("preemption"), "spec.preemption")
    bwc = _map(p.get("borrowWithinCohort"), "spec.preemption.borrowWithinCohort")
    thr = bwc.get("maxPriorityThreshold")
    if thr is not None and (isinstance(thr, bool) or not isinstance(thr, int)):
        raise ValidationError("spec.preemption.borrowWithinCohort.maxPriorityThreshold", "must be an int32")
    # An API object's unset policies are the CRD's default, Never. Upstream's unit tests
    # (strict=False) build objects without the API server: a set `preemption` keeps Go's
    # zero value "" for what it leaves out (the cache defaults only a nil preemption,
    # pkg/cache/scheduler/clusterqueue.go), and "" is not Never (canPreemptWhileBorrowing).
    unset = "Never" if strict or spec.get("preemption") is None else ""
    pre = Preemption(
        _enum(p.get("withinClusterQueue"), "spec.preemption.withinClusterQueue", WITHIN_CQ, unset),
        _enum(p.get("reclaimWithinCohort"), "spec.preemption.reclaimWithinCohort", RECLAIM, unset),
        _enum(bwc.get("policy"), "spec.preemption.borrowWithinCohort.policy", BORROW_WITHIN,
              "Never" if strict or p.get("borrowWithinCohort") is None else ""),
        thr,
    )
    if strict and pre.reclaim_within_cohort == "Never" and pre.borrow_within_cohort != "Never":
        raise ValidationError("spec.preemption", "reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never")
    ff = _map(spec.get("flavorFungibility"), "spec.flavorFungibility")
    fung = Fungibility(
        _enum(ff.get("whenCanBorrow"), "spec.flavorFungibility.whenCanBorrow", FUNGIBILITY, "MayStopSearch"),
        _enum(ff.get("whenCanPreempt"), "spec.flavorFungibility.whenCanPreempt", FUNGIBILITY, "TryNextFlavor"),
        None if ff.get("preference") is None else _enum(ff.get("preference"), "spec.flavorFungibility.preference", PREFERENCES, ""),
    )
    if strict and fung.preference is not None and not (fung.when_can_borrow == fung.when_can_preempt == "TryNextFlavor"):
        raise ValidationError("spec.flavorFungibility.preference",
                              "can only be set when whenCanBorrow and whenCanPreempt are TryNextFlavor")
    return ClusterQueueSpec(
        name=name,
        cohort=cohort,
        resource_groups=parse_resource_groups(spec.get("resourceGroups"), "spec.resourceGroups", has_parent=bool(cohort), strict=strict),
        queueing_strategy=_enum(spec.get("queueingStrategy"), "spec.queueingStrategy", QUEUEING, "BestEffortFIFO"),
        namespace_selector=LabelSelector.parse(spec.get("namespaceSelector"), "spec.namespaceSelector"),
        preemption=pre,
        fungibility=fung,
        weight=_weight(spec.get("fairSharing"), "spec.fairSharing"),
        stop_policy=_enum(spec.get("stopPolicy"), "spec.stopPolicy", STOP_POLICIES, "None"),
        terminating=bool(_map(obj.get("metadata"), "metadata").get("deletionTimestamp")),
    )


@dataclass(frozen=True)
class CohortSpec:
    name: str
    parent: str = ""
    resource_groups: tuple[ResourceGroup, ...] = ()
    weight: float = 1.0


def parse_cohort(obj: Mapping[str, Any], strict: bool = True) -> CohortSpec:
    name, spec, parent = _named_with_parent(obj, "parentName", strict)
    if strict and parent == name:
        raise ValidationError("spec.parentName", "must not be the cohort itself")
    return CohortSpec(name, parent,
                      parse_resource_groups(spec.get("resourceGroups"), "spec.resourceGroups", has_parent=bool(parent), strict=strict),
                      _weight(spec.get("fairSharing"), "spec.fairSharing"))


@dataclass(frozen=True)
class ResourceFlavorSpec:
    name: str
    node_labels: Mapping[str, str] = field(default_factory=dict)
    node_taints: tuple[Mapping[str, Any], ...] = ()
    tolerations: tuple[Mapping[str, Any], ...] = ()


def parse_resource_flavor(obj: Mapping[str, Any], strict: bool = True) -> ResourceFlavorSpec:
    name = _name(_map(obj.get("metadata"), "metadata").get("name"), "metadata.name", strict)
    spec = _map(obj.get("spec"), "spec")
    labels = dict(_map(spec.get("nodeLabels"), "spec.nodeLabels"))
    for k, v in labels.items():
        if not isinstance(v, str):
            raise ValidationError(f"spec.nodeLabels.{k}", "must be a string")
    taints = tuple(_list(spec.get("nodeTaints"), "spec.nodeTaints"))
    for i, t in enumerate(taints):
        t = _map(t, f"spec.nodeTaints[{i}]")
        if not t.get("key"):
            raise ValidationError(f"spec.nodeTaints[{i}].key", "Required value")
        if t.get("effect") not in ("NoSchedule", "PreferNoSchedule", "NoExecute"):
            raise ValidationError(f"spec.nodeTaints[{i}].effect", f"Unsupported value: {t.get('effect')!r}")
    tols = tuple(_map(t, f"spec.tolerations[{i}]") for i, t in enumerate(_list(spec.get("tolerations"), "spec.tolerations")))
    return ResourceFlavorSpec(name, labels, taints, tols)


@dataclass(frozen=True)
class LocalQueueSpec:
    namespace: str
    name: str
    cluster_queue: str
    stop_policy: str = "None"


def parse_local_queue(obj: Mapping[str, Any], strict: bool = True) -> LocalQueueSpec:
    meta = _map(obj.get("metadata"), "metadata")
    name = _name(meta.get("name"), "metadata.name", strict)
    ns = meta.get("namespace") or "default"
    spec = _map(obj.get("spec"), "spec")
    cq = _name(spec.get("clusterQueue"), "spec.clusterQueue", strict)
    return LocalQueueSpec(ns, name, cq, _enum(spec.get("stopPolicy"), "spec.stopPolicy", STOP_POLICIES, "None"))


@dataclass(frozen=True)
class WorkloadPriorityClassSpec:
    name: str
    value: int
    description: str = ""


def parse_workload_priority_class(obj: Mapping[str, Any], strict: bool = True) -> WorkloadPriorityClassSpec:
    name = _name(_map(obj.get("metadata"), "metadata").get("name"), "metadata.name", strict)
    v = obj.get("value")
    if isinstance(v, bool) or not isinstance(v, int) or not -(2**31) <= v < 2**31:
        raise ValidationError("value", "Required value: an int32")
    d = obj.get("description") or ""
    if not isinstance(d, str):
        raise ValidationError("description", "must be a string")
    return WorkloadPriorityClassSpec(name, v, d)
