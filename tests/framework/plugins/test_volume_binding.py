import pytest

from framework.api.errors import ValidationError
from framework.api.objects import KubeObject, Node, PersistentVolume, PersistentVolumeClaim, Pod
from framework.cache import Snapshot
from framework.features import FeatureGates
from framework.handle import FrameworkHandle, InMemoryObjects
from framework.interface import ActionType, Code, CycleState, QueueingHint, Status
from framework.plugins.volumebinding.volume_binding import VolumeBinding

BOUND = {"pv.kubernetes.io/bind-completed": "true"}


def _pvc(name: str, volume: str = "", annotations: dict | None = None, deleting: bool = False,
         phase: str = "", owner_uid: str = "") -> PersistentVolumeClaim:
    meta: dict = {"name": name, "namespace": "default", "annotations": annotations or {}}
    if deleting:
        meta["deletionTimestamp"] = "1970-01-01T00:00:00Z"
    if owner_uid:
        meta["ownerReferences"] = [{"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": owner_uid, "controller": True}]
    raw: dict = {"metadata": meta, "spec": {"volumeName": volume} if volume else {}}
    if phase:
        raw["status"] = {"phase": phase}
    return PersistentVolumeClaim(raw)


def _pv(name: str, zone: str = "") -> PersistentVolume:
    spec: dict = {}
    if zone:
        term = {"matchExpressions": [{"key": "zone", "operator": "In", "values": [zone]}]}
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [term]}}
    return PersistentVolume({"metadata": {"name": name}, "spec": spec})


def _pod(*claims: str, ephemeral: str = "", other: bool = False) -> Pod:
    volumes: list[dict] = [{"name": c, "persistentVolumeClaim": {"claimName": c}} for c in claims]
    if ephemeral:
        volumes.append({"name": ephemeral, "ephemeral": {"volumeClaimTemplate": {"spec": {}}}})
    if other:
        volumes.append({"name": "scratch", "emptyDir": {}})
    return Pod({"metadata": {"name": "p", "namespace": "default", "uid": "pod-uid"}, "spec": {"volumes": volumes}})


NODES = [Node({"metadata": {"name": "node1", "labels": {"zone": "a"}}}),
         Node({"metadata": {"name": "node2", "labels": {"zone": "b"}}})]


def _plugin(objects: list[KubeObject], args: dict | None = None) -> tuple[VolumeBinding, Snapshot]:
    snap = Snapshot.build(NODES, [])
    return VolumeBinding.new(args, FrameworkHandle(snapshot=snap, objects=InMemoryObjects(objects))), snap


def _run(pod: Pod, objects: list[KubeObject]) -> tuple[Status | None, dict[str, Status | None]]:
    plugin, snap = _plugin(objects)
    state = CycleState()
    _, pre = plugin.pre_filter(state, pod, snap.list())
    if pre is not None:
        return pre, {}
    return pre, {ni.name: plugin.filter(state, pod, ni) for ni in snap.list()}


def test_a_pod_without_claims_is_skipped():
    pre, _ = _run(_pod(other=True), [])
    assert pre == Status(Code.Skip)


@pytest.mark.parametrize(
    ("pod", "objects", "message"),
    [
        (_pod("unknownPVC"), [], 'persistentvolumeclaim "unknownPVC" not found'),
        (_pod("existingPVC"), [_pvc("existingPVC", annotations=BOUND, deleting=True)],
         'persistentvolumeclaim "existingPVC" is being deleted'),
        (_pod("lost"), [_pvc("lost", "pv1", phase="Lost")],
         'persistentvolumeclaim "lost" bound to non-existent persistentvolume "pv1"'),
        (_pod("unbound"), [_pvc("unbound")], "pod has unbound immediate PersistentVolumeClaims"),
        (_pod("prebound"), [_pvc("prebound", "pv1")], "pod has unbound immediate PersistentVolumeClaims"),
        (_pod(ephemeral="eph"), [], 'waiting for ephemeral volume controller to create the persistentvolumeclaim "p-eph"'),
        (_pod(ephemeral="eph"), [_pvc("p-eph", "pv1", BOUND, owner_uid="someone-else")],
         "PVC default/p-eph was not created for pod default/p (pod is not owner)"),
    ],
    ids=["unknown-claim", "deleted-claim", "lost-claim", "unbound-immediate", "prebound-not-complete",
         "ephemeral-not-created-yet", "ephemeral-of-another-pod"],
)
def test_pre_filter_rejects_claims_that_cannot_be_used(pod, objects, message):
    pre, _ = _run(pod, objects)
    assert pre == Status(Code.UnschedulableAndUnresolvable, message)


def test_a_bound_claim_without_node_affinity_fits_every_node():
    pre, filtered = _run(_pod("existingPVC"), [_pvc("existingPVC", "existingPV", BOUND), _pv("existingPV")])
    assert pre is None
    assert filtered == {"node1": None, "node2": None}


def test_a_bound_pv_with_node_affinity_fits_only_matching_nodes():
    objects = [_pvc("c1", "pv1", BOUND), _pv("pv1", zone="a")]
    pre, filtered = _run(_pod("c1"), objects)
    assert pre is None
    assert filtered == {"node1": None,
                        "node2": Status(Code.UnschedulableAndUnresolvable, "node(s) didn't match PersistentVolume's node affinity")}


def test_a_claim_of_the_pods_own_ephemeral_volume_counts_as_a_claim():
    objects = [_pvc("p-eph", "pv1", BOUND, owner_uid="pod-uid"), _pv("pv1", zone="b")]
    _, filtered = _run(_pod(ephemeral="eph"), objects)
    assert filtered["node1"] is not None and filtered["node2"] is None


def test_a_claim_bound_to_a_missing_pv_fails_every_node():
    _, filtered = _run(_pod("c1"), [_pvc("c1", "gone", BOUND)])
    want = Status(Code.UnschedulableAndUnresolvable,
                  "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)")
    assert filtered == {"node1": want, "node2": want}


async def test_pre_bind_has_nothing_to_do_once_reserve_found_every_claim_bound():
    plugin, snap = _plugin([_pvc("c1", "pv1", BOUND), _pv("pv1")])
    pod, state = _pod("c1"), CycleState()
    plugin.pre_filter(state, pod, snap.list())
    assert plugin.filter(state, pod, snap.get("node1")) is None
    assert await plugin.pre_bind(state, pod, "node1") == Status(Code.Error, 'no pod volumes found for node "node1"')
    assert plugin.reserve(state, pod, "node1") is None
    assert await plugin.pre_bind(state, pod, "node1") is None


def test_pre_score_skips_without_storage_capacity_scoring():
    plugin, snap = _plugin([])
    assert plugin.pre_score(CycleState(), _pod("c1"), snap.list()) == Status(Code.Skip)


@pytest.mark.parametrize(
    ("args", "field", "message"),
    [
        ({"bindTimeoutSeconds": -10}, "bindTimeoutSeconds", "invalid BindTimeoutSeconds, should not be a negative value"),
        ({"shape": [{"utilization": 1, "score": 1}]}, "shape",
         "unexpected field `shape`, remove it or turn on the feature gate StorageCapacityScoring"),
    ],
    ids=["negative-timeout", "shape-without-gate"],
)
def test_args_are_validated(args, field, message):
    with pytest.raises(ValidationError) as e:
        _plugin([], args)
    assert (e.value.field, e.value.detail) == (field, message)


def test_bind_timeout_defaults_to_ten_minutes():
    assert _plugin([])[0].bind_timeout_seconds == 600
    assert _plugin([], {"bindTimeoutSeconds": 0})[0].bind_timeout_seconds == 0


def test_node_events_depend_on_queueing_hints():
    def node_actions(hints: bool) -> ActionType:
        handle = FrameworkHandle(features=FeatureGates({"SchedulerQueueingHints": hints}))
        events = VolumeBinding.new(None, handle).events_to_register()
        return next(e.event.action for e in events if e.event.resource == "Node")

    assert node_actions(True) == ActionType.Add | ActionType.UpdateNodeLabel
    assert node_actions(False) == ActionType.Add | ActionType.UpdateNodeLabel | ActionType.UpdateNodeTaint


def test_claim_hint_queues_only_for_the_pods_claims():
    events = {e.event.resource: e for e in _plugin([])[0].events_to_register()}
    hint = events["PersistentVolumeClaim"].hint
    assert hint(_pod("c1"), None, _pvc("c1")) == QueueingHint.Queue
    assert hint(_pod(ephemeral="eph"), None, _pvc("p-eph")) == QueueingHint.Queue
    assert hint(_pod("c1"), None, _pvc("c2")) == QueueingHint.QueueSkip
    other_ns = PersistentVolumeClaim({"metadata": {"name": "c1", "namespace": "other"}})
    assert hint(_pod("c1"), None, other_ns) == QueueingHint.QueueSkip


def test_storage_class_hint_queues_on_new_classes_and_topology_changes():
    hint = {e.event.resource: e for e in _plugin([])[0].events_to_register()}["StorageClass"].hint
    old = {"metadata": {"name": "sc"}, "allowedTopologies": []}
    assert hint(_pod("c1"), None, old) == QueueingHint.Queue
    assert hint(_pod("c1"), old, {**old, "parameters": {"x": "y"}}) == QueueingHint.QueueSkip
    assert hint(_pod("c1"), old, {**old, "allowedTopologies": [{"matchLabelExpressions": []}]}) == QueueingHint.Queue
