"""Builders and recording plugins for the pipeline tests."""
from __future__ import annotations

from typing import Any

from framework.api.objects import Pod
from framework.config import full_registry
from framework.interface import Code, CycleState, Status
from framework.plugins import Registry

API = "kubescheduler.config.k8s.io/v1"


def node(name: str, cpu: str = "4", memory: str = "8Gi", pods: str = "110", labels: dict | None = None) -> dict:
    alloc = {"cpu": cpu, "memory": memory, "pods": pods}
    return {"kind": "Node", "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
            "status": {"capacity": dict(alloc), "allocatable": dict(alloc)}}


def pod(name: str, cpu: str = "100m", memory: str = "100Mi", labels: dict | None = None, priority: int | None = None,
        scheduler: str | None = None) -> dict:
    spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": memory}}}]}
    if priority is not None:
        spec["priority"] = priority
    if scheduler:
        spec["schedulerName"] = scheduler
    return {"kind": "Pod", "metadata": {"name": name, "uid": name, "labels": labels or {}}, "spec": spec}


class RecordingReserve:
    """Reserve/Unreserve append "reserve:NAME" / "unreserve:NAME" to a shared log."""

    def __init__(self, name: str, log: list[str]) -> None:
        self.name = name
        self.log = log

    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        self.log.append(f"reserve:{self.name}")
        return None

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        self.log.append(f"unreserve:{self.name}")


class WaitPermit:
    """Permit: a pod labelled wait=G waits (timeout from label timeout=, default 10 s);
    a pod labelled release=G allows every waiting pod of group G; deny=yes rejects."""

    name = "WaitPermit"

    def __init__(self, handle: Any) -> None:
        self.handle = handle

    def permit(self, state: CycleState, pod: Pod, node_name: str) -> tuple[Status | None, float]:
        if pod.labels.get("deny"):
            return Status(Code.Unschedulable, "denied by test"), 0.0
        group = pod.labels.get("release")
        if group:
            self.handle.iterate_waiting_pods(
                lambda wp: wp.allow(self.name) if wp.pod.labels.get("wait") == group else None)
        if pod.labels.get("wait"):
            return Status(Code.Wait), float(pod.labels.get("timeout", "10"))
        return None, 0.0


def recording_registry(log: list[str]) -> Registry:
    extra = Registry()
    extra.register("A", lambda args, handle: RecordingReserve("A", log))
    extra.register("B", lambda args, handle: RecordingReserve("B", log))
    extra.register("WaitPermit", lambda args, handle: WaitPermit(handle))
    return full_registry(extra)


def profile(name: str = "default-scheduler", reserve: bool = True) -> dict:
    plugins: dict[str, Any] = {
        "multiPoint": {"disabled": [{"name": "*"}]},
        "queueSort": {"enabled": [{"name": "PrioritySort"}]},
        "preFilter": {"enabled": [{"name": "NodeResourcesFit"}]},
        "filter": {"enabled": [{"name": "NodeResourcesFit"}]},
        "permit": {"enabled": [{"name": "WaitPermit"}]},
        "bind": {"enabled": [{"name": "DefaultBinder"}]},
    }
    if reserve:
        plugins["reserve"] = {"enabled": [{"name": "A"}, {"name": "B"}]}
    return {"schedulerName": name, "plugins": plugins}


def config(*profiles: dict) -> dict:
    return {"apiVersion": API, "kind": "KubeSchedulerConfiguration", "profiles": list(profiles) or [profile()]}


class BlockingPreBind:
    """PreBind that never returns for pods labelled block=yes (a stuck volume attach)."""

    name = "BlockingPreBind"

    def __init__(self) -> None:
        import asyncio

        self.never = asyncio.Event()
        self.entered: list[str] = []

    async def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        if pod.labels.get("block") == "yes":
            self.entered.append(pod.name)
            await self.never.wait()
        return None


def blocking_registry(log: list[str], blocker: BlockingPreBind) -> Registry:
    reg = recording_registry(log)
    reg.register("BlockingPreBind", lambda args, handle: blocker)
    return reg


class ErrorFilter:
    """PreFilter that always fails with an Error, noting the clock time of each attempt."""

    name = "ErrorFilter"

    def __init__(self, handle: Any, times: list[float]) -> None:
        self.handle = handle
        self.times = times

    def pre_filter(self, state: CycleState, pod: Pod, nodes: list) -> tuple[None, Status]:
        self.times.append(self.handle.now())
        return None, Status(Code.Error, "injected error")

    def pre_filter_extensions(self) -> None:
        return None


def error_registry(times: list[float]) -> Registry:
    reg = recording_registry([])
    reg.register("ErrorFilter", lambda args, handle: ErrorFilter(handle, times))
    return reg
