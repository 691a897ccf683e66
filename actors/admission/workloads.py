"""Which queued pods make which Workload (single pods, Kueue pod groups, ksched
PodGroups), kept from the store's watch; pure bookkeeping for the admission actor."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Mapping

from framework.kueue.pods import GATE, GROUP_TOTAL, group_name, priority_of, queue_name, workload_for_pods


def _meta(raw: Mapping[str, Any]) -> Mapping[str, Any]:
    return raw.get("metadata") or {}


def pod_key(raw: Mapping[str, Any]) -> str:
    m = _meta(raw)
    return f"{m.get('namespace') or 'default'}/{m.get('name')}"


def is_gated(raw: Mapping[str, Any]) -> bool:
    return any(isinstance(g, Mapping) and g.get("name") == GATE for g in (raw.get("spec") or {}).get("schedulingGates") or [])


def is_terminal(raw: Mapping[str, Any]) -> bool:
    return (raw.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def is_placed(raw: Mapping[str, Any]) -> bool:
    return bool((raw.get("spec") or {}).get("nodeName")) or (raw.get("status") or {}).get("phase") in ("Running", "Succeeded")


def single_name(namespace: str, pod_name: str) -> str:
    """The Workload of a single pod: pod-<name>-<5 hex> (Kueue hashes the pod's UID;
    ksched hashes namespace/name so a pod re-created gated after eviction keeps it)."""
    return f"pod-{pod_name}-{hashlib.sha1(f'{namespace}/{pod_name}'.encode()).hexdigest()[:5]}"


@dataclass
class PodIndex:
    pods: dict[str, dict[str, Any]] = field(default_factory=dict)  # queued pods by key
    by_workload: dict[str, set[str]] = field(default_factory=dict)  # workload key -> pod keys
    workload_of: dict[str, str] = field(default_factory=dict)
    group_sizes: dict[tuple[str, str], int] = field(default_factory=dict)  # ksched PodGroup minMember
    priority_classes: dict[str, int] = field(default_factory=dict)  # WorkloadPriorityClass name -> value

    def workload_key(self, raw: Mapping[str, Any]) -> str:
        m = _meta(raw)
        ns = m.get("namespace") or "default"
        g = group_name(raw)
        return f"{ns}/{g}" if g else f"{ns}/{single_name(ns, str(m.get('name')))}"

    def put(self, raw: dict[str, Any]) -> str:
        key = pod_key(raw)
        self.pods[key] = raw
        wk = self.workload_key(raw)
        self.workload_of[key] = wk
        self.by_workload.setdefault(wk, set()).add(key)
        return wk

    def drop(self, key: str) -> str | None:
        self.pods.pop(key, None)
        wk = self.workload_of.pop(key, None)
        if wk is not None:
            members = self.by_workload.get(wk, set())
            members.discard(key)
            if not members:
                self.by_workload.pop(wk, None)
        return wk

    def members(self, wk: str) -> list[dict[str, Any]]:
        return [self.pods[k] for k in sorted(self.by_workload.get(wk, ())) if k in self.pods]

    def expected_size(self, wk: str) -> int | None:
        """How many pods the workload needs before it exists (None: unknown yet)."""
        pods = self.members(wk)
        if not pods:
            return None
        if not group_name(pods[0]):
            return 1
        total = (_meta(pods[0]).get("annotations") or {}).get(GROUP_TOTAL)
        if total is not None:
            return int(total)
        ns, name = wk.split("/", 1)
        return self.group_sizes.get((ns, name))

    def build(self, wk: str) -> dict[str, Any] | None:
        """The Workload for `wk` once enough runnable pods exist, else None."""
        size = self.expected_size(wk)
        pods = [p for p in self.members(wk) if not is_terminal(p) and queue_name(p)]
        if size is None or len(pods) < size or not pods:
            return None
        ns, name = wk.split("/", 1)
        return workload_for_pods(name, ns, pods[:size], size, priority_of(pods, self.priority_classes),
                                 bool(group_name(pods[0])))
