import pytest

from framework.api.objects import KubeObject, Node, PersistentVolumeClaim, Pod
from framework.cache import PodInfo, Snapshot
from framework.handle import FrameworkHandle, InMemoryObjects
from framework.interface import ActionType, Code, CycleState, QueueingHint, Status
from framework.features import FeatureGates
from framework.plugins.volumerestrictions.volume_restrictions import VolumeRestrictions

DISK_CONFLICT = Status(Code.Unschedulable, "node(s) had no available disk")
RWOP_CONFLICT = Status(Code.Unschedulable,
                       "node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode")


def _pod(name: str, *volumes: dict, node: str = "", ns: str = "default") -> Pod:
    spec: dict = {"volumes": [{"name": f"v{i}", **v} for i, v in enumerate(volumes)]}
    if node:
        spec["nodeName"] = node
    return Pod({"metadata": {"name": name, "namespace": ns}, "spec": spec})


def _gce(pd: str, ro: bool = False) -> dict:
    return {"gcePersistentDisk": {"pdName": pd, "readOnly": ro}}


def _ebs(vid: str) -> dict:
    return {"awsElasticBlockStore": {"volumeID": vid}}


def _rbd(monitors: list[str], image: str, pool: str = "", ro: bool = False) -> dict:
    rbd: dict = {"monitors": monitors, "image": image, "readOnly": ro}
    if pool:
        rbd["pool"] = pool
    return {"rbd": rbd}


def _iscsi(iqn: str, ro: bool = False) -> dict:
    return {"iscsi": {"targetPortal": "127.0.0.1:3260", "iqn": iqn, "lun": 0, "readOnly": ro}}


def _claim(name: str) -> dict:
    return {"persistentVolumeClaim": {"claimName": name}}


def _pvc(name: str, *modes: str) -> PersistentVolumeClaim:
    return PersistentVolumeClaim({"metadata": {"name": name, "namespace": "default"}, "spec": {"accessModes": list(modes)}})


def _run(pod: Pod, existing: list[Pod], objects: list[KubeObject] = ()) -> tuple[Status | None, Status | None]:
    snap = Snapshot.build([Node({"metadata": {"name": "node1"}}), Node({"metadata": {"name": "node2"}})], existing)
    plugin = VolumeRestrictions.new(None, FrameworkHandle(snapshot=snap, objects=InMemoryObjects(objects)))
    state = CycleState()
    _, pre = plugin.pre_filter(state, pod, snap.list())
    if pre is not None:
        return pre, None
    return pre, plugin.filter(state, pod, snap.get("node1"))


@pytest.mark.parametrize(
    ("volume", "existing", "expected"),
    [
        (_gce("foo"), _gce("foo"), DISK_CONFLICT),
        (_gce("foo"), _gce("bar"), None),
        (_gce("foo", ro=True), _gce("foo", ro=True), None),
        (_gce("foo", ro=True), _gce("foo"), DISK_CONFLICT),
        (_ebs("foo"), _ebs("foo"), DISK_CONFLICT),
        (_ebs("foo"), _ebs("bar"), None),
        (_rbd(["a", "b"], "img"), _rbd(["b", "c"], "img"), DISK_CONFLICT),
        (_rbd(["a"], "img"), _rbd(["c"], "img"), None),
        (_rbd(["a"], "img"), _rbd(["a"], "other"), None),
        (_rbd(["a"], "img", pool="p1"), _rbd(["a"], "img", pool="p2"), None),
        (_rbd(["a"], "img"), _rbd(["a"], "img", pool="rbd"), DISK_CONFLICT),
        (_rbd(["a"], "img", ro=True), _rbd(["a"], "img", ro=True), None),
        (_iscsi("iqn.2016-12.server:storage.target01"), _iscsi("iqn.2016-12.server:storage.target01"), DISK_CONFLICT),
        (_iscsi("iqn.2016-12.server:storage.target01"), _iscsi("iqn.2017-12.server:storage.target01"), None),
        (_iscsi("iqn.x", ro=True), _iscsi("iqn.x", ro=True), None),
        (_gce("foo"), _ebs("foo"), None),
    ],
    ids=["gce-same-disk", "gce-other-disk", "gce-both-read-only", "gce-one-writer", "ebs-same-id", "ebs-other-id",
         "rbd-shared-monitor", "rbd-no-shared-monitor", "rbd-other-image", "rbd-other-pool", "rbd-default-pool",
         "rbd-both-read-only", "iscsi-same-iqn", "iscsi-other-iqn", "iscsi-both-read-only", "different-kinds"],
)
def test_filter_finds_disk_conflicts_with_pods_on_the_node(volume, existing, expected):
    pre, status = _run(_pod("p", volume), [_pod("e", existing, node="node1")])
    assert pre is None
    assert status == expected


def test_a_pod_without_conflict_prone_volumes_or_rwop_claims_is_skipped():
    pre, _ = _run(_pod("p", {"emptyDir": {}}, _claim("c1")), [], [_pvc("c1", "ReadWriteOnce")])
    assert pre == Status(Code.Skip)


def test_a_missing_claim_is_unresolvable():
    pre, _ = _run(_pod("p", _claim("c1")), [])
    assert pre == Status(Code.UnschedulableAndUnresolvable, 'persistentvolumeclaim "c1" not found')


def test_a_read_write_once_pod_claim_in_use_blocks_the_pod_on_every_node():
    objects = [_pvc("c1", "ReadWriteOncePod")]
    user = _pod("user", _claim("c1"), node="node2")
    assert _run(_pod("p", _claim("c1")), [user], objects) == (None, RWOP_CONFLICT)
    assert _run(_pod("p", _claim("c1")), [], objects) == (Status(Code.Skip), None)
    other_ns_user = _pod("user", _claim("c1"), node="node2", ns="other")
    assert _run(_pod("p", _claim("c1")), [other_ns_user], objects) == (Status(Code.Skip), None)


def test_removing_the_claims_user_clears_the_conflict_and_adding_it_back_restores_it():
    objects = [_pvc("c1", "ReadWriteOncePod")]
    user = _pod("user", _claim("c1"), node="node2")
    snap = Snapshot.build([Node({"metadata": {"name": "node1"}}), Node({"metadata": {"name": "node2"}})], [user])
    plugin = VolumeRestrictions.new(None, FrameworkHandle(snapshot=snap, objects=InMemoryObjects(objects)))
    pod, state = _pod("p", _claim("c1")), CycleState()
    plugin.pre_filter(state, pod, snap.list())
    ext = plugin.pre_filter_extensions()
    dry_run = state.clone()
    assert ext.remove_pod(dry_run, pod, PodInfo(user), snap.get("node2")) is None
    assert plugin.filter(dry_run, pod, snap.get("node1")) is None
    assert plugin.filter(state, pod, snap.get("node1")) == RWOP_CONFLICT
    assert ext.add_pod(dry_run, pod, PodInfo(user), snap.get("node2")) is None
    assert plugin.filter(dry_run, pod, snap.get("node1")) == RWOP_CONFLICT


def test_events_and_hints():
    def events(hints: bool) -> dict:
        handle = FrameworkHandle(features=FeatureGates({"SchedulerQueueingHints": hints}))
        return {e.event.resource: e for e in VolumeRestrictions.new(None, handle).events_to_register()}

    assert events(True)["Node"].event.action == ActionType.Add
    assert events(False)["Node"].event.action == ActionType.Add | ActionType.UpdateNodeTaint | ActionType.UpdateNodeLabel
    ev = events(True)
    pod = _pod("p", _gce("foo"), _claim("c1"))
    deleted = ev["Pod"].hint
    assert deleted(pod, _pod("e", _gce("foo"), node="node1"), None) == QueueingHint.Queue
    assert deleted(pod, _pod("e", _claim("c1"), node="node1"), None) == QueueingHint.Queue
    assert deleted(pod, _pod("e", _gce("bar"), node="node1"), None) == QueueingHint.QueueSkip
    assert deleted(pod, _pod("e", _gce("foo"), node="node1", ns="other"), None) == QueueingHint.QueueSkip
    added = ev["PersistentVolumeClaim"].hint
    assert added(pod, None, _pvc("c1")) == QueueingHint.Queue
    assert added(pod, None, _pvc("c2")) == QueueingHint.QueueSkip
