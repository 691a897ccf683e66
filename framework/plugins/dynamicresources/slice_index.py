"""The ResourceSlices a node can reach, found without reading every slice per node: a
pool whose every slice names one node (spec.nodeName) belongs to that node alone; any
other pool (allNodes, nodeSelector, per-device selection, or slices naming several
nodes) is offered to every node and the allocator decides. The order of the slices is
kept, so the allocator sees the pools in the order it would over all slices."""
from __future__ import annotations

from typing import Any, Mapping, Sequence


class SlicesByNode:
    def __init__(self, slices: Sequence[Mapping[str, Any]]) -> None:
        pools: dict[tuple[str, str], list[int]] = {}
        for i, sl in enumerate(slices):
            spec = sl.get("spec") or {}
            pools.setdefault((str(spec.get("driver", "")), str((spec.get("pool") or {}).get("name", ""))), []).append(i)
        local: dict[str, list[int]] = {}
        shared: list[int] = []
        for members in pools.values():
            names = {(slices[i].get("spec") or {}).get("nodeName") or "" for i in members}
            (name,) = names if len(names) == 1 else ("",)
            if name:
                local.setdefault(name, []).extend(members)
            else:
                shared.extend(members)
        self._slices = slices
        self._local = local
        self._shared = shared

    @property
    def shared(self) -> bool:
        """Whether some pool is offered to every node (not all its slices name one node)."""
        return bool(self._shared)

    def for_node(self, node_name: str) -> list[Mapping[str, Any]]:
        mine = self._local.get(node_name, [])
        indices = sorted(mine + self._shared) if self._shared and mine else (mine or self._shared)
        return [self._slices[i] for i in indices]
