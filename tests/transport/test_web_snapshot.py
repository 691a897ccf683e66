"""The page's first picture (transport/web/snapshot.py, columns.py): rows of columns
that read back to exactly what an event says of the same object, nodes first, in
frames of a bounded size, and the replay split where the store's snapshot ends."""
from __future__ import annotations

import gc
import json

from framework.api.objects import POD_GROUP_LABEL, Node, Pod, PodGroup
from transport.web.columns import frame_columns, pod_row, unflatten
from transport.web.feed import page_item
from transport.web.snapshot import Replay, SnapshotCache, snapshot_frames

CREATED = "2026-01-02T03:04:05Z"


def pod(name: str, **spec: object) -> Pod:
    return Pod({"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": name, "namespace": "ml", "uid": name, "creationTimestamp": CREATED,
                             "labels": {"app": "train", POD_GROUP_LABEL: "g"}},
                "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "250m", "memory": "1Gi"}}}],
                         **spec},
                "status": {"nominatedNodeName": "n2",
                           "conditions": [{"type": "Ready", "status": "False"},
                                          {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                           "message": "0/2 nodes are available"}]}})


def node(name: str, **spec: object) -> Node:
    return Node({"apiVersion": "v1", "kind": "Node",
                 "metadata": {"name": name, "labels": {"zone": "a"}, "creationTimestamp": CREATED}, "spec": spec,
                 "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "10"}, "images": [{"names": ["x"]}]}})


GROUP = PodGroup({"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
                  "metadata": {"name": "g", "namespace": "ml"}, "spec": {"minMember": 2}})
OBJECTS = {"Pod": [pod("pending", priority=7, schedulingGates=[{"name": "wait"}]), pod("bound", nodeName="n1")],
           "Node": [node("n1"), node("n2", unschedulable=True, taints=[{"key": "gpu", "effect": "NoSchedule"}])],
           "PodGroup": [GROUP]}


def read_back(frames: list[str]) -> list[tuple[str, dict]]:
    out = []
    for frame in map(json.loads, frames):
        out += [(frame["kind"], unflatten(frame["columns"], row)) for row in frame["rows"]]
    return out


def test_a_snapshot_row_reads_back_as_what_an_event_says_of_the_same_object() -> None:
    frames = [f for f, _ in snapshot_frames(OBJECTS, 42)]
    expected = [(kind, json.loads(json.dumps(page_item(kind, obj)))) for kind in ("Pod", "Node", "PodGroup")
                for obj in OBJECTS[kind]]
    assert sorted(read_back(frames), key=str) == sorted(expected, key=str)


def test_a_pod_carries_what_the_page_shows_and_the_pending_table_fields_only_while_unbound() -> None:
    pending, bound = (page_item("Pod", p) for p in OBJECTS["Pod"])
    assert pending == {"object": {"metadata": {"namespace": "ml", "name": "pending", "labels": {POD_GROUP_LABEL: "g"},
                                               "creationTimestamp": CREATED},
                                  "spec": {"priority": 7, "schedulingGates": [{"name": "wait"}]},
                                  "status": {"nominatedNodeName": "n2", "conditions": [
                                      {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                       "message": "0/2 nodes are available"}]}},
                       "view": {"cpu": 250, "memory": 1 << 30}}  # not terminal: false is left out
    assert bound["object"] == {"metadata": {"namespace": "ml", "name": "bound", "labels": {POD_GROUP_LABEL: "g"}},
                               "spec": {"nodeName": "n1"}, "status": {}}
    done = Pod({**pod("done", nodeName="n1").raw, "status": {"phase": "Succeeded"}})
    assert page_item("Pod", done)["view"] == {"cpu": 250, "memory": 1 << 30, "terminal": True}
    plain = Pod({"kind": "Pod", "metadata": {"name": "p", "namespace": "default", "creationTimestamp": CREATED},
                 "spec": {"nodeName": "n1", "containers": [{"name": "c"}]}})
    assert pod_row(plain) == ["p", "n1", 0, 0]  # a bound pod in "default" with nothing else to show
    assert page_item("Pod", plain) == {"object": {"metadata": {"name": "p"}, "spec": {"nodeName": "n1"}, "status": {}},
                                       "view": {"cpu": 0, "memory": 0}}
    cordoned = page_item("Node", OBJECTS["Node"][1])
    assert cordoned == {"object": {"metadata": {"name": "n2", "labels": {"zone": "a"}}},
                        "view": {"cpu": 4000, "memory": 8 << 30, "pods": 10, "taints": ["gpu:NoSchedule"],
                                 "unschedulable": True}}


def test_frames_hold_at_most_the_given_rows_nodes_first_and_only_the_last_says_so() -> None:
    by_kind = {"Node": [], "Pod": [pod(f"p{i}", nodeName="n1") for i in range(5)], "PodGroup": [GROUP]}
    by_kind["Node"] = [node("n1")]
    frames = [json.loads(f) for f, _ in snapshot_frames(by_kind, 9, rows=2)]
    assert [last for _, last in snapshot_frames(by_kind, 9, rows=2)] == [False] * 4 + [True]
    assert [(f["kind"], len(f["rows"]), f["last"], f["resourceVersion"]) for f in frames] == [
        ("Node", 1, False, 9), ("Pod", 2, False, 9), ("Pod", 2, False, 9), ("Pod", 1, False, 9),
        ("PodGroup", 1, True, 9)]
    assert frames[1]["columns"] == list(frame_columns("Pod"))
    empty = [json.loads(f) for f, _ in snapshot_frames({"Node": [], "Pod": []}, 3)]
    assert empty == [{"type": "snapshot", "kind": "Node", "columns": list(frame_columns("Node")), "rows": [],
                      "resourceVersion": 3, "last": True}]


def test_building_a_frame_leaves_the_collector_as_it_found_it() -> None:
    assert gc.isenabled()
    list(snapshot_frames(OBJECTS, 1))
    assert gc.isenabled()
    gc.disable()
    try:
        list(snapshot_frames(OBJECTS, 1))
        assert not gc.isenabled()  # someone else's choice is kept
    finally:
        gc.enable()


def test_the_replay_gives_back_what_the_store_committed_after_its_snapshot_in_order() -> None:
    replay = Replay()
    n1, p1, p2 = node("n1"), pod("p1"), pod("p2")
    replay.add("ADDED", "Node", n1, 3)
    replay.add("ADDED", "Pod", p1, 5)
    replay.add("ADDED", "Pod", p2, 4)  # the replay is in the store's order, not by resourceVersion
    bound, gone = pod("p1", nodeName="n1"), pod("p2")
    replay.add("MODIFIED", "Pod", bound, 6)  # after the store answered, before the page resumed
    replay.add("DELETED", "Pod", gone, 7)
    assert replay.after(5) == [("MODIFIED", "Pod", bound, 6), ("DELETED", "Pod", gone, 7)]
    assert replay.by_kind["Pod"] == [p1, p2] and replay.by_kind["Node"] == [n1]
    assert replay.after(5) == []


def test_the_cache_hands_out_the_frames_of_its_resource_version_only() -> None:
    cache = SnapshotCache()
    assert cache.get(4) is None
    cache.put(4, ["a", "b"])
    assert cache.get(4) == ["a", "b"] and cache.get(5) is None and cache.encoded == 1
    cache.put(3, ["old"])  # a slower page's older snapshot does not replace a newer one
    assert cache.get(4) == ["a", "b"] and cache.get(3) is None and cache.encoded == 2
