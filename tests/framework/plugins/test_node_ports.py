import pytest

from framework.api.objects import Node, Pod
from framework.cache import Snapshot
from framework.handle import FrameworkHandle
from framework.interface import Code, CycleState, QueueingHint, Status
from framework.plugins.nodeports.node_ports import NodePorts

CONFLICT = Status(Code.Unschedulable, "node(s) didn't have free ports for the requested pod ports")


def _port(spec: str) -> dict:
    """"PROTO/IP/PORT", IP may be empty."""
    proto, ip, port = spec.split("/")
    return {"hostIP": ip, "hostPort": int(port), "protocol": proto, "containerPort": int(port)}


def _pod(name: str, *ports: str, node: str = "", init: list[str] | None = None, sidecar: bool = False) -> Pod:
    spec: dict = {"containers": [{"name": "c", "ports": [_port(p) for p in ports]}]}
    if node:
        spec["nodeName"] = node
    if init:
        c: dict = {"name": "init", "ports": [_port(p) for p in init]}
        if sidecar:
            c["restartPolicy"] = "Always"
        spec["initContainers"] = [c]
    return Pod({"metadata": {"name": name}, "spec": spec})


def _run(pod: Pod, *existing: Pod) -> tuple[Status | None, Status | None]:
    snap = Snapshot.build([Node({"metadata": {"name": "m1"}})], list(existing))
    pl = NodePorts.new(None, FrameworkHandle(snapshot=snap))
    state = CycleState()
    _, pre = pl.pre_filter(state, pod, snap.list())
    return pre, pl.filter(state, pod, snap.get("m1"))


@pytest.mark.parametrize(
    ("want", "used", "expected"),
    [
        ("TCP/127.0.0.1/8080", "TCP/127.0.0.1/8080", CONFLICT),
        ("TCP/127.0.0.1/8080", "TCP/127.0.0.2/8080", None),
        ("TCP/127.0.0.1/8080", "UDP/127.0.0.1/8080", None),
        ("TCP/127.0.0.1/8080", "TCP/0.0.0.0/8080", CONFLICT),
        ("TCP/0.0.0.0/8080", "TCP/127.0.0.1/8080", CONFLICT),
        ("TCP//8080", "TCP/10.0.0.1/8080", CONFLICT),
        ("TCP/10.0.0.1/8080", "TCP//8080", CONFLICT),
        ("TCP/0.0.0.0/8080", "TCP/0.0.0.0/8081", None),
    ],
    ids=["same-ip-port", "other-ip", "other-protocol", "used-on-wildcard", "wanted-on-wildcard",
         "empty-ip-is-wildcard", "used-with-empty-ip", "wildcard-other-port"],
)
def test_filter_checks_host_port_conflicts(want, used, expected):
    pre, status = _run(_pod("p", want), _pod("e", used, node="m1"))
    assert pre is None
    assert status == expected


def test_pre_filter_skips_a_pod_without_host_ports():
    pod = Pod({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "ports": [{"containerPort": 80}]}]}})
    pre, _ = _run(pod)
    assert pre == Status(Code.Skip)


def test_ports_of_a_plain_init_container_do_not_count():
    pre, _ = _run(_pod("p", init=["TCP//8080"]))
    assert pre == Status(Code.Skip)


def test_ports_of_a_sidecar_init_container_count_on_both_sides():
    _, status = _run(_pod("p", init=["TCP//8080"], sidecar=True), _pod("e", init=["TCP//8080"], node="m1", sidecar=True))
    assert status == CONFLICT


def test_filter_without_pre_filter_is_an_error():
    snap = Snapshot.build([Node({"metadata": {"name": "m1"}})], [])
    status = NodePorts.new(None, None).filter(CycleState(), _pod("p", "TCP//80"), snap.get("m1"))
    assert status is not None and status.code == Code.Error


@pytest.mark.parametrize(
    ("deleted", "hint"),
    [
        (_pod("e", "TCP//8080", node="m1"), QueueingHint.Queue),
        (_pod("e", "TCP//9090", node="m1"), QueueingHint.QueueSkip),
        (_pod("e", "TCP//8080"), QueueingHint.QueueSkip),
        (_pod("e", node="m1"), QueueingHint.QueueSkip),
    ],
    ids=["freed-our-port", "freed-another-port", "was-never-placed", "had-no-ports"],
)
def test_deleted_pod_hint_queues_only_when_it_frees_a_wanted_port(deleted, hint):
    pl = NodePorts.new(None, None)
    assert pl.is_schedulable_after_pod_deleted(_pod("p", "TCP//8080"), deleted, None) == hint
