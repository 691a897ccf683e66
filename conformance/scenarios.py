"""Scenario cases (CASE_SCHEMA.md, cases with `schedule`): the whole scheduler.

The case's cluster goes into the store of a real Pipeline (fake clock, in-memory
store) built with the case's profile and its fake plugins; the `schedule` pods are
submitted in order; the fake clock is advanced through backoffs and Permit
timeouts until nothing more can happen (at most 15 simulated minutes). `actual`
is read from the run: bindings from the store, the last attempt's FitError /
error / evaluated nodes from the scheduler, victims and nominations as they
happened.
"""
from __future__ import annotations

import asyncio
import random
from typing import Any

from actors.clock import FakeClock
from actors.pipeline import Pipeline
from actors.scheduler import Attempt
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
    # and pods without containers: the store checks shapes, not names.
    async with Pipeline(cfg, clock=clock, registry=registry, rand=random.Random(0),
                        validate_names=False) as p:
        pipeline.append(p)
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
        return _actual(p, scheduled, bound)


def _actual(p: Pipeline, scheduled: list[Pod], bound: dict[str, str | None]) -> dict[str, Any]:
    sched = p.scheduler
    actual: dict[str, Any] = {"bindings": {pod.key: bound.get(pod.key) for pod in scheduled}}
    actual["preempted"] = sorted(set(sched.preemption.preempted) | set(p.preemption.preempted))
    actual["nominated"] = {k: v[0] for k, v in sched.nominations.items() if v}
    attempts: list[tuple[str, Attempt]] = [(pod.key, sched.attempts[pod.key]) for pod in scheduled if pod.key in sched.attempts]
    for key, a in attempts:
        if a.result is not None:
            actual["evaluatedNodes"] = a.result.evaluated_nodes
            actual["feasibleNodes"] = a.result.feasible_nodes
        if a.fit_error is not None:
            actual["fitError"] = fit_error_dict(key, a, p)
        if a.error:
            actual["schedulingError"] = a.error
    return actual


def fit_error_dict(key: str, a: Attempt, p: Pipeline) -> dict[str, Any]:
    err = a.fit_error
    assert err is not None
    d = err.diagnosis
    statuses = {}
    for ni in p.scheduler.snapshot.list():
        st = d.node_to_status.get(ni.name)
        entry: dict[str, Any] = {"code": st.code.name, "reasons": list(st.reasons)}
        if st.plugin:
            entry["failedPlugin"] = st.plugin
        statuses[ni.name] = entry
    return {
        "pod": key,
        "numAllNodes": err.num_all_nodes,
        "unschedulablePlugins": sorted(d.unschedulable_plugins),
        "nodeStatuses": statuses,
        "message": err.message(),
    }
