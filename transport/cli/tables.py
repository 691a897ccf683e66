"""What the CLI prints: kubectl-like tables, describe pages and explain reports.

Pure functions from objects (JSON dicts) to text; `now` is passed in so output is
testable.
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

from framework.api.errors import ValidationError
from framework.api.groups import kind_key
from framework.api.objects import KINDS, POD_GROUP_LABEL, Node, Pod
from framework.api.timeutil import parse_time
from framework.api.api_resources import BY_KIND, RESOURCES

def _kubectl_names() -> dict[str, str]:
    """Every name kubectl accepts for a stored resource, to its kind key, from the one
    table REST serves (framework.api.api_resources): singular, plural and short names,
    `resource.group` and `resource.version.group`. A bare name two groups share names the
    resource listed first, as kubectl prefers the group discovery lists first."""
    names: dict[str, str] = {}
    for r in RESOURCES:
        if not r.stored:
            continue
        bare = (r.singular, r.plural, *r.short_names)
        qualified = (f"{r.plural}.{r.group}", f"{r.singular}.{r.group}", f"{r.plural}.{r.version}.{r.group}") \
            if r.group else ()
        for name in (*bare, *qualified):
            names.setdefault(name.lower(), r.kind)
    return names


_NAMES = _kubectl_names()


def known_resource_types() -> str:
    """Every kind the daemon stores (framework.api.objects.KINDS) with its short names."""
    out = []
    for kind in KINDS:
        r = BY_KIND[kind]
        plural = r.qualified if _NAMES.get(r.plural) != kind else r.plural
        out.append(f"{plural} ({', '.join(r.short_names)})" if r.short_names else plural)
    return ", ".join(out)


def resolve_kind(name: str) -> str:
    """A kind key from any name kubectl accepts for it (or the key itself)."""
    if name in KINDS:
        return name
    kind = _NAMES.get(name.lower())
    if kind is None:
        raise ValidationError("kind", f"unknown resource type {name!r}; known types: {known_resource_types()}")
    return kind


def is_namespaced(kind: str) -> bool:
    return KINDS[kind].namespaced


def ref(obj: Mapping[str, Any]) -> str:
    """kubectl's `kind/name` (lower-case kind; `workload.scheduling.k8s.io/name` for a
    kind named with its group)."""
    return f"{str(kind_key(obj) or obj.get('kind', '')).lower()}/{(obj.get('metadata') or {}).get('name', '')}"


# --- small formatters ---------------------------------------------------------------------


def age(obj: Mapping[str, Any], now: float) -> str:
    ts = (obj.get("metadata") or {}).get("creationTimestamp")
    if not ts:
        return "<unknown>"
    try:
        seconds = int(now - parse_time(ts, "metadata.creationTimestamp") / 1e9)
    except ValidationError:
        return "<invalid>"
    return human_duration(seconds)


def human_duration(seconds: int) -> str:
    """kubectl's duration.HumanDuration."""
    seconds = max(seconds, 0)
    if seconds < 120:
        return f"{seconds}s"
    minutes = seconds // 60
    if minutes < 10:
        return f"{minutes}m{seconds % 60}s" if seconds % 60 else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = minutes // 60
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return f"{hours // 24}d{hours % 24}h" if hours % 24 else f"{hours // 24}d"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    years, days = hours // 24 // 365, hours // 24 % 365
    if hours < 24 * 365 * 8:
        return f"{years}y{days}d" if days else f"{years}y"
    return f"{years}y"


def milli_cpu(m: int) -> str:
    return f"{m // 1000}" if m % 1000 == 0 else f"{m}m"


def memory(b: int) -> str:
    for unit, size in (("Gi", 1 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10)):
        if b >= size and b % size == 0:
            return f"{b // size}{unit}"
    if b >= 1 << 20:
        return f"{b / (1 << 20):.0f}Mi"
    return str(b)


def condition(obj: Mapping[str, Any], ctype: str) -> Mapping[str, Any] | None:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if isinstance(c, Mapping) and c.get("type") == ctype:
            return c
    return None


def pod_status(raw: Mapping[str, Any]) -> str:
    status = raw.get("status") or {}
    spec = raw.get("spec") or {}
    phase = status.get("phase") or "Pending"
    if (raw.get("metadata") or {}).get("deletionTimestamp"):
        return "Terminating"
    if phase != "Pending":
        return phase
    if spec.get("nodeName"):
        return "Bound"
    if spec.get("schedulingGates"):
        return "SchedulingGated"
    sched = condition(raw, "PodScheduled")
    if sched is not None and sched.get("status") == "False":
        return str(sched.get("reason") or "Unschedulable")
    return "Pending"


def table(headers: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    rows = [list(map(str, r)) for r in rows]
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(headers)]
    lines = ["   ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in [list(headers), *rows]]
    return "\n".join(lines)


def _meta(raw: Mapping[str, Any]) -> Mapping[str, Any]:
    return raw.get("metadata") or {}


def _typed_pod(raw: Mapping[str, Any]) -> Pod | None:
    try:
        return Pod(raw)
    except ValidationError:
        return None


def node_usage(pods: Iterable[Mapping[str, Any]]) -> dict[str, tuple[int, int, int]]:
    """node name -> (pods, milli-CPU requested, memory requested) over non-terminal pods."""
    out: dict[str, tuple[int, int, int]] = {}
    for raw in pods:
        p = _typed_pod(raw)
        if p is None or not p.node_name or p.is_terminal:
            continue
        n, cpu, mem = out.get(p.node_name, (0, 0, 0))
        out[p.node_name] = (n + 1, cpu + p.resource.milli_cpu, mem + p.resource.memory)
    return out


# --- get tables -----------------------------------------------------------------------------


def pods_table(items: Sequence[Mapping[str, Any]], now: float, *, wide: bool, namespaces: bool,
               prefix: str = "") -> str:
    headers = ["NAME", "STATUS", "NODE", "AGE"]
    if wide:
        headers += ["CPU", "MEMORY", "PRIORITY", "NOMINATED NODE", "POD GROUP"]
    if namespaces:
        headers.insert(0, "NAMESPACE")
    rows = []
    for raw in items:
        meta, spec = _meta(raw), raw.get("spec") or {}
        row = [prefix + meta.get("name", ""), pod_status(raw), spec.get("nodeName") or "<none>", age(raw, now)]
        if wide:
            p = _typed_pod(raw)
            row += [milli_cpu(p.resource.milli_cpu) if p else "?", memory(p.resource.memory) if p else "?",
                    str(spec.get("priority", 0)), (raw.get("status") or {}).get("nominatedNodeName") or "<none>",
                    (meta.get("labels") or {}).get(POD_GROUP_LABEL, "<none>")]
        if namespaces:
            row.insert(0, meta.get("namespace", "default"))
        rows.append(row)
    return table(headers, rows)


def nodes_table(items: Sequence[Mapping[str, Any]], pods: Sequence[Mapping[str, Any]], now: float, *, wide: bool,
                prefix: str = "") -> str:
    usage = node_usage(pods)
    headers = ["NAME", "STATUS", "PODS", "CPU(REQ/ALLOC)", "MEMORY(REQ/ALLOC)", "AGE"]
    if wide:
        headers += ["TAINTS", "LABELS"]
    rows = []
    for raw in items:
        meta = _meta(raw)
        try:
            node = Node(raw)
        except ValidationError:
            rows.append([prefix + meta.get("name", ""), "Invalid", "?", "?", "?", age(raw, now)] + (["", ""] if wide else []))
            continue
        n, cpu, mem = usage.get(node.name, (0, 0, 0))
        alloc = node.allocatable
        row = [prefix + node.name, "Ready,SchedulingDisabled" if node.unschedulable else "Ready",
               f"{n}/{alloc.allowed_pod_number}" if alloc.allowed_pod_number else str(n),
               f"{milli_cpu(cpu)}/{milli_cpu(alloc.milli_cpu)}", f"{memory(mem)}/{memory(alloc.memory)}", age(raw, now)]
        if wide:
            row += [",".join(f"{t.key}={t.value}:{t.effect}" if t.value else f"{t.key}:{t.effect}" for t in node.taints)
                    or "<none>",
                    ",".join(f"{k}={v}" for k, v in sorted(node.labels.items())) or "<none>"]
        rows.append(row)
    return table(headers, rows)


def pod_group_counts(group: Mapping[str, Any], pods: Sequence[Mapping[str, Any]]) -> tuple[int, int, int]:
    """(member pods, bound, finished) for one PodGroup."""
    meta = _meta(group)
    ns, name = meta.get("namespace", "default"), meta.get("name")
    members = [p for p in pods if _meta(p).get("namespace", "default") == ns
               and (_meta(p).get("labels") or {}).get(POD_GROUP_LABEL) == name]
    bound = sum(1 for p in members if (p.get("spec") or {}).get("nodeName"))
    done = sum(1 for p in members if (p.get("status") or {}).get("phase") in ("Succeeded", "Failed"))
    return len(members), bound, done


def pod_group_phase(group: Mapping[str, Any], pods: Sequence[Mapping[str, Any]]) -> str:
    phase = (group.get("status") or {}).get("phase")
    if phase:
        return str(phase)
    total, bound, _ = pod_group_counts(group, pods)
    min_member = int((group.get("spec") or {}).get("minMember") or 0)
    if bound and bound >= min_member:
        return "Scheduled"
    return "Pending" if total < min_member else "Scheduling"


REASON_WIDTH = 100


def pod_group_reason(group: Mapping[str, Any]) -> str:
    """The message of the status condition the daemon keeps (why the group waits)."""
    for cond in (group.get("status") or {}).get("conditions") or []:
        if isinstance(cond, Mapping) and cond.get("message"):
            return str(cond["message"])
    return ""


def podgroups_table(items: Sequence[Mapping[str, Any]], pods: Sequence[Mapping[str, Any]], now: float,
                    *, namespaces: bool, wide: bool = False, prefix: str = "") -> str:
    headers = ["NAME", "PHASE", "MIN MEMBER", "PODS", "BOUND", "FINISHED", "AGE", "REASON"]
    if namespaces:
        headers.insert(0, "NAMESPACE")
    rows = []
    for raw in items:
        total, bound, done = pod_group_counts(raw, pods)
        meta = _meta(raw)
        reason = pod_group_reason(raw) or "<none>"
        if not wide and len(reason) > REASON_WIDTH:
            reason = reason[:REASON_WIDTH - 3] + "..."
        row = [prefix + meta.get("name", ""), pod_group_phase(raw, pods), str((raw.get("spec") or {}).get("minMember", 0)),
               str(total), str(bound), str(done), age(raw, now), reason]
        if namespaces:
            row.insert(0, meta.get("namespace", "default"))
        rows.append(row)
    return table(headers, rows)


def generic_table(items: Sequence[Mapping[str, Any]], now: float, *, namespaces: bool, prefix: str = "") -> str:
    headers = (["NAMESPACE"] if namespaces else []) + ["NAME", "AGE"]
    rows = [([_meta(r).get("namespace", "")] if namespaces else []) + [prefix + _meta(r).get("name", ""), age(r, now)]
            for r in items]
    return table(headers, rows)


# --- events ----------------------------------------------------------------------------------

# upstream's event columns (printers.go): (name, priority; 1 = with -o wide only)
EVENT_COLUMNS: list[tuple[str, int]] = [
    ("Last Seen", 0), ("Type", 0), ("Reason", 0), ("Object", 0), ("Subobject", 1), ("Source", 1), ("Message", 0),
    ("First Seen", 1), ("Count", 1), ("Name", 1)]


def _since(ts: Any, now: float) -> str:
    if not ts:
        return "<unknown>"
    try:
        return human_duration(int(now - parse_time(ts, "time") / 1e9))
    except ValidationError:
        return "<invalid>"


def event_cells(raw: Mapping[str, Any], now: float) -> list[Any]:
    """An Event's cells in EVENT_COLUMNS order, as kubectl's printEvent words them."""
    inv = raw.get("involvedObject") or {}
    src = raw.get("source") or {}
    first = _since(raw.get("firstTimestamp") or raw.get("eventTime"), now)
    last = _since(raw.get("lastTimestamp"), now) if raw.get("lastTimestamp") else first
    kind = str(inv.get("kind", "")).lower()
    target = f"{kind}/{inv['name']}" if inv.get("name") else kind
    source = (f"{src.get('component')}{', ' + src['host'] if src.get('host') else ''}" if src.get("component")
              else ", ".join(x for x in (raw.get("reportingComponent"), raw.get("reportingInstance")) if x))
    count = raw.get("count") or 1
    return [last, raw.get("type", ""), raw.get("reason", ""), target, inv.get("fieldPath", ""), source,
            str(raw.get("message", "")).strip(), first, count, _meta(raw).get("name", "")]


def events_table(items: Sequence[Mapping[str, Any]], now: float, *, wide: bool, namespaces: bool) -> str:
    """`get events`: LAST SEEN TYPE REASON OBJECT MESSAGE (NAMESPACE first with -A; the
    rest of upstream's columns with -o wide)."""
    shown = [i for i, (_, priority) in enumerate(EVENT_COLUMNS) if wide or priority == 0]
    headers = (["NAMESPACE"] if namespaces else []) + [EVENT_COLUMNS[i][0].upper() for i in shown]
    rows = []
    for r in items:
        cells = event_cells(r, now)
        rows.append(([_meta(r).get("namespace", "")] if namespaces else []) + [str(cells[i]) for i in shown])
    return table(headers, rows)
