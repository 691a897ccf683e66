"""`ksched get` and the server-side Table for DRA's kinds, with the columns of upstream's
printers (pkg/printers/internalversion/printers.go): DeviceClass and
ResourceClaimTemplate NAME AGE; ResourceClaim NAME STATE AGE, the state as
resourceClaimState words it; ResourceSlice NAME NODE DRIVER POOL AGE. Pure functions
from JSON dicts to cells and text."""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from transport.cli.tables import age, table

KINDS = frozenset({"DeviceClass", "ResourceClaim", "ResourceClaimTemplate", "ResourceSlice"})
# (column, priority) per kind, as upstream's printers list them
COLUMNS: dict[str, list[tuple[str, int]]] = {
    "DeviceClass": [("Name", 0), ("Age", 0)],
    "ResourceClaimTemplate": [("Name", 0), ("Age", 0)],
    "ResourceClaim": [("Name", 0), ("State", 0), ("Age", 0)],
    "ResourceSlice": [("Name", 0), ("Node", 0), ("Driver", 0), ("Pool", 0), ("Age", 0)],
}


def resource_claim_state(raw: Mapping[str, Any]) -> str:
    """"pending", "allocated", "allocated,reserved", "deleted", "deleted,allocated,reserved"..."""
    meta, status = raw.get("metadata") or {}, raw.get("status") or {}
    states = ["deleted"] if meta.get("deletionTimestamp") else []
    if not status.get("allocation"):
        if not meta.get("deletionTimestamp"):
            states.append("pending")
    else:
        states.append("allocated")
        if status.get("reservedFor"):
            states.append("reserved")
    return ",".join(states)


def cells(kind: str, raw: Mapping[str, Any], now: float) -> list[Any]:
    """One row of `kind`'s columns (names unprefixed)."""
    name = (raw.get("metadata") or {}).get("name", "")
    if kind == "ResourceClaim":
        return [name, resource_claim_state(raw), age(raw, now)]
    if kind == "ResourceSlice":
        spec = raw.get("spec") or {}
        return [name, spec.get("nodeName") or "", spec.get("driver") or "", (spec.get("pool") or {}).get("name") or "",
                age(raw, now)]
    return [name, age(raw, now)]


def dra_table(kind: str, items: Sequence[Mapping[str, Any]], now: float, *, namespaces: bool,
              prefix: str = "") -> str:
    headers = (["NAMESPACE"] if namespaces else []) + [c.upper() for c, _ in COLUMNS[kind]]
    rows = []
    for raw in items:
        row = cells(kind, raw, now)
        row[0] = prefix + row[0]
        rows.append(([(raw.get("metadata") or {}).get("namespace", "")] if namespaces else []) + row)
    return table(headers, rows)
