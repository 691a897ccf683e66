"""The page's Queues view, fed per object with the admission code's own parsing
(framework.kueue): a ClusterQueue's nominal quota per flavor and resource, a
Workload's ClusterQueue, usage and state, a LocalQueue's ClusterQueue."""
from __future__ import annotations

from typing import Any, Mapping

from framework.api.errors import ValidationError
from framework.kueue.api import parse_cluster_queue, parse_local_queue
from framework.kueue.workload import parse_workload


def cluster_queue_view(raw: Mapping[str, Any]) -> dict[str, Any]:
    try:
        cq = parse_cluster_queue(raw, strict=False)
    except ValidationError as err:
        return {"invalid": str(err)}
    quota = [[f.name, r.name, r.nominal] for g in cq.resource_groups for f in g.flavors for r in f.resources]
    return {"cohort": cq.cohort, "quota": quota}


def workload_view(raw: Mapping[str, Any]) -> dict[str, Any]:
    try:
        wl = parse_workload(raw, strict=False)
    except ValidationError as err:
        return {"invalid": str(err)}
    holds = wl.has_quota and not wl.cond_true("Finished")
    return {"clusterQueue": wl.admission.cluster_queue if holds else "",
            "queue": f"{wl.namespace}/{wl.queue_name}", "finished": wl.cond_true("Finished"),
            "usage": [[f, r, v] for (f, r), v in sorted(wl.usage().items())] if holds else []}


def local_queue_view(raw: Mapping[str, Any]) -> dict[str, Any]:
    try:
        return {"clusterQueue": parse_local_queue(raw, strict=False).cluster_queue}
    except ValidationError as err:
        return {"invalid": str(err)}


VIEWS = {"ClusterQueue": cluster_queue_view, "Workload": workload_view, "LocalQueue": local_queue_view}
