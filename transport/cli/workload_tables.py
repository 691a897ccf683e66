"""`ksched get`/`describe` for scheduling.k8s.io/v1alpha2 Workloads and PodGroups
(Kubernetes' own gang API, keyed `Workload.scheduling.k8s.io` and
`PodGroup.scheduling.k8s.io`: framework.api.groups). A PodGroup's members are the
pods of its namespace whose spec.schedulingGroup.podGroupName names it. Pure
functions from JSON dicts to text; the web page reads `pod_group_summary` too."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from transport.cli.describe import _events, _indent, _kv, conditions_lines
from transport.cli.tables import age, condition, pod_status, table

POD_GROUP_SCHEDULED = "PodGroupScheduled"


def _meta(o: Mapping[str, Any]) -> Mapping[str, Any]:
    return o.get("metadata") or {}


def policy_of(spec: Mapping[str, Any]) -> tuple[str, int | None]:
    """("Gang", minCount) or ("Basic", None) of a schedulingPolicy's holder."""
    policy = spec.get("schedulingPolicy") or {}
    gang = policy.get("gang")
    if isinstance(gang, Mapping):
        return "Gang", gang.get("minCount")
    return "Basic", None


def topology_of(spec: Mapping[str, Any]) -> str:
    keys = [t.get("key", "") for t in (spec.get("schedulingConstraints") or {}).get("topology") or []
            if isinstance(t, Mapping)]
    return ",".join(keys) or "<none>"


def members(group: Mapping[str, Any], pods: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    ns, name = _meta(group).get("namespace", "default"), _meta(group).get("name")
    return [p for p in pods if _meta(p).get("namespace", "default") == ns
            and ((p.get("spec") or {}).get("schedulingGroup") or {}).get("podGroupName") == name]


@dataclass(frozen=True, slots=True)
class PodGroupSummary:
    """What the table, describe and the web page show of one PodGroup."""

    namespace: str
    name: str
    policy: str
    min_count: int | None
    topology: str
    bound: int
    total: int
    scheduled: str  # the PodGroupScheduled condition: "True", "False (Unschedulable)", "" for none
    message: str


def pod_group_summary(group: Mapping[str, Any], pods: Sequence[Mapping[str, Any]]) -> PodGroupSummary:
    spec = group.get("spec") or {}
    policy, min_count = policy_of(spec)
    mine = members(group, pods)
    cond = condition(group, POD_GROUP_SCHEDULED)
    scheduled = ""
    if cond is not None:
        scheduled = str(cond.get("status", ""))
        if cond.get("reason") and scheduled != "True":
            scheduled += f" ({cond['reason']})"
    return PodGroupSummary(
        namespace=_meta(group).get("namespace", "default"), name=_meta(group).get("name", ""), policy=policy,
        min_count=min_count, topology=topology_of(spec),
        bound=sum(1 for p in mine if (p.get("spec") or {}).get("nodeName")), total=len(mine),
        scheduled=scheduled, message=str((cond or {}).get("message", "")))


def pod_groups_table(items: Sequence[Mapping[str, Any]], pods: Sequence[Mapping[str, Any]], now: float, *,
                     namespaces: bool, prefix: str = "") -> str:
    headers = (["NAMESPACE"] if namespaces else []) + ["NAME", "POLICY", "MINCOUNT", "BOUND", "SCHEDULED", "AGE"]
    rows = []
    for g in items:
        s = pod_group_summary(g, pods)
        rows.append(([s.namespace] if namespaces else []) + [
            prefix + s.name, s.policy, "" if s.min_count is None else str(s.min_count), f"{s.bound}/{s.total}",
            s.scheduled or "<none>", age(g, now)])
    return table(headers, rows)


def workloads_table(items: Sequence[Mapping[str, Any]], now: float, *, namespaces: bool, prefix: str = "") -> str:
    headers = (["NAMESPACE"] if namespaces else []) + ["NAME", "TEMPLATES", "AGE"]
    rows = [([_meta(w).get("namespace", "")] if namespaces else []) + [
        prefix + _meta(w).get("name", ""),
        ",".join(t.get("name", "") for t in (w.get("spec") or {}).get("podGroupTemplates") or []
                 if isinstance(t, Mapping)) or "<none>", age(w, now)] for w in items]
    return table(headers, rows)


def describe_workload_v1alpha2(w: Mapping[str, Any], events: Sequence[Mapping[str, Any]], now: float) -> str:
    spec, meta = w.get("spec") or {}, _meta(w)
    ref = spec.get("controllerRef") or {}
    lines = _kv([
        ("Name", meta.get("name", "")), ("Namespace", meta.get("namespace", "default")),
        ("API Version", w.get("apiVersion", "")), ("Kind", w.get("kind", "")),
        ("Controller", f"{ref.get('kind', '')}/{ref.get('name', '')}" if ref else "<none>"),
        ("Age", age(w, now)),
    ])
    rows = []
    for t in spec.get("podGroupTemplates") or []:
        if isinstance(t, Mapping):
            policy, min_count = policy_of(t)
            rows.append([t.get("name", ""), policy, "" if min_count is None else str(min_count), topology_of(t)])
    lines += ["Pod Group Templates:", _indent(table(["NAME", "POLICY", "MINCOUNT", "TOPOLOGY"], rows))]
    return "\n".join(lines + _events(events, now))


def describe_pod_group_v1alpha2(g: Mapping[str, Any], pods: Sequence[Mapping[str, Any]],
                                events: Sequence[Mapping[str, Any]], now: float) -> str:
    spec, meta = g.get("spec") or {}, _meta(g)
    s = pod_group_summary(g, pods)
    ref = (spec.get("podGroupTemplateRef") or {}).get("workload") or {}
    lines = _kv([
        ("Name", s.name), ("Namespace", s.namespace),
        ("API Version", g.get("apiVersion", "")), ("Kind", g.get("kind", "")),
        ("Workload", f"{ref.get('workloadName', '')} (template {ref.get('podGroupTemplateName', '')})"
                     if ref else "<none>"),
        ("Policy", s.policy if s.min_count is None else f"{s.policy} (minCount {s.min_count})"),
        ("Topology", s.topology),
        ("Disruption Mode", spec.get("disruptionMode") or "Pod"),
        ("Priority", "<none>" if spec.get("priority") is None
         else f"{spec['priority']} ({spec.get('priorityClassName') or 'no class'})"),
        ("Pods", f"{s.total} ({s.bound} bound)"),
        ("Age", age(g, now)),
    ])
    lines += conditions_lines(g)
    mine = members(g, pods)
    if mine:
        rows = [[_meta(p).get("name", ""), pod_status(p), (p.get("spec") or {}).get("nodeName") or "<none>"]
                for p in mine]
        lines += ["Members:", _indent(table(["NAME", "STATUS", "NODE"], rows))]
    return "\n".join(lines + _events(events, now))
