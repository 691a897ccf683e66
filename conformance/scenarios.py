"""Scenario cases (CASE_SCHEMA.md, cases with `schedule`): the whole scheduler.

The case's cluster goes into the store of a real Pipeline (fake clock, in-memory
store) built with the case's profile and its fake plugins; the `schedule` pods are
submitted in order; the fake clock is advanced through backoffs and Permit
timeouts until nothing more can happen (at most 15 simulated minutes). `actual`
is read as any client reads it: bindings from the store, victims from their
Preempted events, nominations from a store watch (the first nominatedNodeName
written), and the last attempt's FitError / error / evaluated nodes asked of the
scheduler (GetAttempts, frozen copies).
"""
from __future__ import annotations

import asyncio
import random
from typing import Any

from actors.clock import FakeClock
from actors.pipeline import Pipeline
from actors.scheduler_views import AttemptView, FitErrorView
from actors.store import WatchEvent
from actors.store.write_chain import AS_WRITTEN
from framework.api.objects import KINDS, Pod
from framework.config import full_registry
from conformance.cluster import OBJECT_KEYS
from conformance.extenders import serve_fake_extenders
from conformance.fakes import fake_registry

MAX_SIMULATED_SECONDS = 15 * 60
API_VERSION = "kubescheduler.config.k8s.io/v1"
POD_GAP_SECONDS = 1e-6  # pods are created one after another, as upstream's tests do


def case_config(case: dict[str, Any]) -> dict[str, Any]:
    cfg: dict[str, Any] = {"apiVersion": API_VERSION, "kind": "KubeSchedulerConfiguration"}
    if case.get("profile") is not None:
        cfg["profiles"] = [case["profile"]]
    if case.get("featureGates"):
        cfg["featureGates"] = dict(case["featureGates"])
    if case.get("percentageOfNodesToScore") is not None:
        cfg["percentageOfNodesToScore"] = case["percentageOfNodesToScore"]
    return cfg


def _with_kind(raw: dict[str, Any], kind: str) -> dict[str, Any]:
    return raw if raw.get("kind") == kind else {**raw, "kind": kind}


def case_objects(case: dict[str, Any]) -> list[dict[str, Any]]:
    """Everything the cluster holds before the pods under test are submitted."""
    out = [_with_kind(n, "Node") for n in case.get("nodes") or []]
    for key, items in (case.get("objects") or {}).items():
        kind = OBJECT_KEYS[key].kind
        out.extend(_with_kind(o, kind) for o in items)
    out.extend(_with_kind(g, "PodGroup") for g in case.get("podGroups") or [])
    out.extend(_with_kind(p, "Pod") for p in case.get("pods") or [])
    out.extend(_with_kind(p, "Pod") for p in case.get("pendingPods") or [])
    assert all(o["kind"] in KINDS for o in out)
    return out


def run_scenario_case(case: dict[str, Any]) -> dict[str, Any]:
    return asyncio.run(run_scenario(case))


async def run_scenario(case: dict[str, Any]) -> dict[str, Any]:
    registry = full_registry(fake_registry(case["fakePlugins"]) if case.get("fakePlugins") else None)
    clock = FakeClock()
    scheduled = [Pod(_with_kind(p, "Pod")) for p in case["schedule"]]
    pipeline: list[Pipeline] = []

    async def extender_binds(namespace: str, name: str, uid: str, node: str) -> None:
        await pipeline[0].client.bind(namespace, name, node, uid)  # as a binder extender does, through the API

    async with serve_fake_extenders(case.get("extenders") or [], extender_binds) as (extenders, _):
        cfg = case_config(case)
        if extenders:
            cfg["extenders"] = extenders
        return await _run_pipeline(case, cfg, registry, clock, scheduled, pipeline)


async def _run_pipeline(case: dict[str, Any], cfg: dict[str, Any], registry: Any, clock: FakeClock,
                        scheduled: list[Pod], pipeline: list[Pipeline]) -> dict[str, Any]:
    # Upstream's cases use names kube-apiserver would refuse ("p_without_nominated_node")
    # and pods without containers: the store checks shapes, not names, and keeps them as written.
    async with Pipeline(cfg, clock=clock, registry=registry, rand=random.Random(0),
                        write_rules=AS_WRITTEN) as p:
        pipeline.append(p)
        nominated = FirstNominations()
        await p.client.watch(nominated.see, frozenset({"Pod"}))
        setup = case_objects(case)
        if setup:
            await p.client.apply(setup)
        await p.settle()
        for pod in scheduled:
            await p.client.create(_with_kind(pod.raw, "Pod"))  # type: ignore[arg-type]
            clock.advance(POD_GAP_SECONDS)
        await p.run_until_quiescent(MAX_SIMULATED_SECONDS)
        items, _ = await p.client.list("Pod")
        bound = {f"{i['metadata'].get('namespace', 'default')}/{i['metadata']['name']}": (i.get("spec") or {}).get("nodeName") or None
                 for i in items}
        actual: dict[str, Any] = {"bindings": {pod.key: bound.get(pod.key) for pod in scheduled}}
        actual["preempted"] = await _preempted(p, [o for o in setup if o["kind"] == "Pod"], scheduled)
        actual["nominated"] = nominated.first
        actual.update(_from_attempts(scheduled, await p.attempts(pod.key for pod in scheduled)))
        return actual


class FirstNominations:
    """A store watch's view of nominations: the first node written as a pod's
    status.nominatedNodeName by a change of that pod (a client sees no other)."""

    def __init__(self) -> None:
        self.first: dict[str, str] = {}

    def see(self, ev: WatchEvent) -> None:
        if ev.type != "MODIFIED" or not isinstance(ev.obj, Pod):
            return
        node = ev.obj.nominated_node_name
        if node and ev.obj.key not in self.first:
            self.first[ev.obj.key] = node


async def _preempted(p: Pipeline, setup_pods: list[dict[str, Any]], scheduled: list[Pod]) -> list[str]:
    """Every pod with a Preempted event, as any client reads events."""
    keys = {Pod(raw).key for raw in setup_pods} | {pod.key for pod in scheduled}
    out = []
    for key in sorted(keys):
        if any(e.reason == "Preempted" for e in await p.client.events("Pod", key)):
            out.append(key)
    return out


def _from_attempts(scheduled: list[Pod], attempts: dict[str, AttemptView]) -> dict[str, Any]:
    actual: dict[str, Any] = {}
    for pod in scheduled:
        a = attempts.get(pod.key)
        if a is None:
            continue
        if a.evaluated_nodes is not None:
            actual["evaluatedNodes"] = a.evaluated_nodes
            actual["feasibleNodes"] = a.feasible_nodes
        if a.fit_error is not None:
            actual["fitError"] = fit_error_dict(pod.key, a.fit_error)
        if a.error:
            actual["schedulingError"] = a.error
    return actual


def fit_error_dict(key: str, err: FitErrorView) -> dict[str, Any]:
    statuses = {}
    for ns in err.node_statuses:
        entry: dict[str, Any] = {"code": ns.code, "reasons": list(ns.reasons)}
        if ns.plugin:
            entry["failedPlugin"] = ns.plugin
        statuses[ns.node] = entry
    return {
        "pod": key,
        "numAllNodes": err.num_all_nodes,
        "unschedulablePlugins": list(err.unschedulable_plugins),
        "nodeStatuses": statuses,
        "message": err.message,
    }
