"""What Kueue's ClusterQueue, LocalQueue and ResourceFlavor controllers write, written
by the admission actor after each batch of cycles: the stored objects it knows; the
status framework.kueue.status computes for each ClusterQueue and LocalQueue, written
when it differs; and the resource-in-use finalizer taken off a deleting
ResourceFlavor no ClusterQueue uses and a deleting ClusterQueue no workload holds
quota in (pkg/controller/core/resourceflavor_controller.go,
clusterqueue_controller.go: Reconcile), which lets the store delete them.

A write carries the resourceVersion it read: a client's change in between is a
Conflict, and its event brings the new object, whose status is written next time.
Its own writes coming back through the watch are recognised by resourceVersion and
change nothing (the spec did not change).
"""
from __future__ import annotations

import logging
from typing import Any

from actors.store import Conflict, NotFound, StoreError, WatchEvent
from framework.kueue.manager import AdmissionState
from framework.kueue.status import cluster_queue_status, local_queue_status
from framework.kueue.workload import WorkloadInfo

log = logging.getLogger(__name__)
STATUS_KINDS = ("ClusterQueue", "LocalQueue", "ResourceFlavor")
RESOURCE_IN_USE = "kueue.x-k8s.io/resource-in-use"


class QueueStatusWriter:
    def __init__(self, store: Any) -> None:
        self.store = store
        self.raw: dict[str, dict[str, dict[str, Any]]] = {k: {} for k in STATUS_KINDS}
        self.written_rv: dict[tuple[str, str], int] = {}

    def observe(self, ev: WatchEvent) -> bool:
        """Keep the stored object; True when `ev` is this writer's own write coming back."""
        if ev.kind not in self.raw:
            return False
        key = (ev.kind, ev.obj.key)
        if ev.type == "DELETED":
            self.raw[ev.kind].pop(ev.obj.key, None)
            self.written_rv.pop(key, None)
            return False
        if ev.resource_version <= self.written_rv.get(key, -1):
            return True
        self.raw[ev.kind][ev.obj.key] = ev.obj.raw
        return False

    async def write(self, state: AdmissionState, now: int, fair_sharing: bool) -> None:
        await self._release_finalizers(state)
        for name, raw in list(self.raw["ClusterQueue"].items()):
            cq = state.cache.cluster_queues.get(name)
            if cq is None or _released(raw):
                continue
            meta = raw.get("metadata") or {}
            status = cluster_queue_status(cq, state.pending(name), raw.get("status"), now, fair_sharing=fair_sharing,
                                          generation=meta.get("generation"))
            await self._put("ClusterQueue", name, raw, status)
        by_queue: dict[tuple[str, str], list[WorkloadInfo]] = {}
        for wl in state.workloads.values():
            by_queue.setdefault((wl.namespace, wl.queue_name), []).append(wl)
        for key, raw in list(self.raw["LocalQueue"].items()):
            meta = raw.get("metadata") or {}
            where = (meta.get("namespace") or "default", meta.get("name") or "")
            lq = state.local_queues.get(where)
            if lq is None:
                continue
            cq = state.cache.cluster_queues.get(lq.cluster_queue)
            status = local_queue_status(lq, cq, by_queue.get(where, []), raw.get("status"), now,
                                        generation=meta.get("generation"))
            await self._put("LocalQueue", key, raw, status)

    async def _release_finalizers(self, state: AdmissionState) -> None:
        used = {fq.name for cq in state.cluster_queues.values() for g in cq.resource_groups for fq in g.flavors}
        for name, raw in list(self.raw["ResourceFlavor"].items()):
            if _held(raw) and name not in used:
                await self._update("ResourceFlavor", name, _without_finalizer(raw))
        for name, raw in list(self.raw["ClusterQueue"].items()):
            cq = state.cache.cluster_queues.get(name)
            if _held(raw) and (cq is None or not cq.workloads):
                await self._update("ClusterQueue", name, _without_finalizer(raw))

    async def _put(self, kind: str, key: str, raw: dict[str, Any], status: dict[str, Any]) -> None:
        if raw.get("status") != status:
            await self._update(kind, key, {**raw, "status": status})

    async def _update(self, kind: str, key: str, new: dict[str, Any]) -> None:
        try:
            stored = await self.store.update(new)
        except (Conflict, NotFound):
            return  # changed or gone meanwhile: its event comes next
        except StoreError as e:
            log.warning("admission: cannot write %s %s: %s", kind, key, e)
            return
        self.written_rv[(kind, key)] = int(stored["metadata"].get("resourceVersion") or 0)
        self.raw[kind][key] = stored


def _held(raw: dict[str, Any]) -> bool:
    """Being deleted, and kept by Kueue's finalizer."""
    meta = raw.get("metadata") or {}
    return bool(meta.get("deletionTimestamp")) and RESOURCE_IN_USE in (meta.get("finalizers") or [])


def _released(raw: dict[str, Any]) -> bool:
    meta = raw.get("metadata") or {}
    return bool(meta.get("deletionTimestamp")) and RESOURCE_IN_USE not in (meta.get("finalizers") or [])


def _without_finalizer(raw: dict[str, Any]) -> dict[str, Any]:
    meta = dict(raw.get("metadata") or {})
    meta["finalizers"] = [f for f in meta.get("finalizers") or [] if f != RESOURCE_IN_USE]
    return {**raw, "metadata": meta}
