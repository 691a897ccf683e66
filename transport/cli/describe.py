"""`ksched describe` pages and the `ksched explain` report (text from JSON dicts)."""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from framework.api.errors import ValidationError
from framework.api.objects import POD_GROUP_LABEL, Node, Pod
from transport.cli.tables import (
    age,
    condition,
    human_duration,
    memory,
    milli_cpu,
    node_usage,
    pod_group_counts,
    pod_group_phase,
    pod_status,
    table,
)


def _kv(pairs: Sequence[tuple[str, Any]]) -> list[str]:
    width = max(len(k) for k, _ in pairs) + 2
    return [f"{k + ':':<{width}}{v}" for k, v in pairs]


def _labels(meta: Mapping[str, Any]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted((meta.get("labels") or {}).items())) or "<none>"


def _conditions(raw: Mapping[str, Any]) -> list[str]:
    conds = (raw.get("status") or {}).get("conditions") or []
    if not conds:
        return ["Conditions:  <none>"]
    rows = [[str(c.get("type", "")), str(c.get("status", "")), str(c.get("reason", "") or ""),
             str(c.get("message", "") or "")] for c in conds if isinstance(c, Mapping)]
    return ["Conditions:", _indent(table(["TYPE", "STATUS", "REASON", "MESSAGE"], rows))]


def _age(seconds: Any) -> str:
    return human_duration(int(seconds)) if isinstance(seconds, (int, float)) else "<unknown>"


def _event_age(e: Mapping[str, Any]) -> str:
    """kubectl describe's Age: the last time, and `(xN over <first>)` for a repeated event."""
    count = e.get("count")
    if isinstance(count, int) and count > 1:
        return f"{_age(e.get('ageSeconds'))} (x{count} over {_age(e.get('firstAgeSeconds'))})"
    return _age(e.get("ageSeconds"))


def _events(events: Sequence[Mapping[str, Any]], now: float) -> list[str]:
    if not events:
        return ["Events:  <none>"]
    rows = [[str(e.get("type", "")), str(e.get("reason", "")), _event_age(e), str(e.get("source") or ""),
             str(e.get("message", ""))] for e in events]
    return ["Events:", _indent(table(["TYPE", "REASON", "AGE", "FROM", "MESSAGE"], rows))]


def events_section(events: Sequence[Mapping[str, Any]], now: float) -> str:
    """The Events section of a describe page."""
    return "\n".join(_events(events, now))


def _indent(text: str, n: int = 2) -> str:
    return "\n".join(" " * n + line for line in text.splitlines())


def describe_pod(raw: Mapping[str, Any], events: Sequence[Mapping[str, Any]], now: float) -> str:
    meta, spec, status = raw.get("metadata") or {}, raw.get("spec") or {}, raw.get("status") or {}
    try:
        pod = Pod(raw)
        requests = f"cpu={milli_cpu(pod.resource.milli_cpu)}, memory={memory(pod.resource.memory)}"
    except ValidationError as err:
        requests = f"<invalid: {err}>"
    lines = _kv([
        ("Name", meta.get("name", "")),
        ("Namespace", meta.get("namespace", "default")),
        ("Priority", spec.get("priority", 0)),
        ("Scheduler", spec.get("schedulerName") or "default-scheduler"),
        ("Node", spec.get("nodeName") or "<none>"),
        ("Status", pod_status(raw)),
        ("Nominated Node", status.get("nominatedNodeName") or "<none>"),
        ("Pod Group", (meta.get("labels") or {}).get(POD_GROUP_LABEL, "<none>")),
        ("Labels", _labels(meta)),
        ("Requests", requests),
        ("Age", age(raw, now)),
        ("Resource Version", meta.get("resourceVersion", "")),
    ])
    return "\n".join(lines + _conditions(raw) + _events(events, now))


def describe_node(raw: Mapping[str, Any], pods: Sequence[Mapping[str, Any]], events: Sequence[Mapping[str, Any]],
                  now: float) -> str:
    node = Node(raw)
    n, cpu, mem = node_usage(pods).get(node.name, (0, 0, 0))
    alloc = node.allocatable
    taints = [f"{t.key}={t.value}:{t.effect}" if t.value else f"{t.key}:{t.effect}" for t in node.taints]
    lines = _kv([
        ("Name", node.name),
        ("Labels", _labels(raw.get("metadata") or {})),
        ("Taints", ", ".join(taints) or "<none>"),
        ("Unschedulable", str(node.unschedulable).lower()),
        ("Allocatable", f"cpu={milli_cpu(alloc.milli_cpu)}, memory={memory(alloc.memory)}, pods={alloc.allowed_pod_number}"),
        ("Allocated", f"cpu={milli_cpu(cpu)} ({_pct(cpu, alloc.milli_cpu)}), memory={memory(mem)} "
                      f"({_pct(mem, alloc.memory)}), pods={n}"),
        ("Age", age(raw, now)),
    ])
    on_node = [p for p in pods if (p.get("spec") or {}).get("nodeName") == node.name
               and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")]
    rows = []
    for p in on_node:
        try:
            typed = Pod(p)
            rows.append([typed.namespace, typed.name, milli_cpu(typed.resource.milli_cpu), memory(typed.resource.memory)])
        except ValidationError:
            continue
    lines.append(f"Non-terminated Pods: ({len(rows)} in total)")
    if rows:
        lines.append(_indent(table(["NAMESPACE", "NAME", "CPU REQUESTS", "MEMORY REQUESTS"], rows)))
    return "\n".join(lines + _events(events, now))


def _pct(used: int, total: int) -> str:
    return f"{used * 100 // total}%" if total else "-"


NO_GANGS = ("not enforced: no profile of this daemon enables Coscheduling, so its pods are scheduled "
            "one by one")


def conditions_lines(raw: Mapping[str, Any]) -> list[str]:
    """A group's status.conditions as describe's Conditions table ([] for none)."""
    conditions = [c for c in (raw.get("status") or {}).get("conditions") or [] if isinstance(c, Mapping)]
    if not conditions:
        return []
    rows = [[str(c.get("type", "")), str(c.get("status", "")), str(c.get("reason", "")), str(c.get("message", ""))]
            for c in conditions]
    return ["Conditions:", _indent(table(["TYPE", "STATUS", "REASON", "MESSAGE"], rows))]


def describe_podgroup(raw: Mapping[str, Any], pods: Sequence[Mapping[str, Any]], events: Sequence[Mapping[str, Any]],
                      now: float, *, gangs: bool = True) -> str:
    meta, spec = raw.get("metadata") or {}, raw.get("spec") or {}
    total, bound, done = pod_group_counts(raw, pods)
    lines = _kv([
        ("Name", meta.get("name", "")),
        ("Namespace", meta.get("namespace", "default")),
        ("Phase", pod_group_phase(raw, pods)),
        ("Min Member", spec.get("minMember", 0)),
        ("Schedule Timeout", f"{spec['scheduleTimeoutSeconds']}s" if spec.get("scheduleTimeoutSeconds") is not None
                             else "<default>"),
        ("Pods", f"{total} ({bound} bound, {done} finished)"),
        ("Schedule Start", (raw.get("status") or {}).get("scheduleStartTime") or "<none>"),
        ("Age", age(raw, now)),
        *([] if gangs else [("Gang Scheduling", NO_GANGS)]),
    ])
    lines += conditions_lines(raw)
    ns, name = meta.get("namespace", "default"), meta.get("name")
    members = [p for p in pods if (p.get("metadata") or {}).get("namespace", "default") == ns
               and ((p.get("metadata") or {}).get("labels") or {}).get(POD_GROUP_LABEL) == name]
    if members:
        rows = [[(p.get("metadata") or {}).get("name", ""), pod_status(p), (p.get("spec") or {}).get("nodeName") or "<none>"]
                for p in members]
        lines += ["Members:", _indent(table(["NAME", "STATUS", "NODE"], rows))]
        for p in members:
            cond = condition(p, "PodScheduled")
            if cond is not None and cond.get("status") == "False":
                pname = (p.get("metadata") or {}).get("name", "")
                lines.append(f"Last FailedScheduling ({pname}): {cond.get('message', '')}")
                break
    return "\n".join(lines + _events(events, now))


# --- explain -------------------------------------------------------------------------------


def explain_report(result: Mapping[str, Any], *, gates: Sequence[str] = (), bound_to: str | None = None) -> str:
    """Per node: each Filter plugin's verdict, each Score plugin's raw, normalized and
    weighted score, the total; then the node the algorithm picks (or why none fits).
    A gated pod's report says first that it waits for its gates; a bound pod's, that
    it is explained as if it were not bound yet."""
    lines: list[str] = []
    if gates:
        lines.append(f"Pod {result.get('pod', '')} is not scheduled until its scheduling gates are removed: "
                     f"{', '.join(gates)}. Below: where it would go once they are.")
    if bound_to:
        lines.append(f"Pod {result.get('pod', '')} is bound to {bound_to}; explained as if it were not bound yet "
                     "(not counted on its node).")
    lines.append(f"Pod: {result.get('pod', '')}   Profile: {result.get('profile', '')}")
    pre = result.get("preFilter")
    if pre:
        lines.append(f"PreFilter {pre.get('plugin', '')}: {pre.get('code')} {'; '.join(pre.get('reasons', []))}".rstrip())
    nodes: Mapping[str, Mapping[str, Any]] = result.get("nodes") or {}
    extenders = {e.get("name") for e in result.get("extenders") or []}
    for name in sorted(nodes, key=lambda n: (-int(nodes[n].get("totalScore", -1) if nodes[n].get("feasible") else -1), n)):
        entry = nodes[name]
        verdict = f"feasible, total score {entry.get('totalScore', 0)}" if entry.get("feasible") else "infeasible"
        lines.append(f"\nNode {name}: {verdict}")
        if entry.get("preFilter"):
            lines.append(f"  PreFilter: {entry['preFilter'].get('code')} {'; '.join(entry['preFilter'].get('reasons', []))}")
        rows = [[plugin, st.get("code", ""), "; ".join(st.get("reasons", []))]
                for plugin, st in (entry.get("filters") or {}).items()]
        rows += [[f"extender {ext}", st.get("code", ""), "; ".join(st.get("reasons", []))]
                 for ext, st in (entry.get("extenders") or {}).items()]
        if rows:
            lines.append(_indent(table(["FILTER", "RESULT", "REASONS"], rows)))
        claims = entry.get("claims") or []
        if claims:
            lines.append(_indent(table(["CLAIM", "NOT SATISFIED BECAUSE"], [[c.get("claim", ""), c.get("why", "")]
                                                                            for c in claims])))
        scores = entry.get("scores") or {}
        if scores:
            srows = [[f"extender {plugin}" if plugin in extenders else plugin, str(s.get("raw")),
                      str(s.get("normalized")), str(s.get("weight")), str(s.get("weighted"))]
                     for plugin, s in scores.items()]
            lines.append(_indent(table(["SCORE", "RAW", "NORMALIZED", "WEIGHT", "WEIGHTED"], srows)))
        if entry.get("scoreError"):
            lines.append(f"  Score error: {entry['scoreError']}")
    lines.append("")
    if result.get("chosen"):
        lines.append(f"Chosen node: {result['chosen']}")
    else:
        lines.append(f"No node fits: {result.get('message', '')}")
    group = result.get("podGroup")
    if group:
        lines += ["", *group_topology_lines(group)]
    return "\n".join(lines)


def group_topology_lines(group: Mapping[str, Any]) -> list[str]:
    """The gang's last topology choice (explain's podGroup section): the domain
    chosen or why none was, then one line per domain considered."""
    topo = group.get("topology")
    if not topo:
        return [f"PodGroup {group.get('name', '')}: no topology choice recorded (no topology constraint, "
                "or no group cycle since the scheduler started)"]
    head = f"PodGroup {group.get('name', '')}, last group cycle: "
    head += f"placed in {topo['chosen']}" if topo.get("chosen") else f"no domain chosen ({topo.get('status', '')})"
    rows = [[d.get("domain", ""), str(d.get("nodes", 0)),
             "chosen" if d.get("chosen") else "feasible" if d.get("feasible") else "tried" if d.get("tried") else "skipped",
             str(d.get("score", 0)) if d.get("feasible") else "", d.get("reason", "")]
            for d in topo.get("domains") or []]
    return [head, _indent(table(["DOMAIN", "NODES", "VERDICT", "SCORE", "WHY"], rows))] if rows else [head]
