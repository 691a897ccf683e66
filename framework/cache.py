"""The scheduler Cache (with assumed pods) and its incremental Snapshot.

Upstream: backend/cache (cache.go UpdateSnapshot, node_tree.go); NodeInfo and PodInfo
(types.go) are in node_info.py, HostPortInfo in host_ports.py, the snapshot's
NodeTable in node_table.py. Pure data structures: the
Scheduler actor owns one Cache and refreshes its Snapshot before each cycle; only
nodes whose generation moved since the last refresh are copied again.
"""
from __future__ import annotations

import bisect
from typing import Iterable, Iterator

from framework.api.objects import Node, Pod
from framework.node_info import ImageStateSummary, NodeInfo, PodInfo, next_generation, normalized_image_name
from framework.node_table import ColumnarNodes, NodeTable

__all__ = ["Cache", "ImageStateSummary", "NodeInfo", "PodInfo", "Snapshot", "next_generation"]
# (NodeInfo and PodInfo live in node_info.py; most callers import them from here)

class Snapshot:
    """The cluster as one scheduling cycle sees it. Node order is upstream's
    node tree order (zones interleaved), which the filter rotation walks."""

    def __init__(self) -> None:
        # Columns of node_info_list, kept by the Cache; None for hand-built snapshots.
        self.table: NodeTable | None = None
        self.node_info_map: dict[str, NodeInfo] = {}
        self.node_info_list: list[NodeInfo] = []
        self.have_pods_with_affinity_list: list[NodeInfo] = []
        self.have_pods_with_required_anti_affinity_list: list[NodeInfo] = []
        self.generation = 0
        self.index: dict[str, int] = {}  # node name -> position in node_info_list
        # Positions (in node_info_list) of the nodes in the two affinity lists, in order.
        self._affinity_positions: list[int] = []
        self._anti_affinity_positions: list[int] = []
        # Names of the nodes each update refreshed, in order, for readers that
        # keep per-node indexes (Coscheduling's members per group): a reader
        # remembers (change_epoch, len(change_log)) and re-reads only the names
        # logged since. A new epoch (nodes added or removed, or the log trimmed)
        # means: rebuild from node_info_list.
        self.change_epoch = 0
        self.change_log: list[str] = []

    @classmethod
    def build(cls, nodes: Iterable[Node], pods: Iterable[Pod]) -> "Snapshot":
        """A snapshot from scratch (tests and the conformance runner)."""
        cache = Cache()
        for n in nodes:
            cache.add_node(n)
        for p in pods:
            if p.node_name:
                cache.add_pod(p)
        snap = cls()
        cache.update_snapshot(snap)
        return snap

    def list(self) -> list[NodeInfo]:
        return self.node_info_list

    def set_table(self, table: NodeTable) -> None:
        """Columns for node_info_list, which becomes a ColumnarNodes over them (so
        plugins handed the whole list may use the columns too)."""
        self.table = table
        self.node_info_list = ColumnarNodes(self.node_info_list, table.all_rows, table)

    def rebuild_affinity_lists(self) -> None:
        """The nodes with pods with (anti-)affinity, in node order, from scratch."""
        lst = self.node_info_list
        self.have_pods_with_affinity_list = [n for n in lst if n.pods_with_affinity]
        self.have_pods_with_required_anti_affinity_list = [n for n in lst if n.pods_with_required_anti_affinity]
        index = self.index
        self._affinity_positions = [index[n.name] for n in self.have_pods_with_affinity_list]
        self._anti_affinity_positions = [index[n.name] for n in self.have_pods_with_required_anti_affinity_list]

    def patch_affinity_lists(self, names: Iterable[str]) -> None:
        """Bring the affinity lists up to date for these refreshed nodes only (same
        nodes in the same order otherwise): each list keeps its nodes' positions
        in node order beside it, so a node is replaced, dropped or inserted where a
        rebuild would put it."""
        if (len(self._affinity_positions) != len(self.have_pods_with_affinity_list)
                or len(self._anti_affinity_positions) != len(self.have_pods_with_required_anti_affinity_list)):
            self.rebuild_affinity_lists()
            return
        for name in names:
            ni = self.node_info_map[name]
            pos = self.index[name]
            _place_member(self.have_pods_with_affinity_list, self._affinity_positions, pos, ni,
                          bool(ni.pods_with_affinity))
            _place_member(self.have_pods_with_required_anti_affinity_list, self._anti_affinity_positions, pos, ni,
                          bool(ni.pods_with_required_anti_affinity))

    def get(self, name: str) -> NodeInfo | None:
        return self.node_info_map.get(name)

    def num_nodes(self) -> int:
        return len(self.node_info_list)

    def __iter__(self) -> Iterator[NodeInfo]:
        return iter(self.node_info_list)


def _place_member(members: list[NodeInfo], positions: list[int], pos: int, ni: NodeInfo, member: bool) -> None:
    i = bisect.bisect_left(positions, pos)
    present = i < len(positions) and positions[i] == pos
    if present and member:
        members[i] = ni
    elif present:
        del members[i]
        del positions[i]
    elif member:
        members.insert(i, ni)
        positions.insert(i, pos)


def _zone_key(node: Node) -> str:
    labels = node.labels
    # The deprecated beta labels win when present, as upstream's GetZoneKey has it.
    zone = labels.get("failure-domain.beta.kubernetes.io/zone", labels.get("topology.kubernetes.io/zone", ""))
    region = labels.get("failure-domain.beta.kubernetes.io/region", labels.get("topology.kubernetes.io/region", ""))
    if not region and not zone:
        return ""
    return f"{region}:\x00:{zone}"


class Cache:
    """Nodes, the pods bound to them and the pods assumed on them.

    Pods are keyed by "namespace/name". An assumed pod counts on its node exactly
    like a bound one until it is confirmed (add_pod) or forgotten (forget_pod).
    """

    def __init__(self) -> None:
        self.nodes: dict[str, NodeInfo] = {}
        self._zones: dict[str, list[str]] = {}  # zone -> node names in insertion order
        self._pod_node: dict[str, str] = {}  # pod key -> node name
        self._pods: dict[str, Pod] = {}
        self.assumed: set[str] = set()
        self._dirty: set[str] = set()
        # Dirty nodes whose only change since the last update is pods confirmed in place
        # (NodeInfo.replace_last): their snapshot table rows differ in generation alone.
        self._confirmed: set[str] = set()
        self._structure_changed = True
        # Pods whose node is not known yet (bound before their node was added).
        self._orphans: dict[str, list[Pod]] = {}

    # --- nodes ---------------------------------------------------------------------------

    def add_node(self, node: Node) -> None:
        ni = self.nodes.get(node.name)
        if ni is None:
            ni = NodeInfo(node)
            self.nodes[node.name] = ni
            self._zones.setdefault(_zone_key(node), []).append(node.name)
            for p in self._orphans.pop(node.name, []):
                ni.add_pod(p)
            self._structure_changed = True
        else:
            old_zone = _zone_key(ni.node) if ni.node else ""
            new_zone = _zone_key(node)
            if old_zone != new_zone:
                self._zones[old_zone].remove(node.name)
                if not self._zones[old_zone]:
                    del self._zones[old_zone]
                self._zones.setdefault(new_zone, []).append(node.name)
                self._structure_changed = True
            ni.set_node(node)
        self._dirty.add(node.name)
        self._confirmed.discard(node.name)

    update_node = add_node

    def remove_node(self, name: str) -> None:
        ni = self.nodes.pop(name, None)
        if ni is None:
            return
        zone = _zone_key(ni.node) if ni.node else ""
        self._zones[zone].remove(name)
        if not self._zones[zone]:
            del self._zones[zone]
        # Pods still bound to a removed node stay known so a re-added node gets them back.
        for pi in ni.pods:
            self._orphans.setdefault(name, []).append(pi.pod)
        self._structure_changed = True
        self._dirty.discard(name)
        self._confirmed.discard(name)

    def node_names(self) -> list[str]:
        return list(self.nodes)

    # --- pods ------------------------------------------------------------------------------

    def assume_pod(self, pod: Pod, node_name: str) -> None:
        """Count `pod` (already carrying spec.nodeName = node_name) on its node."""
        key = pod.key
        if key in self._pod_node:
            raise KeyError(f"pod {key} is already in the cache")
        self._place(pod, node_name)
        self.assumed.add(key)

    def forget_pod(self, pod: Pod) -> None:
        key = pod.key
        if key in self.assumed:
            self.assumed.discard(key)
            self._unplace(key)

    def add_pod(self, pod: Pod) -> None:
        """A pod bound in the store: confirms an assumed pod or adds a new one."""
        key = pod.key
        node_name = self._pod_node.get(key)
        if node_name is not None:
            # A pod confirmed where it was assumed (or updated in place): one replacement
            # when it leaves the node as _unplace then _place would (NodeInfo.replace_last).
            ni = self.nodes.get(node_name)
            if node_name == pod.node_name and ni is not None and ni.replace_last(self._pods[key], pod):
                self.assumed.discard(key)
                del self._pod_node[key], self._pods[key]  # re-inserted last, as _unplace then _place do
                self._pod_node[key] = node_name
                self._pods[key] = pod
                if node_name not in self._dirty:
                    self._confirmed.add(node_name)
                    self._dirty.add(node_name)
                return
            self._unplace(key)
        self.assumed.discard(key)
        self._place(pod, pod.node_name)

    def update_pod(self, pod: Pod) -> None:
        self.add_pod(pod)

    def remove_pod(self, pod: Pod) -> None:
        key = pod.key
        self.assumed.discard(key)
        if key in self._pod_node:
            self._unplace(key)
        else:
            for lst in self._orphans.values():
                lst[:] = [p for p in lst if p.key != key]

    def is_assumed(self, pod: Pod) -> bool:
        return pod.key in self.assumed

    def get_pod(self, key: str) -> Pod | None:
        return self._pods.get(key)

    def pod_count(self) -> int:
        return len(self._pods)

    def _place(self, pod: Pod, node_name: str) -> None:
        key = pod.key
        ni = self.nodes.get(node_name)
        self._pod_node[key] = node_name
        self._pods[key] = pod
        if ni is None:
            self._orphans.setdefault(node_name, []).append(pod)
            return
        # The snapshot's affinity lists follow from the dirty nodes (update_snapshot).
        ni.add_pod(pod)
        self._dirty.add(node_name)
        self._confirmed.discard(node_name)

    def _unplace(self, key: str) -> None:
        node_name = self._pod_node.pop(key)
        pod = self._pods.pop(key)
        ni = self.nodes.get(node_name)
        if ni is None:
            lst = self._orphans.get(node_name, [])
            lst[:] = [p for p in lst if p.key != key]
            return
        ni.remove_pod(pod)
        self._dirty.add(node_name)
        self._confirmed.discard(node_name)

    # --- snapshot ---------------------------------------------------------------------------

    def _tree_order(self) -> list[str]:
        """Zones interleaved round-robin, nodes in insertion order inside a zone."""
        zones = list(self._zones.values())
        if len(zones) == 1:
            return list(zones[0])
        out: list[str] = []
        for i in range(max((len(z) for z in zones), default=0)):
            for z in zones:
                if i < len(z):
                    out.append(z[i])
        return out

    def update_snapshot(self, snap: Snapshot) -> None:
        """Bring `snap` up to date, copying only the nodes that changed."""
        images_changed = False
        affinity_updated: list[str] = []  # refreshed nodes that hold or held pods with affinity
        updated: list[str] = []
        for name in self._dirty:
            ni = self.nodes.get(name)
            if ni is None:
                continue
            old = snap.node_info_map.get(name)
            new = ni.clone()
            if old is None or old.node is not ni.node:
                images_changed = True
            else:
                # Same Node object: its image summaries stay (they are cluster-wide
                # and only recomputed when some node's images may have changed).
                new.image_states = old.image_states
            if (new.pods_with_affinity or new.pods_with_required_anti_affinity
                    or (old is not None and (old.pods_with_affinity or old.pods_with_required_anti_affinity))):
                affinity_updated.append(name)
            snap.node_info_map[name] = new
            updated.append(name)
        self._dirty.clear()
        confirmed = self._confirmed
        changed = bool(updated)
        if self._structure_changed or len(snap.node_info_map) != len(self.nodes):
            changed = True
            for name in list(snap.node_info_map):
                if name not in self.nodes:
                    del snap.node_info_map[name]
                    images_changed = True
            order = self._tree_order()
            snap.node_info_list = [snap.node_info_map[n] for n in order]
            snap.index = {n: i for i, n in enumerate(order)}
            self._structure_changed = False
            snap.rebuild_affinity_lists()
            snap.change_epoch += 1
            snap.change_log = []
            if images_changed:
                self._refresh_images(snap)
            snap.set_table(NodeTable.of(snap.node_info_list))
        else:
            # Same nodes in the same order: put the refreshed copies in place.
            lst = snap.node_info_list
            table = snap.table
            if table is None or len(table) != len(lst):
                table = None
            for name in updated:
                i = snap.index[name]
                lst[i] = ni = snap.node_info_map[name]
                if table is not None and not images_changed:
                    if name in confirmed:
                        table.set_generation(i, ni)
                    else:
                        table.set_row(i, ni)
            if affinity_updated:
                snap.patch_affinity_lists(affinity_updated)
            if len(snap.change_log) + len(updated) > max(1024, 2 * len(lst)):
                snap.change_epoch += 1
                snap.change_log = []
            else:
                snap.change_log.extend(updated)
            if images_changed:
                self._refresh_images(snap)
                table = None
            if table is None:
                snap.set_table(NodeTable.of(snap.node_info_list))
        confirmed.clear()
        # Moves only when the snapshot's content did: equal generations, equal cluster.
        if changed or snap.generation == 0:
            snap.generation = next_generation()

    @staticmethod
    def _refresh_images(snap: Snapshot) -> None:
        sizes: dict[str, int] = {}
        counts: dict[str, int] = {}
        per_node: dict[str, list[str]] = {}
        for ni in snap.node_info_list:
            names: list[str] = []
            if ni.node is not None:
                for image_names, size in ni.node.images:
                    for n in image_names:
                        nn = normalized_image_name(n)
                        if nn not in sizes:
                            sizes[nn] = size
                        names.append(nn)
            seen = set(names)
            for n in seen:
                counts[n] = counts.get(n, 0) + 1
            per_node[ni.name] = list(dict.fromkeys(names))
        for ni in snap.node_info_list:
            ni.image_states = {n: ImageStateSummary(sizes[n], counts[n]) for n in per_node[ni.name]}
