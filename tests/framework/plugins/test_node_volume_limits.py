import pytest

from framework.api.objects import Node, PersistentVolumeClaim, Pod
from framework.cache import NodeInfo
from framework.handle import FrameworkHandle, InMemoryObjects
from framework.interface import Code, CycleState, QueueingHint, Status
from framework.plugins.node_volume_limits import NodeVolumeLimits

NODE = NodeInfo(Node({"metadata": {"name": "node1"}}))


def _pod(*volumes: dict, node: str = "") -> Pod:
    spec: dict = {"volumes": [{"name": f"v{i}", **v} for i, v in enumerate(volumes)]}
    if node:
        spec["nodeName"] = node
    return Pod({"metadata": {"name": "p", "namespace": "default", "uid": "uid-p"}, "spec": spec})


def _pvc(name: str) -> PersistentVolumeClaim:
    return PersistentVolumeClaim({"metadata": {"name": name, "namespace": "default"}, "spec": {"volumeName": "pv"}})


def _plugin(*pvcs: PersistentVolumeClaim) -> NodeVolumeLimits:
    return NodeVolumeLimits.new(None, FrameworkHandle(objects=InMemoryObjects(pvcs)))


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
    status = _plugin().filter(CycleState(), _pod({"persistentVolumeClaim": {"claimName": "c"}}), NODE)
    assert status == Status(Code.UnschedulableAndUnresolvable,
                            'looking up PVC default/c: persistentvolumeclaim "c" not found')


def test_without_csinode_limits_every_node_fits():
    pod = _pod(*({"persistentVolumeClaim": {"claimName": f"c{i}"}} for i in range(100)))
    assert _plugin(*(_pvc(f"c{i}") for i in range(100))).filter(CycleState(), pod, NODE) is None


def test_an_ephemeral_claim_of_another_pod_is_an_error():
    status = _plugin(_pvc("p-v0")).filter(CycleState(), _pod({"ephemeral": {"volumeClaimTemplate": {}}}), NODE)
    assert status is not None and status.code == Code.Error


def test_deleting_a_bound_pod_with_attachable_volumes_requeues():
    hint = {e.event.resource: e for e in _plugin().events_to_register()}["Pod"].hint
    pending = _pod({"persistentVolumeClaim": {"claimName": "c"}})
    assert hint(pending, _pod({"persistentVolumeClaim": {"claimName": "x"}}, node="node1"), None) == QueueingHint.Queue
    assert hint(pending, _pod({"emptyDir": {}}, node="node1"), None) == QueueingHint.QueueSkip
    assert hint(pending, _pod({"persistentVolumeClaim": {"claimName": "x"}}), None) == QueueingHint.QueueSkip
