"""ClusterQueue and LocalQueue status, written by the admission actor after each batch
of cycles (Kueue's ClusterQueue and LocalQueue controllers): the stored objects it
knows, the status framework.kueue.status computes for each, written when it differs.

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
from framework.kueue.workload import Workload

log = logging.getLogger(__name__)
STATUS_KINDS = ("ClusterQueue", "LocalQueue")


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
        for name, raw in list(self.raw["ClusterQueue"].items()):
            cq = state.cache.cluster_queues.get(name)
            if cq is None:
                continue
            meta = raw.get("metadata") or {}
            status = cluster_queue_status(cq, state.pending(name), raw.get("status"), now, fair_sharing=fair_sharing,
                                          generation=meta.get("generation"),
                                          terminating=bool(meta.get("deletionTimestamp")))
            await self._put("ClusterQueue", name, raw, status)
        by_queue: dict[tuple[str, str], list[Workload]] = {}
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

    async def _put(self, kind: str, key: str, raw: dict[str, Any], status: dict[str, Any]) -> None:
        if raw.get("status") == status:
            return
        try:
            stored = await self.store.update({**raw, "status": status})
        except (Conflict, NotFound):
            return  # changed or gone meanwhile: its event comes next
        except StoreError as e:
            log.warning("admission: cannot write the status of %s %s: %s", kind, key, e)
            return
        self.written_rv[(kind, key)] = int(stored["metadata"].get("resourceVersion") or 0)
        self.raw[kind][key] = stored
