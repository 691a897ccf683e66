"""The durable note an eviction leaves on its Workload while it re-creates pods gated.

An evicted workload's released pods are deleted and created again gated: two store
writes per pod, with nothing durable between them. Before the first delete the
admission actor writes the pods it is about to re-create (their gated form) into the
Workload's annotation `ksched.io/evicting-pods`; the write that releases the quota
removes it. A daemon killed in between finds the note when the Workload is replayed
and creates the pods that are missing, so a pod acknowledged to its client is never
lost to an eviction. Pure functions over the raw Workload.
"""
from __future__ import annotations

import json
from typing import Any, Mapping

EVICTING = "ksched.io/evicting-pods"


def noted_pods(workload: Mapping[str, Any] | None) -> dict[str, dict[str, Any]]:
    """The gated pods an unfinished eviction was re-creating, by namespace/name."""
    text = (((workload or {}).get("metadata") or {}).get("annotations") or {}).get(EVICTING)
    if not text:
        return {}
    try:
        pods = json.loads(text)
    except ValueError:
        return {}
    out = {}
    for p in pods if isinstance(pods, list) else []:
        m = p.get("metadata") or {} if isinstance(p, dict) else {}
        if m.get("name"):
            out[f"{m.get('namespace') or 'default'}/{m['name']}"] = p
    return out


def _metadata(workload: Mapping[str, Any], annotations: dict[str, str]) -> dict[str, Any]:
    meta = {k: v for k, v in (workload.get("metadata") or {}).items() if k not in ("resourceVersion", "annotations")}
    if annotations:
        meta["annotations"] = annotations
    return meta


def with_note(workload: Mapping[str, Any], pods: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The Workload to write before the deletes: the note holds `pods` (gated forms)."""
    annotations = dict((workload.get("metadata") or {}).get("annotations") or {})
    annotations[EVICTING] = json.dumps([pods[k] for k in sorted(pods)], separators=(",", ":"), sort_keys=True)
    return {**workload, "metadata": _metadata(workload, annotations)}


def without_note(workload: Mapping[str, Any]) -> dict[str, Any]:
    """Its metadata without the note (and without resourceVersion: an unconditional write)."""
    annotations = {k: v for k, v in ((workload.get("metadata") or {}).get("annotations") or {}).items()
                   if k != EVICTING}
    return _metadata(workload, annotations)


def has_note(workload: Mapping[str, Any] | None) -> bool:
    return EVICTING in ((((workload or {}).get("metadata") or {}).get("annotations")) or {})
