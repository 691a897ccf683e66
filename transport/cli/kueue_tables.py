"""`ksched get`/`describe` for Kueue's kinds, with the columns of Kueue's printers
(the +kubebuilder:printcolumn lines of apis/kueue/v1beta2/*_types.go). Pending and
admitted counts and usage are computed from the stored Workloads, as Kueue's status
fields count them. Pure functions from JSON dicts to text."""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from framework.api.quantity import parse_quantity_text
from framework.kueue.amount import amount_of, format_amount
from transport.cli.tables import age, table

def _meta(o: Mapping[str, Any]) -> Mapping[str, Any]:
    return o.get("metadata") or {}


def _cond(o: Mapping[str, Any], t: str) -> Mapping[str, Any] | None:
    return next((c for c in (o.get("status") or {}).get("conditions") or [] if c.get("type") == t), None)


def _finished(w: Mapping[str, Any]) -> bool:
    c = _cond(w, "Finished")
    return c is not None and c.get("status") == "True"


def _admission(w: Mapping[str, Any]) -> Mapping[str, Any] | None:
    r = _cond(w, "QuotaReserved")
    return (w.get("status") or {}).get("admission") if r is not None and r.get("status") == "True" else None


def counts(workloads: Sequence[Mapping[str, Any]], local_queues: Sequence[Mapping[str, Any]]
           ) -> tuple[dict[str, list[int]], dict[tuple[str, str], list[int]]]:
    """[pending, admitted] per ClusterQueue and per (namespace, LocalQueue)."""
    lq_cq = {(_meta(q).get("namespace", "default"), _meta(q).get("name")): (q.get("spec") or {}).get("clusterQueue")
             for q in local_queues}
    per_cq: dict[str, list[int]] = {}
    per_lq: dict[tuple[str, str], list[int]] = {}
    for w in workloads:
        if _finished(w):
            continue
        lq = (_meta(w).get("namespace", "default"), (w.get("spec") or {}).get("queueName", ""))
        adm = _admission(w)
        cq = adm.get("clusterQueue") if adm else lq_cq.get(lq)
        i = 1 if adm else 0
        if cq:
            per_cq.setdefault(cq, [0, 0])[i] += 1
        per_lq.setdefault(lq, [0, 0])[i] += 1
    return per_cq, per_lq


def usage(workloads: Sequence[Mapping[str, Any]]) -> dict[str, dict[tuple[str, str], int]]:
    """Canonical amounts per ClusterQueue and (flavor, resource) held by admitted workloads."""
    out: dict[str, dict[tuple[str, str], int]] = {}
    for w in workloads:
        adm = _admission(w)
        if adm is None or _finished(w):
            continue
        u = out.setdefault(adm.get("clusterQueue", ""), {})
        for a in adm.get("podSetAssignments") or []:
            for res, flavor in (a.get("flavors") or {}).items():
                q = (a.get("resourceUsage") or {}).get(res)
                if q is not None:
                    u[(flavor, res)] = u.get((flavor, res), 0) + amount_of(res, parse_quantity_text(str(q)))
    return out


def nominal(cq: Mapping[str, Any]) -> dict[tuple[str, str], int]:
    out = {}
    for g in (cq.get("spec") or {}).get("resourceGroups") or []:
        for f in g.get("flavors") or []:
            for r in f.get("resources") or []:
                out[(f["name"], r["name"])] = amount_of(r["name"], parse_quantity_text(str(r.get("nominalQuota", "0"))))
    return out


def usage_text(cq: Mapping[str, Any], used: Mapping[tuple[str, str], int]) -> str:
    return ",".join(f"{f}/{r}={format_amount(r, used.get((f, r), 0))}/{format_amount(r, n)}"
                    for (f, r), n in sorted(nominal(cq).items())) or "<none>"


def kueue_table(kind: str, items: Sequence[Mapping[str, Any]], workloads: Sequence[Mapping[str, Any]],
                local_queues: Sequence[Mapping[str, Any]], now: float, *, wide: bool, namespaces: bool) -> str:
    per_cq, per_lq = counts(workloads, local_queues)
    if kind == "ClusterQueue":
        used = usage(workloads)
        headers = ["NAME", "COHORT"] + (["STRATEGY"] if wide else []) + ["PENDING WORKLOADS"] + \
                  (["ADMITTED WORKLOADS", "USAGE"] if wide else [])
        rows = []
        for o in items:
            n, spec = _meta(o).get("name", ""), o.get("spec") or {}
            c = per_cq.get(n, [0, 0])
            cohort = spec.get("cohortName") or spec.get("cohort") or ""  # v1beta1 prints spec.cohort
            rows.append([n, cohort] + ([spec.get("queueingStrategy") or "BestEffortFIFO"] if wide else [])
                        + [str(c[0])] + ([str(c[1]), usage_text(o, used.get(n, {}))] if wide else []))
        return table(headers, rows)
    if kind == "LocalQueue":
        rows = []
        for o in items:
            key = (_meta(o).get("namespace", "default"), _meta(o).get("name", ""))
            c = per_lq.get(key, [0, 0])
            rows.append(([key[0]] if namespaces else []) + [key[1], (o.get("spec") or {}).get("clusterQueue", ""),
                                                             str(c[0]), str(c[1])])
        return table((["NAMESPACE"] if namespaces else []) + ["NAME", "CLUSTERQUEUE", "PENDING WORKLOADS",
                                                              "ADMITTED WORKLOADS"], rows)
    if kind == "Workload":
        rows = []
        for o in items:
            adm, fin = _cond(o, "Admitted"), _cond(o, "Finished")
            rows.append(([_meta(o).get("namespace", "")] if namespaces else []) + [
                _meta(o).get("name", ""), (o.get("spec") or {}).get("queueName", ""),
                (_admission(o) or {}).get("clusterQueue", ""), (adm or {}).get("status", ""),
                (fin or {}).get("status", ""), age(o, now)])
        return table((["NAMESPACE"] if namespaces else []) + ["NAME", "QUEUE", "RESERVED IN", "ADMITTED", "FINISHED",
                                                              "AGE"], rows)
    return table(["NAME", "AGE"], [[_meta(o).get("name", ""), age(o, now)] for o in items])


def describe_workload(w: Mapping[str, Any], events: Sequence[Mapping[str, Any]], now: float) -> str:
    from transport.cli.describe import _conditions, _events, _indent, _kv  # shared layout helpers
    meta, spec = _meta(w), w.get("spec") or {}
    lines = _kv([("Name", meta.get("name", "")), ("Namespace", meta.get("namespace", "")),
                 ("Queue", spec.get("queueName", "") or "<none>"), ("Priority", spec.get("priority", 0)),
                 ("Age", age(w, now))])
    rows = []
    for ps in spec.get("podSets") or []:
        containers = ((ps.get("template") or {}).get("spec") or {}).get("containers") or []
        req = ",".join(f"{k}={v}" for c in containers for k, v in ((c.get("resources") or {}).get("requests") or {}).items())
        rows.append([ps.get("name", "main"), str(ps.get("count", 1)), req or "<none>"])
    lines += ["Pod Sets:", _indent(table(["NAME", "COUNT", "REQUESTS (PER POD)"], rows))]
    adm = (w.get("status") or {}).get("admission")
    if adm:
        arows = [[a.get("name", ""), str(a.get("count", "")),
                  ",".join(f"{r}={f}" for r, f in sorted((a.get("flavors") or {}).items())),
                  ",".join(f"{r}={q}" for r, q in sorted((a.get("resourceUsage") or {}).items()))]
                 for a in adm.get("podSetAssignments") or []]
        lines += [f"Admission:   ClusterQueue {adm.get('clusterQueue', '')}",
                  _indent(table(["POD SET", "COUNT", "FLAVORS", "RESOURCE USAGE"], arows))]
    else:
        lines += ["Admission:   <none>"]
    return "\n".join(lines + _conditions(w) + _events(events, now))
