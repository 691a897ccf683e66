"""The client commands of `ksched`: each takes the parsed arguments and returns
the exit code. They talk to the daemon through SyncClient; an error reply prints
`Error from server (Reason): message` and exits 1.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from pathlib import Path
from typing import Any, BinaryIO, Callable, Iterable, Iterator, TextIO

import yaml

from framework.api.errors import ValidationError
from transport.client.tcp import SyncClient, applied_items, client_tls_context
from transport.cli.describe import describe_node, describe_pod, describe_podgroup, explain_report
from transport.cli.kueue_tables import KINDS as KUEUE_KINDS, describe_workload, kueue_table
from transport.protocol.manifests import ManifestError, decode_utf8, load_all
from transport.cli.tables import (
    generic_table,
    is_namespaced,
    nodes_table,
    pod_status,
    podgroups_table,
    pods_table,
    ref,
    resolve_kind,
)
from transport.protocol.wire import ApiError

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")


class UsageError(Exception):
    """Bad input on the command line or in a manifest (exit code 2)."""


# --- manifests ----------------------------------------------------------------------------


def parse_manifests(text: str, source: str) -> list[dict[str, Any]]:
    """Every object in a YAML or JSON text: many documents, JSON arrays and `kind: List`,
    read as kubectl reads them (transport.protocol.manifests)."""
    try:
        docs = load_all(text, source)  # YAML is a superset of JSON
    except ManifestError as exc:
        raise UsageError(f"{source}: not valid YAML or JSON: {exc.detail}") from None
    out: list[dict[str, Any]] = []

    def add(doc: Any, where: str) -> None:
        if doc is None:
            return
        if isinstance(doc, list):
            for i, d in enumerate(doc):
                add(d, f"{where}[{i}]")
        elif isinstance(doc, dict) and doc.get("kind") == "List" and isinstance(doc.get("items"), list):
            add(doc["items"], f"{where}.items")
        elif isinstance(doc, dict):
            if not isinstance(doc.get("kind"), str):
                raise UsageError(f"{source}: {where}: kind: is required")
            out.append(doc)
        else:
            raise UsageError(f"{source}: {where}: must be an object, got {type(doc).__name__}")

    for i, doc in enumerate(docs):
        add(doc, f"document {i}")
    return out


def _read_text(data: bytes, source: str) -> str:
    try:
        return decode_utf8(data, source)
    except ManifestError as exc:
        raise UsageError(str(exc)) from None


def load_manifests(paths: Iterable[str], stdin: BinaryIO | TextIO | None = None) -> list[dict[str, Any]]:
    objects: list[dict[str, Any]] = []
    for p in paths:
        if p == "-":
            stream = stdin if stdin is not None else sys.stdin.buffer
            data = stream.read()
            text = data if isinstance(data, str) else _read_text(data, "<stdin>")
            objects += parse_manifests(text, "<stdin>")
            continue
        path = Path(p)
        try:
            if path.is_dir():
                files = sorted(f for f in path.iterdir() if f.is_file() and f.suffix in MANIFEST_SUFFIXES)
            elif path.exists():
                files = [path]
            else:
                raise UsageError(f"{p}: no such file or directory")
            for f in files:
                objects += parse_manifests(_read_text(f.read_bytes(), str(f)), str(f))
        except OSError as exc:
            raise UsageError(f"{exc.filename or p}: cannot read: {exc.strerror or exc}") from None
    return objects


# --- plumbing -----------------------------------------------------------------------------


def _run(args: argparse.Namespace, body: Callable[[SyncClient], int]) -> int:
    try:
        ctx = client_tls_context(args.tls_ca) if getattr(args, "tls_ca", None) else None
        with SyncClient(args.server, args.token, timeout=args.timeout, ssl_context=ctx) as client:
            return body(client)
    except ApiError as err:
        print(f"Error from server ({err.reason}): {err.message}", file=sys.stderr)
        return 1
    except (UsageError, ValidationError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2


def _read_manifests(paths: Iterable[str]) -> list[dict[str, Any]] | None:
    """The objects in `paths`, read before connecting (as kubectl does), or None
    once the reason they cannot be read is printed."""
    try:
        return load_manifests(paths)
    except UsageError as err:
        print(f"error: {err}", file=sys.stderr)
        return None


def _namespace(args: argparse.Namespace, kind: str) -> str:
    if not is_namespaced(kind) or getattr(args, "all_namespaces", False):
        return ""
    return args.namespace or "default"


def _dump(obj: Any, fmt: str) -> str:
    if fmt == "json":
        return json.dumps(obj, indent=2, sort_keys=False)
    return yaml.safe_dump(obj, sort_keys=False).rstrip()


# --- commands -----------------------------------------------------------------------------


# kubectl's --validate values and the fieldValidation each sends (true/false: older spellings).
VALIDATE = {"strict": "Strict", "true": "Strict", "warn": "Warn", "ignore": "Ignore", "false": "Ignore"}


def _print_warnings(result: dict[str, Any]) -> None:
    """A write's warnings, as kubectl prints kube-apiserver's Warning headers."""
    for text in result.get("warnings") or ():
        print(f"Warning: {text}", file=sys.stderr)


def _no_generate_name(objects: list[dict[str, Any]]) -> None:
    """apply needs each object's name to find it again (kubectl's check)."""
    for obj in objects:
        meta = obj.get("metadata") if isinstance(obj, dict) else None
        if isinstance(meta, dict) and not meta.get("name") and meta.get("generateName"):
            raise UsageError(f"from {meta['generateName']}: cannot use generate name with apply")


def cmd_apply(args: argparse.Namespace) -> int:
    objects = _read_manifests(args.filename)
    if objects is None:
        return 2

    def body(c: SyncClient) -> int:
        if not objects:
            raise UsageError("no objects passed to apply")
        _no_generate_name(objects)
        result = c.request("apply", objects=objects,  # one request: all or nothing
                           fieldValidation=VALIDATE[args.validate])
        _print_warnings(result)
        if "actions" not in result:  # too many objects to name in one reply: counts only
            print(", ".join(f"{n} {action}" for action, n in sorted(result.get("counts", {}).items())))
            return 0
        for obj, action in zip(applied_items(result, objects), result["actions"]):
            print(f"{ref(obj)} {action}")
        return 0

    return _run(args, body)


def cmd_create(args: argparse.Namespace) -> int:
    """Create each object (generateName honoured); an existing one is AlreadyExists.
    As kubectl create -f, each object is its own request: the ones before a refused
    one stay created."""
    objects = _read_manifests(args.filename)
    if objects is None:
        return 2

    def body(c: SyncClient) -> int:
        if not objects:
            raise UsageError("no objects passed to create")
        failed = 0
        for obj in objects:
            try:
                result = c.request("create", object=obj, fieldValidation=VALIDATE[args.validate])
            except ApiError as err:
                print(f"Error from server ({err.reason}): {err.message}", file=sys.stderr)
                failed += 1
                continue
            _print_warnings(result)
            print(f"{ref(result['object'])} created")
        return 1 if failed else 0

    return _run(args, body)


def cmd_get(args: argparse.Namespace) -> int:
    def body(c: SyncClient) -> int:
        kind = resolve_kind(args.kind)
        ns = _namespace(args, kind)
        if args.name:
            items = [c.get(kind, args.name, ns or args.namespace or "")]
        else:
            items, _ = c.list(kind, ns, args.selector or "", args.field_selector or "")
        items.sort(key=lambda o: ((o.get("metadata") or {}).get("namespace", ""), (o.get("metadata") or {}).get("name", "")))
        if args.output in ("json", "yaml"):
            doc: Any = items[0] if args.name else {"apiVersion": "v1", "kind": "List", "items": items}
            print(_dump(doc, args.output))
            return 0
        if args.output == "name":
            print("\n".join(ref(o) for o in items))
            return 0
        if not items:
            print(f"No resources found{' in ' + ns + ' namespace' if ns else ''}.", file=sys.stderr)
            return 0
        print(_table(c, kind, items, wide=args.output == "wide", namespaces=getattr(args, "all_namespaces", False)))
        return 0

    return _run(args, body)


def _table(c: SyncClient, kind: str, items: list[dict[str, Any]], *, wide: bool, namespaces: bool) -> str:
    now = time.time()
    if kind == "Pod":
        return pods_table(items, now, wide=wide, namespaces=namespaces)
    if kind == "Node":
        return nodes_table(items, c.list("Pod")[0], now, wide=wide)
    if kind == "PodGroup":
        return podgroups_table(items, c.list("Pod")[0], now, namespaces=namespaces, wide=wide)
    if kind in KUEUE_KINDS:
        return kueue_table(kind, items, c.list("Workload")[0], c.list("LocalQueue")[0], now, wide=wide,
                           namespaces=namespaces)
    return generic_table(items, now, namespaces=namespaces)


def cmd_describe(args: argparse.Namespace) -> int:
    def body(c: SyncClient) -> int:
        kind = resolve_kind(args.kind)
        ns = _namespace(args, kind)
        obj = c.get(kind, args.name, ns)
        events = c.events(kind, args.name, ns)
        now = time.time()
        if kind == "Pod":
            print(describe_pod(obj, events, now))
        elif kind == "Node":
            print(describe_node(obj, c.list("Pod")[0], events, now))
        elif kind == "PodGroup":
            print(describe_podgroup(obj, c.list("Pod", ns)[0], events, now))
        elif kind == "Workload":
            print(describe_workload(obj, events, now))
        else:
            print(_dump(obj, "yaml"))
        return 0

    return _run(args, body)


def cmd_delete(args: argparse.Namespace) -> int:
    objects = _read_manifests(args.filename) if args.filename else []
    if objects is None:
        return 2

    def body(c: SyncClient) -> int:
        targets: list[tuple[str, str, str]] = []
        if objects:
            for obj in objects:
                kind = resolve_kind(obj["kind"])
                meta = obj.get("metadata") or {}
                targets.append((kind, meta.get("name", ""), meta.get("namespace", "") or _namespace(args, kind)))
        if args.kind:
            if not args.names:
                raise UsageError("delete KIND needs at least one NAME")
            kind = resolve_kind(args.kind)
            targets += [(kind, name, _namespace(args, kind)) for name in args.names]
        if not targets:
            raise UsageError("nothing to delete: give KIND NAME... or -f FILE")
        code = 0
        for kind, name, ns in targets:
            try:
                print(f"{ref(c.delete(kind, name, ns))} deleted")
            except ApiError as err:
                if err.reason != "NotFound":
                    raise
                print(f"Error from server (NotFound): {err.message}", file=sys.stderr)
                code = 1
        return code

    return _run(args, body)


def cmd_watch(args: argparse.Namespace) -> int:
    def body(c: SyncClient) -> int:
        kinds = [resolve_kind(k) for k in args.kinds]
        with contextlib.closing(c.watch(kinds, args.namespace or "", args.resource_version or 0)) as events:
            return _print_events(events, args)

    return _run(args, body)


def _print_events(events: Iterator[Any], args: argparse.Namespace) -> int:
    for seen, ev in enumerate(events, 1):
        if args.output == "json":
            print(json.dumps({"type": ev.type, "resourceVersion": ev.resource_version, "object": ev.object}), flush=True)
        else:
            extra = ""
            if ev.object.get("kind") == "Pod":
                node = (ev.object.get("spec") or {}).get("nodeName") or "<none>"
                extra = f"  {pod_status(ev.object)}  node={node}"
            print(f"{ev.type:<9} {ref(ev.object)}  rv={ev.resource_version}{extra}", flush=True)
        if args.count is not None and seen >= args.count:
            break
    return 0


def cmd_explain(args: argparse.Namespace) -> int:
    objects = _read_manifests([args.filename])
    if objects is None:
        return 2

    def body(c: SyncClient) -> int:
        pods = [o for o in objects if o.get("kind") == "Pod"]
        if len(pods) != 1:
            raise UsageError(f"explain needs exactly one Pod in {args.filename}, found {len(pods)}")
        result = c.explain(pods[0])
        print(json.dumps(result, indent=2) if args.output == "json" else explain_report(result))
        return 0

    return _run(args, body)


def cmd_complete(args: argparse.Namespace) -> int:
    def body(c: SyncClient) -> int:
        pod = c.complete(args.name, args.namespace or "default", failed=args.failed)
        print(f"{ref(pod)} {(pod.get('status') or {}).get('phase', '').lower()}")
        return 0

    return _run(args, body)


def cmd_stats(args: argparse.Namespace) -> int:
    def body(c: SyncClient) -> int:
        print(_dump(c.stats(), "yaml"))
        return 0

    return _run(args, body)
