"""Deletion with finalizers, as kube-apiserver does it for every kind
(registry/generic/registry/store.go: Delete, deletionFinalizersForGarbageCollection
aside; updateForGracefulDeletionAndFinalizers): deleting an object that still has
metadata.finalizers only sets metadata.deletionTimestamp (and
deletionGracePeriodSeconds 0); the object goes away when an update leaves it with
no finalizer. A deleting object takes no new finalizers. Pure helpers; the store's
Delete and Update apply them.

Kueue's ResourceFlavors and ClusterQueues get the finalizer
kueue.x-k8s.io/resource-in-use at the front door (its webhook's defaulting);
the admission actor removes it once nothing uses them (actors/admission/queue_status.py).
"""
from __future__ import annotations

from typing import Any, Mapping

from actors.store.messages import Invalid


def finalizers(raw: Mapping[str, Any]) -> list[Any]:
    f = (raw.get("metadata") or {}).get("finalizers")
    return list(f) if isinstance(f, list) else []


def deleting(raw: Mapping[str, Any]) -> bool:
    return bool((raw.get("metadata") or {}).get("deletionTimestamp"))


def marked_for_deletion(raw: Mapping[str, Any], now_text: str) -> dict[str, Any]:
    """`raw` (not changed) with deletionTimestamp `now_text`, grace period 0."""
    meta = dict(raw.get("metadata") or {})
    meta["deletionTimestamp"] = now_text
    meta["deletionGracePeriodSeconds"] = 0
    return {**raw, "metadata": meta}


def check_no_new_finalizers(raw: Mapping[str, Any], current: Mapping[str, Any]) -> None:
    """An update of a deleting object may remove finalizers, not add any."""
    if not deleting(current):
        return
    have = set(map(str, finalizers(current)))
    added = [str(f) for f in finalizers(raw) if str(f) not in have]
    if added:
        shown = ", ".join(f'"{f}"' for f in added)
        raise Invalid(f"metadata.finalizers: Forbidden: no new finalizers can be added if the object is being "
                      f"deleted, found new finalizers []string{{{shown}}}", "metadata.finalizers")
