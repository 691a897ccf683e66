import pytest

from framework.api.objects import Node, PersistentVolume, PersistentVolumeClaim, Pod
from framework.cache import NodeInfo
from framework.handle import FrameworkHandle, InMemoryObjects
from framework.interface import ActionType, Code, CycleState, QueueingHint, Status
from framework.plugins.volumezone.volume_zone import VolumeZone, label_zones_to_set

BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
BETA_REGION = "failure-domain.beta.kubernetes.io/region"
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
CONFLICT = Status(Code.UnschedulableAndUnresolvable, "node(s) had no available volume zone")


def _pv(name: str, labels: dict) -> PersistentVolume:
    return PersistentVolume({"metadata": {"name": name, "labels": labels}})


def _pvc(name: str, volume: str = "", storage_class: str | None = None) -> PersistentVolumeClaim:
    spec: dict = {"volumeName": volume} if volume else {}
    if storage_class is not None:
        spec["storageClassName"] = storage_class
    return PersistentVolumeClaim({"metadata": {"name": name, "namespace": "default"}, "spec": spec})


OBJECTS = [
    _pv("vol-beta-zone", {BETA_ZONE: "us-west1-a"}),
    _pv("vol-beta-region", {BETA_REGION: "us-west1", "uselessLabel": "none"}),
    _pv("vol-zone", {ZONE: "us-west1-a"}),
    _pv("vol-region", {REGION: "us-west1"}),
    _pv("vol-zone-and-region", {ZONE: "us-west1-a", REGION: "us-west1-a"}),
    _pv("vol-multi-zone", {ZONE: "us-west1-c__us-west1-a"}),
    _pv("vol-bad-label", {ZONE: "us-west1-a__"}),
    _pvc("pvc-beta-zone", "vol-beta-zone"),
    _pvc("pvc-beta-region", "vol-beta-region"),
    _pvc("pvc-zone", "vol-zone"),
    _pvc("pvc-region", "vol-region"),
    _pvc("pvc-zone-and-region", "vol-zone-and-region"),
    _pvc("pvc-multi-zone", "vol-multi-zone"),
    _pvc("pvc-bad-label", "vol-bad-label"),
    _pvc("pvc-no-pv", "vol-missing"),
    _pvc("pvc-no-class"),
    _pvc("pvc-missing-class", storage_class="gold"),
]


def _pod(*claims: str) -> Pod:
    volumes = [{"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}} for i, c in enumerate(claims)]
    return Pod({"metadata": {"name": "p", "namespace": "default"}, "spec": {"volumes": volumes}})


def _run(pod: Pod, node_labels: dict) -> tuple[Status | None, Status | None]:
    plugin = VolumeZone.new(None, FrameworkHandle(objects=InMemoryObjects(OBJECTS)))
    state = CycleState()
    _, pre = plugin.pre_filter(state, pod, [])
    # Upstream's tests call Filter whatever PreFilter returned.
    return pre, plugin.filter(state, pod, NodeInfo(Node({"metadata": {"name": "host1", "labels": node_labels}})))


@pytest.mark.parametrize(
    ("claim", "node_labels", "expected"),
    [
        ("pvc-beta-zone", {}, None),
        ("pvc-beta-zone", {BETA_ZONE: "us-west1-a", "uselessLabel": "none"}, None),
        ("pvc-beta-zone", {BETA_ZONE: "no_us-west1-a"}, CONFLICT),
        ("pvc-beta-region", {BETA_REGION: "us-west1"}, None),
        ("pvc-beta-region", {BETA_REGION: "no_us-west1"}, CONFLICT),
        ("pvc-zone", {ZONE: "us-west1-a"}, None),
        ("pvc-zone", {ZONE: "no_us-west1-a"}, CONFLICT),
        ("pvc-region", {REGION: "us-west1"}, None),
        ("pvc-zone-and-region", {ZONE: "us-west1-a"}, CONFLICT),
        ("pvc-zone", {BETA_ZONE: "us-west1-a"}, CONFLICT),
        ("pvc-beta-zone", {ZONE: "us-west1-a"}, None),
        ("pvc-beta-zone", {ZONE: "us-west1-b"}, CONFLICT),
        ("pvc-multi-zone", {ZONE: "us-west1-a"}, None),
        ("pvc-multi-zone", {ZONE: "us-west1-b"}, CONFLICT),
    ],
    ids=["node-without-labels", "beta-zone-match", "beta-zone-mismatch", "beta-region-match", "beta-region-mismatch",
         "zone-match", "zone-mismatch", "region-match", "pv-zone-and-region-node-zone-only",
         "ga-pv-label-does-not-match-beta-node-label", "beta-pv-label-matches-ga-node-label",
         "beta-pv-label-mismatches-ga-node-label", "multi-zone-match", "multi-zone-mismatch"],
)
def test_filter_matches_pv_zone_labels_against_the_node(claim, node_labels, expected):
    pre, status = _run(_pod(claim), node_labels)
    assert pre is None
    assert status == expected


def test_a_pod_without_volumes_is_skipped_and_passes_filter():
    pre, status = _run(_pod(), {ZONE: "us-west1-a"})
    assert pre == Status(Code.Skip)
    assert status is None


def test_an_unparsable_pv_label_is_ignored():
    pre, status = _run(_pod("pvc-bad-label"), {ZONE: "elsewhere"})
    assert pre == Status(Code.Skip)
    assert status is None


@pytest.mark.parametrize(
    ("claim", "message"),
    [
        ("missing", 'persistentvolumeclaim "missing" not found'),
        ("pvc-no-pv", 'persistentvolume "vol-missing" not found'),
        ("pvc-no-class", "PersistentVolumeClaim had no pv name and storageClass name"),
        ("pvc-missing-class", 'storageclass.storage.k8s.io "gold" not found'),
        ("", "PersistentVolumeClaim had no name"),
    ],
    ids=["missing-claim", "missing-pv", "unbound-without-class", "unbound-with-unknown-class", "empty-claim-name"],
)
def test_unusable_claims_are_rejected_at_pre_filter_and_filter(claim, message):
    pre, status = _run(_pod(claim), {ZONE: "us-west1-a"})
    want = Status(Code.UnschedulableAndUnresolvable, message)
    assert pre == want
    assert status == want


@pytest.mark.parametrize(
    ("value", "expected"),
    [("a", {"a"}), ("a__b", {"a", "b"}), (" a __ b ", {"a", "b"}), ("a____b", None), ("", None)],
    ids=["one", "two", "trimmed", "empty-between", "empty"],
)
def test_label_zones_to_set(value, expected):
    got = label_zones_to_set(value)
    assert (set(got) if got is not None else None) == expected


def test_a_claim_the_pod_uses_requeues_it():
    plugin = VolumeZone.new(None, FrameworkHandle())
    events = {e.event.resource: e for e in plugin.events_to_register()}
    assert events["Node"].event.action == ActionType.Add | ActionType.UpdateNodeLabel | ActionType.UpdateNodeTaint
    hint = events["PersistentVolumeClaim"].hint
    assert hint(_pod("pvc-zone"), None, _pvc("pvc-zone")) == QueueingHint.Queue
    assert hint(_pod("pvc-zone"), None, _pvc("other")) == QueueingHint.QueueSkip
