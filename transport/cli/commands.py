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
from transport.client.tcp import ConnectError, SyncClient, client_tls_context
from transport.cli.describe import (NO_GANGS, describe_node, describe_pod, describe_podgroup, events_section,
                                    explain_report)
from transport.cli.dra_tables import KINDS as DRA_KINDS
from transport.cli.generic_describe import describe_generic
from transport.cli.apply import VALIDATE, in_namespace, print_warnings, read_chunks, stream_apply
from transport.cli.manifests import UsageError, load_manifests, parse_manifests  # noqa: F401
from transport.cli.get import dump, namespace_of, print_get, watch_get
from transport.cli.resources import ResourceArgError, Target, resource_targets
from transport.cli.tables import is_namespaced, known_resource_types, pod_status, ref, resolve_kind
from transport.cli.kueue_tables import describe_workload
from transport.cli.workload_tables import describe_pod_group_v1alpha2, describe_workload_v1alpha2
from framework.api.groups import POD_GROUP_KEY, WORKLOAD_KEY, kind_key
from transport.protocol.wire import ApiError

# --- plumbing -----------------------------------------------------------------------------


def _run(args: argparse.Namespace, body: Callable[[SyncClient], int]) -> int:
    try:
        ctx = client_tls_context(args.tls_ca) if getattr(args, "tls_ca", None) else None
        with SyncClient(args.server, args.token, timeout=args.timeout, ssl_context=ctx) as client:
            return body(client)
    except ConnectError as err:  # no server answered: not "Error from server"
        print(err.message if err.reason == "Unavailable" else f"error: {err.message}", file=sys.stderr)
        return 1
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


# --- commands -----------------------------------------------------------------------------


def cmd_apply(args: argparse.Namespace) -> int:
    try:
        chunks = read_chunks(args)
    except UsageError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2

    def body(c: SyncClient) -> int:
        outcome = c.run(lambda client: stream_apply(client, args, chunks, sys.stdout, sys.stderr))
        if not outcome.applied and not outcome.failed:
            raise UsageError("no objects passed to apply")
        if outcome.groups and not gangs_enforced(c):
            extra = f" and {len(outcome.groups) - 1} more" if len(outcome.groups) > 1 else ""
            print(f"Warning: {outcome.groups[0]}{extra}: gang scheduling is {NO_GANGS}", file=sys.stderr)
        return 1 if outcome.failed else 0

    return _run(args, body)


def cmd_create(args: argparse.Namespace) -> int:
    """Create each object (generateName honoured); an existing one is AlreadyExists.
    As kubectl create -f, each object is its own request: the ones before a refused
    one stay created."""
    objects = _read_manifests(args.filename)
    if objects is None:
        return 2
    if args.namespace:
        try:
            objects = [in_namespace(o, args.namespace) for o in objects]
        except UsageError as err:
            print(f"error: {err}", file=sys.stderr)
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
            print_warnings(result)
            print(f"{ref(result['object'])} created")
        return 1 if failed else 0

    return _run(args, body)


def _targets(args: argparse.Namespace) -> list[Target]:
    try:
        return resource_targets(args.resources)
    except ResourceArgError as err:
        raise UsageError(str(err)) from None


def cmd_get(args: argparse.Namespace) -> int:
    def body(c: SyncClient) -> int:
        targets = _targets(args)
        if not targets:
            raise UsageError(f"you must specify the type of resource to get; known types: {known_resource_types()}")
        if args.watch:
            try:
                return watch_get(c, args, targets)
            except ValueError as err:
                raise UsageError(str(err)) from None
        return print_get(c, args, targets)

    return _run(args, body)


def cmd_describe(args: argparse.Namespace) -> int:
    def body(c: SyncClient) -> int:
        targets = _targets(args)
        if not targets:
            raise UsageError("describe needs TYPE [NAME...] or TYPE/NAME")
        pages: list[str] = []
        code = 0
        for t in targets:
            ns = namespace_of(args, t.kind)
            if t.name is None:
                objs = sorted(c.list(t.kind, ns)[0], key=lambda o: (o.get("metadata") or {}).get("name", ""))
            else:
                try:
                    objs = [c.get(t.kind, t.name, ns)]
                except ApiError as err:
                    if err.reason != "NotFound":
                        raise
                    print(f"Error from server (NotFound): {err.message}", file=sys.stderr)
                    code = 1
                    continue
            pages += [_describe_one(c, t.kind, obj) for obj in objs]
        if pages:
            print("\n\n\n".join(pages))
        return code

    return _run(args, body)


def _describe_one(c: SyncClient, kind: str, obj: dict[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    name, ns = meta.get("name", ""), meta.get("namespace", "") if is_namespaced(kind) else ""
    events = c.events(kind, name, ns)
    now = time.time()
    if kind == "Pod":
        return describe_pod(obj, events, now)
    if kind == "Node":
        return describe_node(obj, c.list("Pod")[0], events, now)
    if kind == "PodGroup":
        return describe_podgroup(obj, c.list("Pod", ns)[0], events, now, gangs=gangs_enforced(c))
    if kind == "Workload":
        return describe_workload(obj, events, now)
    if kind == WORKLOAD_KEY:
        return describe_workload_v1alpha2(obj, events, now)
    if kind == POD_GROUP_KEY:
        return describe_pod_group_v1alpha2(obj, c.list("Pod", ns)[0], events, now)
    if kind in DRA_KINDS:  # kubectl has no describer of its own for them: its generic one
        return describe_generic(obj, events, events_section(events, now))
    return dump(obj, "yaml")


def cmd_delete(args: argparse.Namespace) -> int:
    objects = _read_manifests(args.filename) if args.filename else []
    if objects is None:
        return 2

    def body(c: SyncClient) -> int:
        targets: list[tuple[str, str, str]] = []
        if objects:
            for obj in objects:
                kind = resolve_kind(kind_key(obj) or obj["kind"])
                meta = obj.get("metadata") or {}
                targets.append((kind, meta.get("name", ""), meta.get("namespace", "") or namespace_of(args, kind)))
        named = _targets(args)
        if any(t.name is None for t in named):
            raise UsageError("delete TYPE needs at least one NAME: ksched delete TYPE NAME... or TYPE/NAME...")
        targets += [(t.kind, t.name or "", namespace_of(args, t.kind)) for t in named]
        if not targets:
            raise UsageError("nothing to delete: give TYPE NAME..., TYPE/NAME... or -f FILE")
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
    if bool(args.filename) == bool(args.resources):
        print("error: explain needs a stored pod (pod/NAME) or -f FILE, not both", file=sys.stderr)
        return 2
    objects = _read_manifests([args.filename]) if args.filename else []
    if objects is None:
        return 2

    def body(c: SyncClient) -> int:
        if args.resources:
            targets = _targets(args)
            if len(targets) != 1 or targets[0].name is None or targets[0].kind not in EXPLAINABLE:
                raise UsageError("explain names one pod or pod group: pod/NAME, podgroup/NAME or "
                                 "podgroups.scheduling.k8s.io/NAME")
            if targets[0].kind == "Pod":
                pod = c.get("Pod", targets[0].name, namespace_of(args, "Pod"))
            else:
                pod = group_member(c, targets[0].name, namespace_of(args, "Pod"))
        else:
            pods = [o for o in objects if o.get("kind") == "Pod"]
            if len(pods) != 1:
                raise UsageError(f"explain needs exactly one Pod in {args.filename}, found {len(pods)}")
            pod = pods[0]
        result = c.explain(pod)
        if args.output == "json":
            print(json.dumps(result, indent=2))
        else:
            print(explain_report(result, gates=scheduling_gates(pod), bound_to=(pod.get("spec") or {}).get("nodeName")))
        return 0

    return _run(args, body)


EXPLAINABLE = ("Pod", "PodGroup", POD_GROUP_KEY)  # a pod, or a pod group through one of its members


def group_member(c: SyncClient, group: str, namespace: str) -> dict[str, Any]:
    """The member of a pod group explain dry-runs (a pending one first): the pod
    naming it in spec.schedulingGroup, or carrying Coscheduling's label."""
    items, _ = c.list("Pod", namespace)
    members = [p for p in items
               if ((p.get("spec") or {}).get("schedulingGroup") or {}).get("podGroupName") == group
               or ((p.get("metadata") or {}).get("labels") or {}).get("scheduling.x-k8s.io/pod-group") == group]
    if not members:
        raise UsageError(f"pod group {namespace}/{group} has no member pods to explain")
    members.sort(key=lambda p: (bool((p.get("spec") or {}).get("nodeName")), p["metadata"]["name"]))
    return members[0]


def scheduling_gates(pod: dict[str, Any]) -> list[str]:
    gates = (pod.get("spec") or {}).get("schedulingGates") or []
    return [str(g.get("name", "")) if isinstance(g, dict) else str(g) for g in gates]


def gangs_enforced(c: SyncClient) -> bool:
    """Whether some profile of the daemon places PodGroups all or nothing (an older
    daemon that does not say is taken to)."""
    profiles = c.stats().get("gangProfiles")
    return profiles is None or bool(profiles)


def cmd_complete(args: argparse.Namespace) -> int:
    def body(c: SyncClient) -> int:
        pod = c.complete(args.name, args.namespace or "default", failed=args.failed)
        print(f"{ref(pod)} {(pod.get('status') or {}).get('phase', '').lower()}")
        return 0

    return _run(args, body)


def cmd_stats(args: argparse.Namespace) -> int:
    def body(c: SyncClient) -> int:
        print(dump(c.stats(), "yaml"))
        return 0

    return _run(args, body)
