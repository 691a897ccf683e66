"""`ksched get`: kubectl's resource arguments (`pod/x`, `po a b`, `nodes,pods`),
tables per kind (names prefixed `kind/` when several kinds are shown, as kubectl
does), `-o name|json|yaml|wide`, and `-w` (the table, then a row per change).
"""
from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from typing import Any

import yaml

from framework.api.groups import POD_GROUP_KEY, WORKLOAD_KEY
from framework.api.schema.kueue import KUEUE_KINDS
from transport.cli.dra_tables import KINDS as DRA_KINDS, dra_table
from transport.cli.kueue_tables import kueue_table
from transport.cli.workload_tables import pod_groups_table, workloads_table
from transport.cli.resources import Target, kinds_in_order
from transport.cli.tables import (
    events_table,
    generic_table,
    is_namespaced,
    nodes_table,
    podgroups_table,
    pods_table,
    ref,
)
from transport.client.tcp import SyncClient
from transport.protocol.wire import ApiError


def namespace_of(args: argparse.Namespace, kind: str) -> str:
    """The namespace a request for `kind` is scoped to ("" for every namespace)."""
    if not is_namespaced(kind) or getattr(args, "all_namespaces", False):
        return ""
    return args.namespace or "default"


def dump(obj: Any, fmt: str) -> str:
    if fmt == "json":
        return json.dumps(obj, indent=2, sort_keys=False)
    return yaml.safe_dump(obj, sort_keys=False).rstrip()


def _sort_key(o: dict[str, Any]) -> tuple[str, str]:
    meta = o.get("metadata") or {}
    return meta.get("namespace", ""), meta.get("name", "")


def fetch(c: SyncClient, args: argparse.Namespace, targets: list[Target]) -> tuple[dict[str, list[dict[str, Any]]], int]:
    """Objects per kind (in the order the kinds were named) and the exit code:
    1 when a named object is missing (printed as kubectl prints it, the rest shown)."""
    out: dict[str, list[dict[str, Any]]] = {k: [] for k in kinds_in_order(targets)}
    code = 0
    for t in targets:
        ns = namespace_of(args, t.kind)
        if t.name is None:
            items, _ = c.list(t.kind, ns, args.selector or "", args.field_selector or "")
            out[t.kind] += sorted(items, key=_sort_key)
            continue
        try:
            out[t.kind].append(c.get(t.kind, t.name, ns or args.namespace or ""))
        except ApiError as err:
            if err.reason != "NotFound":
                raise
            print(f"Error from server (NotFound): {err.message}", file=sys.stderr)
            code = 1
    return out, code


def kind_table(c: SyncClient, kind: str, items: list[dict[str, Any]], *, wide: bool, namespaces: bool,
               prefix: str = "") -> str:
    now = time.time()
    if kind == "Pod":
        return pods_table(items, now, wide=wide, namespaces=namespaces, prefix=prefix)
    if kind == "Node":
        return nodes_table(items, c.list("Pod")[0], now, wide=wide, prefix=prefix)
    if kind == "PodGroup":
        return podgroups_table(items, c.list("Pod")[0], now, namespaces=namespaces, wide=wide, prefix=prefix)
    if kind == "Event":  # kubectl's event columns (OBJECT names each one's object)
        return events_table(items, now, wide=wide, namespaces=namespaces)
    if kind == POD_GROUP_KEY:
        return pod_groups_table(items, c.list("Pod")[0], now, namespaces=namespaces, prefix=prefix)
    if kind == WORKLOAD_KEY:
        return workloads_table(items, now, namespaces=namespaces, prefix=prefix)
    if kind in KUEUE_KINDS:  # Kueue's printer columns (no kind/ prefix there)
        return kueue_table(kind, items, c.list("Workload")[0], c.list("LocalQueue")[0], now, wide=wide,
                           namespaces=namespaces)
    if kind in DRA_KINDS:  # upstream's printer columns for resource.k8s.io
        return dra_table(kind, items, now, namespaces=namespaces, prefix=prefix)
    return generic_table(items, now, namespaces=namespaces, prefix=prefix)


def print_get(c: SyncClient, args: argparse.Namespace, targets: list[Target]) -> int:
    by_kind, code = fetch(c, args, targets)
    items = [o for objs in by_kind.values() for o in objs]
    single = len(targets) == 1 and targets[0].name is not None
    if args.output in ("json", "yaml"):
        if items or not single:
            doc: Any = items[0] if single else {"apiVersion": "v1", "kind": "List", "items": items}
            print(dump(doc, args.output))
        return code
    if args.output == "name":
        if items:
            print("\n".join(ref(o) for o in items))
        return code
    several = len(by_kind) > 1
    tables = [kind_table(c, kind, objs, wide=args.output == "wide", namespaces=args.all_namespaces,
                         prefix=f"{kind.lower()}/" if several else "")
              for kind, objs in by_kind.items() if objs]
    if tables:
        print("\n\n".join(tables))
    elif code == 0:
        ns = namespace_of(args, targets[0].kind) if targets else ""
        print(f"No resources found{' in ' + ns + ' namespace' if ns else ''}.", file=sys.stderr)
    return code


def watch_get(c: SyncClient, args: argparse.Namespace, targets: list[Target]) -> int:
    """`get -w`: the current table, then one row per change (kubectl's --watch)."""
    kinds = kinds_in_order(targets)
    if len(kinds) != 1:
        raise ValueError("you may only specify a single resource type with --watch")
    kind = kinds[0]
    names = {t.name for t in targets if t.name is not None}
    ns = namespace_of(args, kind)
    items, rv = c.list(kind, ns, args.selector or "", args.field_selector or "")
    items = sorted((o for o in items if not names or (o.get("metadata") or {}).get("name") in names), key=_sort_key)
    wide, namespaces = args.output == "wide", args.all_namespaces
    print(kind_table(c, kind, items, wide=wide, namespaces=namespaces), flush=True)
    with contextlib.closing(c.watch([kind], ns, rv)) as events:
        for ev in events:
            if names and (ev.object.get("metadata") or {}).get("name") not in names:
                continue
            row = kind_table(c, kind, [ev.object], wide=wide, namespaces=namespaces).split("\n", 1)[1]
            print(row, flush=True)
    return 0
