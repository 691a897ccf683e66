import pytest

from framework.api.objects import KubeObject, Node, PersistentVolume, PersistentVolumeClaim, Pod
from framework.cache import NodeInfo, Snapshot
from framework.handle import FrameworkHandle, InMemoryObjects
from framework.interface import Code, CycleState, QueueingHint, Status
from framework.plugins.nodevolumelimits.node_volume_limits import NodeVolumeLimits, csi_attach_limit_key

NODE = NodeInfo(Node({"metadata": {"name": "node1"}}))


def _pod(*volumes: dict, node: str = "", name: str = "p") -> Pod:
    spec: dict = {"volumes": [{"name": f"v{i}", **v} for i, v in enumerate(volumes)]}
    if node:
        spec["nodeName"] = node
    return Pod({"metadata": {"name": name, "namespace": "default", "uid": "uid-p"}, "spec": spec})


def _claims(*names: str) -> list[dict]:
    return [{"persistentVolumeClaim": {"claimName": n}} for n in names]


def _pvc(name: str, volume: str = "pv") -> PersistentVolumeClaim:
    return PersistentVolumeClaim({"metadata": {"name": name, "namespace": "default"}, "spec": {"volumeName": volume}})


def _csi_pv(name: str, driver: str = "ebs.csi.aws.com") -> PersistentVolume:
    return PersistentVolume({"metadata": {"name": name}, "spec": {"csi": {"driver": driver, "volumeHandle": f"h-{name}"}}})


def _plugin(*objects: KubeObject) -> NodeVolumeLimits:
    return NodeVolumeLimits.new(None, FrameworkHandle(objects=InMemoryObjects(objects)))


@pytest.mark.parametrize(
    ("volume", "expected"),
    [
        ({"emptyDir": {}}, Status(Code.Skip)),
        ({"persistentVolumeClaim": {"claimName": "c"}}, None),
        ({"ephemeral": {"volumeClaimTemplate": {}}}, None),
        ({"awsElasticBlockStore": {"volumeID": "v"}}, None),
    ],
    ids=["no-attachable-volume", "claim", "ephemeral", "migratable-inline"],
)
def test_pre_filter_skips_pods_without_attachable_volumes(volume, expected):
    assert _plugin().pre_filter(CycleState(), _pod(volume), []) == (None, expected)


def test_a_missing_claim_is_unresolvable():
    status = _plugin().filter(CycleState(), _pod(*_claims("c")), NODE)
    assert status == Status(Code.UnschedulableAndUnresolvable,
                            'looking up PVC default/c: persistentvolumeclaim "c" not found')


def test_an_ephemeral_claim_of_another_pod_is_an_error():
    status = _plugin(_pvc("p-v0")).filter(CycleState(), _pod({"ephemeral": {"volumeClaimTemplate": {}}}), NODE)
    assert status == Status(Code.Error, "PVC default/p-v0 was not created for pod default/p (pod is not owner)")


def test_deleting_a_bound_pod_with_attachable_volumes_requeues():
    hint = {e.event.resource: e for e in _plugin().events_to_register()}["Pod"].hint
    pending = _pod({"persistentVolumeClaim": {"claimName": "c"}})
    assert hint(pending, _pod({"persistentVolumeClaim": {"claimName": "x"}}, node="node1"), None) == QueueingHint.Queue
    assert hint(pending, _pod({"emptyDir": {}}, node="node1"), None) == QueueingHint.QueueSkip
    assert hint(pending, _pod({"persistentVolumeClaim": {"claimName": "x"}}), None) == QueueingHint.QueueSkip


# Claims c<i> bound to CSI volumes pv<i> of one driver, and one of another driver.
CSI_OBJECTS = [*(o for i in range(4) for o in (_pvc(f"c{i}", f"pv{i}"), _csi_pv(f"pv{i}"))),
               _pvc("gce", "pv-gce"), _csi_pv("pv-gce", "pd.csi.storage.gke.io"),
               _pvc("plain", "pv-plain"), PersistentVolume({"metadata": {"name": "pv-plain"}})]


def _limited_node(limit: int, *pods: Pod) -> NodeInfo:
    node = Node({"metadata": {"name": "node1"},
                 "status": {"allocatable": {"cpu": "4", "attachable-volumes-csi-ebs.csi.aws.com": str(limit)}}})
    return Snapshot.build([node], list(pods)).get("node1")


@pytest.mark.parametrize(
    ("new", "existing", "limit", "expected"),
    [
        (["c0", "c1"], [], 2, None),
        (["c0", "c1", "c2"], [], 2, Status(Code.Unschedulable, "node(s) exceed max volume count")),
        (["c0"], ["c1", "c2"], 2, Status(Code.Unschedulable, "node(s) exceed max volume count")),
        (["c0", "c1"], ["c1"], 2, None),
        (["c0", "gce"], ["c1"], 2, None),
        (["c0", "plain"], ["c1"], 2, None),
        (["c0"], ["c1", "missing"], 2, None),
    ],
    ids=["at-the-limit", "over-the-limit", "existing-volumes-count", "shared-volume-counts-once",
         "other-driver-has-no-limit", "non-csi-volume-not-counted", "existing-pods-missing-claim-ignored"],
)
def test_csi_volumes_are_counted_against_the_nodes_attachable_volumes_allocatable(new, existing, limit, expected):
    node = _limited_node(limit, _pod(*_claims(*existing), node="node1", name="e"))
    assert _plugin(*CSI_OBJECTS).filter(CycleState(), _pod(*_claims(*new)), node) == expected


def test_a_node_without_attachable_volume_allocatable_has_no_limit():
    node = Snapshot.build([Node({"metadata": {"name": "node1"}})], []).get("node1")
    assert _plugin(*CSI_OBJECTS).filter(CycleState(), _pod(*_claims("c0", "c1", "c2", "c3")), node) is None


@pytest.mark.parametrize(
    ("driver", "expected"),
    [
        ("ebs.csi.aws.com", "attachable-volumes-csi-ebs.csi.aws.com"),
        ("a" * 40, "attachable-volumes-csi-" + "a" * 23 + "a56559418dc7908c"),
    ],
    ids=["short", "hashed"],
)
def test_csi_attach_limit_key(driver, expected):
    assert csi_attach_limit_key(driver) == expected
