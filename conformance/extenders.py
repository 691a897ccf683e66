"""Fake extenders (SCHEMA-ADDITIONS.md section 2) served as real HTTP extenders
on loopback, and the extender function cases (section 4).

Every fake of a case is one path prefix on one aiohttp server on 127.0.0.1 with
a port the OS picks; the scheduler reaches it through the ordinary
HTTPExtender (actors/extenders.py), so the cases exercise the wire format too.
"""
from __future__ import annotations

import asyncio
import contextlib
from typing import Any, AsyncIterator, Awaitable, Callable

from aiohttp import web

from actors.extenders import HTTPExtender
from framework.algorithm import SchedulingAlgorithm
from framework.api.objects import Node, Pod
from framework.cache import Snapshot
from framework.config import build_frameworks, load_config
from framework.extender import (
    ExtenderError,
    add_extender_scores,
    Victims,
    convert_to_meta_victims,
    convert_to_victims,
    extenders_binding,
    find_nodes_that_pass_extenders,
    parse_extenders,
    pod_requests_managed_resource,
)
from framework.handle import FrameworkHandle, InMemoryObjects
from framework.interface import Code, CycleState, NodeToStatus, Status

# A resource no case's pod requests: an extender with it as a managed resource
# is interested in no pod (the HTTP form of `"interested": false`).
NEVER_REQUESTED = "conformance.ksched.io/never-requested"

Binder = Callable[[str, str, str, str], Awaitable[None]]  # namespace, name, uid, node


def _asked_nodes(body: dict[str, Any]) -> tuple[list[str], dict[str, Any]]:
    """The node names an ExtenderArgs asks about, and the Node objects by name."""
    if body.get("nodenames") is not None:
        return list(body["nodenames"]), {}
    items = (body.get("nodes") or {}).get("items") or []
    by_name = {((n.get("metadata") or {}).get("name", "")): n for n in items}
    return list(by_name), by_name


class FakeExtender:
    """One structured fake answering the extender/v1 protocol."""

    def __init__(self, spec: dict[str, Any], bind: Binder | None) -> None:
        self.spec = spec
        self.binder = bind
        self.bound: list[tuple[str, str]] = []  # (namespace/name, node) this extender bound

    async def filter(self, request: web.Request) -> web.Response:
        body = await request.json()
        f = self.spec["filter"]
        if "error" in f:
            return web.json_response({"error": f["error"]})
        names, objects = _asked_nodes(body)
        keep = [n for n in names if n in set(f.get("keep") or [])]
        failed = {n: m for n, m in (f.get("failed") or {}).items() if n in names}
        unresolvable = {n: m for n, m in (f.get("failedAndUnresolvable") or {}).items() if n in names}
        out: dict[str, Any] = {"failedNodes": failed, "failedAndUnresolvableNodes": unresolvable}
        if self.spec.get("nodeCacheCapable"):
            out["nodenames"] = keep
        else:
            out["nodes"] = {"items": [objects[n] for n in keep]}
        return web.json_response(out)

    async def prioritize(self, request: web.Request) -> web.Response:
        body = await request.json()
        p = self.spec["prioritize"]
        if "error" in p:
            return web.Response(status=500, text=p["error"])
        names, _ = _asked_nodes(body)
        scores = p.get("scores") or {}
        return web.json_response([{"host": n, "score": scores.get(n, 0)} for n in names])

    async def bind(self, request: web.Request) -> web.Response:
        body = await request.json()
        b = self.spec["bind"]
        if "error" in b:
            return web.json_response({"error": b["error"]})
        if self.binder is not None:
            await self.binder(body["podNamespace"], body["podName"], body["podUID"], body["node"])
        self.bound.append((f"{body['podNamespace']}/{body['podName']}", body["node"]))
        return web.json_response({})


def extender_config(spec: dict[str, Any], url: str) -> dict[str, Any]:
    """The KubeSchedulerConfiguration extenders[] item a fake stands for."""
    cfg: dict[str, Any] = {"urlPrefix": url, "ignorable": bool(spec.get("ignorable")),
                           "nodeCacheCapable": bool(spec.get("nodeCacheCapable"))}
    if "filter" in spec:
        cfg["filterVerb"] = "filter"
    if "prioritize" in spec:
        cfg["prioritizeVerb"] = "prioritize"
        cfg["weight"] = spec.get("weight", 1)
    elif "weight" in spec:
        cfg["weight"] = spec["weight"]
    if "bind" in spec:
        cfg["bindVerb"] = "bind"
    managed = [dict(r) for r in spec.get("managedResources") or []]
    if spec.get("interested") is False:
        managed.append({"name": NEVER_REQUESTED})
    if managed:
        cfg["managedResources"] = managed
    return cfg


@contextlib.asynccontextmanager
async def serve_fake_extenders(specs: list[dict[str, Any]], bind: Binder | None = None
                               ) -> AsyncIterator[tuple[list[dict[str, Any]], list[FakeExtender]]]:
    """Serve `specs` on loopback; yields their config items, in order, and the fakes."""
    if not specs:
        yield [], []
        return
    app = web.Application()
    fakes = []
    for i, spec in enumerate(specs):
        fake = FakeExtender(spec, bind)
        fakes.append(fake)
        for verb in ("filter", "prioritize", "bind"):
            if verb in spec:
                app.router.add_post(f"/ext{i}/{verb}", getattr(fake, verb))
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield [extender_config(s, f"http://127.0.0.1:{port}/ext{i}") for i, s in enumerate(specs)], fakes
    finally:
        await runner.cleanup()


class _PodNameInterest(HTTPExtender):
    """upstream's in-process fakeExtender: interested only in named pods."""

    def __init__(self, config: Any, pod_names: list[str]) -> None:
        super().__init__(config)
        self.pod_names = set(pod_names)

    def is_interested(self, pod: Pod) -> bool:
        return pod.name in self.pod_names


@contextlib.asynccontextmanager
async def case_extenders(specs: list[dict[str, Any]], bind: Binder | None = None
                         ) -> AsyncIterator[tuple[list[HTTPExtender], list[FakeExtender]]]:
    async with serve_fake_extenders(specs, bind) as (items, fakes):
        exts: list[HTTPExtender] = []
        for spec, cfg in zip(specs, parse_extenders(items)):
            interest = spec.get("interested")
            exts.append(_PodNameInterest(cfg, interest["podNames"]) if isinstance(interest, dict)
                        else HTTPExtender(cfg))
        try:
            yield exts, fakes
        finally:
            for e in exts:
                await e.close()


def _status(d: dict[str, Any]) -> Status:
    return Status(Code[d["code"]], *(d.get("reasons") or []))


def _status_dict(st: Status) -> dict[str, Any]:
    return {"code": st.code.name, "reasons": list(st.reasons)}


# --- function cases ---------------------------------------------------------------------------------

async def _find_nodes_that_pass_extenders(inp: dict[str, Any]) -> dict[str, Any]:
    pod = Pod(inp["pod"])
    nodes = [Node({"metadata": {"name": n}}) for n in inp["nodes"]]
    statuses = NodeToStatus({n: _status(s) for n, s in (inp.get("statuses") or {}).items()},
                            _status(inp["absentStatus"]) if inp.get("absentStatus") else None)
    async with case_extenders(inp["extenders"]) as (exts, _):
        try:
            feasible = await find_nodes_that_pass_extenders(exts, pod, nodes, statuses)
        except ExtenderError as e:
            return {"error": True, "message": str(e)}
    return {"feasibleNodes": [n.name for n in feasible],
            "statuses": {n: _status_dict(s) for n, s in statuses.items()}}


def _profile_framework(profile: dict[str, Any] | None, snapshot: Snapshot, objects: InMemoryObjects,
                       binder: Callable[[Pod, str], Awaitable[None]] | None = None) -> Any:
    cfg = load_config({"profiles": [profile]} if profile else None)
    handle = FrameworkHandle(snapshot=snapshot, objects=objects, binder=binder)
    return next(iter(build_frameworks(cfg, handle).values()))


async def _prioritize_nodes(inp: dict[str, Any]) -> dict[str, Any]:
    pod = Pod(inp["pod"])
    nodes = [Node(n) for n in inp["nodes"]]
    profile = {"plugins": {"multiPoint": {"disabled": [{"name": "*"}]},
                           "queueSort": {"enabled": [{"name": "PrioritySort"}]},
                           "bind": {"enabled": [{"name": "DefaultBinder"}]},
                           "score": {"enabled": [dict(p) for p in inp.get("scorePlugins") or []]}}}
    snapshot = Snapshot.build(nodes, [])
    fwk = _profile_framework(profile, snapshot, InMemoryObjects([*nodes, pod]))
    feasible = snapshot.list()
    state = CycleState()
    async with case_extenders(inp["extenders"]) as (exts, _):
        scores = SchedulingAlgorithm().prioritize_nodes(fwk, state, pod, feasible, with_extenders=True)
        await add_extender_scores(exts, pod, feasible, scores)
    names = {e.name: spec["name"] for e, spec in zip(exts, inp["extenders"])}
    return {"nodeScores": {ns.name: {"total": ns.total_score,
                                     "scores": {names.get(p, p): s for p, s in ns.scores}} for ns in scores}}


async def _extenders_binding(inp: dict[str, Any]) -> dict[str, Any]:
    pod = Pod(inp["pod"])
    bound_by_plugin: list[str] = []

    async def default_binder(p: Pod, node: str) -> None:
        bound_by_plugin.append(node)

    fwk = _profile_framework(inp.get("profile"), Snapshot(), InMemoryObjects([pod]), default_binder)
    async with case_extenders(inp["extenders"]) as (exts, fakes):
        took, status = await extenders_binding(exts, pod, inp["node"])
        if not took:
            status = await fwk.run_bind(CycleState(), pod, inp["node"])
    bound_by = next((spec["name"] for spec, f in zip(inp["extenders"], fakes) if f.bound), None)
    if bound_by is None and bound_by_plugin:
        bound_by = "DefaultBinder"
    return {"status": {"code": status.code.name}, "boundBy": bound_by}


def _sync(fn: Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    return lambda case: asyncio.run(fn(case["input"]))


def _is_interested(case: dict[str, Any]) -> dict[str, Any]:
    inp = case["input"]
    return {"interested": pod_requests_managed_resource(Pod(inp["pod"]), set(inp.get("managedResources") or []))}


def _to_meta_victims(case: dict[str, Any]) -> dict[str, Any]:
    victims = {n: Victims([Pod(p) for p in v.get("pods") or []], v.get("numPDBViolations", 0))
               for n, v in case["input"]["nodeNameToVictims"].items()}
    return {"nodeNameToMetaVictims": convert_to_meta_victims(victims)}


def _to_victims(case: dict[str, Any]) -> dict[str, Any]:
    inp = case["input"]
    pods_on_node = {n: [Pod(p) for p in pods] for n, pods in (inp.get("nodes") or {}).items()}
    try:
        victims = convert_to_victims(inp["nodeNameToMetaVictims"], pods_on_node, "conformance")
    except ExtenderError as e:
        return {"error": str(e)}
    return {"nodeNameToVictims": {n: {"pods": [p.name for p in v.pods], "numPDBViolations": v.num_pdb_violations}
                                  for n, v in victims.items()}}


FUNCTIONS = {
    "findNodesThatPassExtenders": _sync(_find_nodes_that_pass_extenders),
    "prioritizeNodes": _sync(_prioritize_nodes),
    "extendersBinding": _sync(_extenders_binding),
    "extenderIsInterested": _is_interested,
    "convertToMetaVictims": _to_meta_victims,
    "convertToVictims": _to_victims,
}
