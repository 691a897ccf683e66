"""What a write's reply holds on the msgpack wire: an apply's compact form when its
objects would not fit in a frame (ops.py sends them in full when they do), and a
write's warnings. An apply's
reply never contradicts its commit: when the whole reply (every stored object) would
be above the frame limit, it is compact: actions, names and counts."""
from __future__ import annotations

from typing import Any

import msgpack


def with_warnings(result: dict[str, Any], warnings: list[str]) -> dict[str, Any]:
    """A write's reply with its warnings (kube-apiserver's Warning headers), when any."""
    if warnings:
        result["warnings"] = list(dict.fromkeys(warnings))
    return result


def compact_apply_result(items: list[dict[str, Any]], actions: list[str], limit: int) -> dict[str, Any]:
    """An apply's reply when every stored object would not fit in a frame: the
    compact form (actions, "namespace/name" per object, counts), and at worst the
    counts alone. Never an error: the objects are committed."""
    margin = 1024  # the reply's envelope
    counts: dict[str, int] = {}
    for a in actions:
        counts[a] = counts.get(a, 0) + 1
    rv = max((int((o.get("metadata") or {}).get("resourceVersion") or 0) for o in items), default=0)
    names = [f"{(o.get('metadata') or {}).get('namespace', '')}/{(o.get('metadata') or {}).get('name', '')}"
             for o in items]
    compact = {"compact": True, "actions": actions, "names": names, "counts": counts, "resourceVersion": rv}
    if len(msgpack.packb(compact, use_bin_type=True)) + margin <= limit:
        return compact
    return {"compact": True, "counts": counts, "resourceVersion": rv}
