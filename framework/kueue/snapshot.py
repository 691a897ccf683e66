"""ClusterQueues and Cohorts built into trees, with the workloads holding quota;
a Snapshot is what one admission cycle works on (pkg/cache/scheduler/snapshot.go,
clusterqueue_snapshot.go, cohort_snapshot.go)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Mapping

from framework.kueue.amount import FR
from framework.kueue.api import ClusterQueueSpec, CohortSpec, ResourceFlavorSpec, ResourceGroup
from framework.kueue.quota import CohortNode, Node, Quota, available
from framework.kueue.workload import WorkloadInfo


def _quotas(groups: Iterable[ResourceGroup]) -> dict[FR, Quota]:
    out: dict[FR, Quota] = {}
    for g in groups:
        for fq in g.flavors:
            for r in fq.resources:
                out[(fq.name, r.name)] = Quota(r.nominal, r.borrowing_limit, r.lending_limit)
    return out


@dataclass(eq=False)
class ClusterQueue(Node):
    spec: ClusterQueueSpec = field(default_factory=lambda: ClusterQueueSpec(""))
    workloads: dict[str, WorkloadInfo] = field(default_factory=dict)
    inactive_reason: str = ""  # "" = active; else the Active=False reason
    inactive_message: str = ""
    shared_workloads: bool = False  # a clone shares its source's dict until it changes it

    def own_workloads(self) -> dict[str, WorkloadInfo]:
        if self.shared_workloads:
            self.workloads, self.shared_workloads = dict(self.workloads), False
        return self.workloads

    is_cq = True

    @property
    def preemption(self):
        return self.spec.preemption

    @property
    def fungibility(self):
        return self.spec.fungibility

    def rg_by_resource(self, res: str) -> ResourceGroup | None:
        for g in self.spec.resource_groups:
            if res in g.covered:
                return g
        return None

    def quota_for(self, fr: FR) -> Quota:
        return self.quotas.get(fr) or Quota(0)

    def available(self, fr: FR) -> int:
        return available(self, fr)

    def add_usage_map(self, usage: Mapping[FR, int]) -> None:
        for fr, v in usage.items():
            self.add_usage(fr, v)

    def remove_usage_map(self, usage: Mapping[FR, int]) -> None:
        for fr, v in usage.items():
            self.remove_usage(fr, v)

    def fits(self, usage: Mapping[FR, int]) -> bool:
        return all(v <= self.available(fr) for fr, v in usage.items())

    @property
    def active(self) -> bool:
        return not self.inactive_reason


@dataclass(eq=False)
class Cohort(CohortNode):
    spec: CohortSpec | None = None


class QuotaSnapshot:
    """Every ClusterQueue and Cohort with its usage; cheap to clone per cycle (O(ClusterQueues
    + Cohorts): usage maps are copied, admitted-workload maps shared until written)."""

    def __init__(self) -> None:
        self.cluster_queues: dict[str, ClusterQueue] = {}
        self.cohorts: dict[str, Cohort] = {}
        self.flavors: dict[str, ResourceFlavorSpec] = {}

    @classmethod
    def build(cls, cqs: Iterable[ClusterQueueSpec], cohorts: Iterable[CohortSpec],
              flavors: Iterable[ResourceFlavorSpec], admitted: Iterable[WorkloadInfo] = ()) -> "Snapshot":
        s = cls()
        s.flavors = {f.name: f for f in flavors}
        specs = {c.name: c for c in cohorts}

        def cohort(name: str) -> Cohort:
            c = s.cohorts.get(name)
            if c is None:
                spec = specs.get(name)
                c = Cohort(name, quotas=_quotas(spec.resource_groups) if spec else {},
                           weight=spec.weight if spec else 1.0, spec=spec)
                s.cohorts[name] = c
            return c

        for spec in specs.values():
            cohort(spec.name)
        for spec in specs.values():
            if spec.parent:
                child, parent = s.cohorts[spec.name], cohort(spec.parent)
                child.parent = parent
                parent.child_cohorts.append(child)
        _break_cycles(s.cohorts)
        for spec in cqs:
            cq = ClusterQueue(spec.name, quotas=_quotas(spec.resource_groups), weight=spec.weight, spec=spec)
            cq.subtree = {fr: q.nominal for fr, q in cq.quotas.items()}
            missing = sorted({fq.name for g in spec.resource_groups for fq in g.flavors} - set(s.flavors))
            if spec.terminating:
                cq.inactive_reason = "Terminating"
                cq.inactive_message = "Can't admit new workloads; clusterQueue is terminating"
            elif spec.stop_policy != "None":
                cq.inactive_reason, cq.inactive_message = "Stopped", "Can't admit new workloads: is stopped."
            elif missing:
                cq.inactive_reason = "FlavorNotFound"
                cq.inactive_message = f"Can't admit new workloads: references missing ResourceFlavor(s): {','.join(missing)}."
            if spec.cohort:
                parent = cohort(spec.cohort)
                cq.parent = parent
                parent.child_cqs.append(cq)
            s.cluster_queues[spec.name] = cq
        for wl in admitted:
            cq = s.cluster_queues.get(wl.admission.cluster_queue) if wl.admission else None
            if cq is not None:
                cq.workloads[wl.key] = wl
                for fr, v in wl.usage().items():
                    cq.usage[fr] = cq.usage.get(fr, 0) + v
        for c in s.cohorts.values():
            if c.parent is None:
                c.recompute()
        return s

    def clone(self) -> "Snapshot":
        s = QuotaSnapshot()
        s.flavors = self.flavors
        for name, c in self.cohorts.items():
            s.cohorts[name] = Cohort(name, quotas=c.quotas, subtree=c.subtree, usage=dict(c.usage),
                                     weight=c.weight, spec=c.spec)
        for name, cq in self.cluster_queues.items():
            s.cluster_queues[name] = ClusterQueue(name, quotas=cq.quotas, subtree=cq.subtree, usage=dict(cq.usage),
                                                  weight=cq.weight, spec=cq.spec, workloads=cq.workloads,
                                                  shared_workloads=True,
                                                  inactive_reason=cq.inactive_reason, inactive_message=cq.inactive_message)
        for name, c in self.cohorts.items():
            n = s.cohorts[name]
            if c.parent is not None:
                n.parent = s.cohorts[c.parent.name]
            n.child_cohorts = [s.cohorts[x.name] for x in c.child_cohorts]
            n.child_cqs = [s.cluster_queues[x.name] for x in c.child_cqs]
        for name, cq in self.cluster_queues.items():
            if cq.parent is not None:
                s.cluster_queues[name].parent = s.cohorts[cq.parent.name]
        return s

    def add_workload(self, wl: WorkloadInfo) -> None:
        cq = self.cluster_queues[wl.admission.cluster_queue]
        cq.own_workloads()[wl.key] = wl
        cq.add_usage_map(wl.usage())

    def remove_workload(self, wl: WorkloadInfo) -> None:
        cq = self.cluster_queues[wl.admission.cluster_queue]
        cq.own_workloads().pop(wl.key, None)
        cq.remove_usage_map(wl.usage())


def _break_cycles(cohorts: dict[str, Cohort]) -> None:
    """A parent chain that loops makes the subtree unusable: cut the loop's links."""
    for c in cohorts.values():
        seen: list[Cohort] = []
        node: Cohort | None = c
        while node is not None and node not in seen:
            seen.append(node)
            node = node.parent  # type: ignore[assignment]
        if node is not None:  # a cycle through `node`
            loop = seen[seen.index(node):]
            for n in loop:
                if n.parent is not None and n in n.parent.child_cohorts:
                    n.parent.child_cohorts.remove(n)
                n.parent = None


def cq_path(cq: Node) -> str:
    """buildCQPath: /<root cohort>/.../<cq>."""
    parts = [cq.name] + [a.name for a in cq.path_parent_to_root()]
    return "/" + "/".join(reversed(parts))
