"""Compact builders for the resource plugin tests: nodes with allocatable, pods with
container requests, and a snapshot + handle to construct plugins with."""
from __future__ import annotations

from typing import Any

from framework.api.objects import Node, Pod
from framework.cache import Snapshot
from framework.features import FeatureGates
from framework.handle import FrameworkHandle


def make_node(name: str, images: list[tuple[list[str], int]] | None = None, **allocatable: str) -> Node:
    alloc = {"pods": "32", **{k.replace("_", "-"): v for k, v in allocatable.items()}}
    status: dict[str, Any] = {"capacity": alloc, "allocatable": alloc}
    if images:
        status["images"] = [{"names": names, "sizeBytes": size} for names, size in images]
    return Node({"metadata": {"name": name}, "status": status})


def container(requests: dict[str, str] | None = None, *, image: str = "", sidecar: bool = False, name: str = "c") -> dict:
    c: dict[str, Any] = {"name": name, "image": image}
    if requests is not None:
        c["resources"] = {"requests": requests}
    if sidecar:
        c["restartPolicy"] = "Always"
    return c


def make_pod(
    name: str = "p",
    *containers: dict,
    init: list[dict] | None = None,
    node: str = "",
    overhead: dict[str, str] | None = None,
    pod_level: dict[str, str] | None = None,
    uid: str = "",
    nominated: str = "",
) -> Pod:
    spec: dict[str, Any] = {"containers": list(containers)}
    if init:
        spec["initContainers"] = init
    if node:
        spec["nodeName"] = node
    if overhead:
        spec["overhead"] = overhead
    if pod_level:
        spec["resources"] = {"requests": pod_level}
    meta: dict[str, Any] = {"name": name}
    if uid:
        meta["uid"] = uid
    raw: dict[str, Any] = {"metadata": meta, "spec": spec}
    if nominated:
        raw["status"] = {"nominatedNodeName": nominated}
    return Pod(raw)


def requests_pod(name: str = "p", node: str = "", **requests: str) -> Pod:
    """A pod with one container requesting `requests` (underscores become dashes)."""
    return make_pod(name, container({k.replace("_", "-"): v for k, v in requests.items()}), node=node)


def handle_for(nodes: list[Node], pods: list[Pod] = (), gates: dict[str, bool] | None = None) -> FrameworkHandle:
    return FrameworkHandle(snapshot=Snapshot.build(nodes, pods), features=FeatureGates(gates))
