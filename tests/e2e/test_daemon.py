"""The real daemon, end to end: bind through the CLI, survive kill -9, keep its
connection policy under bad frames, stop gracefully on SIGTERM."""
from __future__ import annotations

import re
import socket
import struct

import msgpack
import yaml

from transport.protocol.framing import FrameDecoder, encode_frame
from transport.cli.tables import node_usage
from transport.protocol.wire import ApiError, Reason

from tests.e2e.conftest import ROOT, DaemonProcess, poll

NODE_CPU = 4


def nodes_yaml(n: int) -> str:
    return "\n---\n".join(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Node", "metadata": {"name": f"node-{i}"},
        "status": {"allocatable": {"cpu": str(NODE_CPU), "memory": "8Gi", "pods": "110"}}}) for i in range(n))


def pod_manifest(name: str, cpu: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default", "labels": {"app": "e2e"}},
            "spec": {"containers": [{"name": "c", "image": "pause", "resources": {"requests": {"cpu": cpu}}}]}}


def bindings(d: DaemonProcess) -> dict[str, tuple[str, str]]:
    """pod name -> (node, resourceVersion)."""
    with d.client() as c:
        pods, _ = c.list("Pod", "default")
    return {p["metadata"]["name"]: (p["spec"].get("nodeName", ""), p["metadata"]["resourceVersion"]) for p in pods}


def all_bound(d: DaemonProcess, n: int) -> dict[str, tuple[str, str]] | None:
    b = bindings(d)
    return b if len(b) == n and all(node for node, _ in b.values()) else None


def free_milli_cpu(d: DaemonProcess) -> dict[str, int]:
    with d.client() as c:
        pods, _ = c.list("Pod")
        nodes, _ = c.list("Node")
    used = node_usage(pods)
    return {n["metadata"]["name"]: NODE_CPU * 1000 - used.get(n["metadata"]["name"], (0, 0, 0))[1] for n in nodes}


def test_pods_bound_before_kill_9_stay_bound_and_capacity_is_accounted_after_restart(daemon_factory, tmp_path):
    manifests = tmp_path / "manifests"
    manifests.mkdir()
    (manifests / "nodes.yaml").write_text(nodes_yaml(3))
    (manifests / "pods.yaml").write_text("\n---\n".join(yaml.safe_dump(pod_manifest(f"p{i:02}", "500m")) for i in range(20)))

    d = daemon_factory()
    applied = d.cli("apply", "-f", str(manifests))
    assert applied.stdout.count(" created") == 23
    before = poll(lambda: all_bound(d, 20), "20 pods bound")

    table = d.cli("get", "pods").stdout.splitlines()
    assert table[0].split() == ["NAME", "STATUS", "NODE", "AGE"]
    rows = {r.split()[0]: r.split()[1:3] for r in table[1:]}
    assert rows == {name: ["Bound", node] for name, (node, _) in before.items()}
    metrics = d.http_get("/metrics")
    assert re.search(r'scheduler_schedule_attempts_total\{profile="default-scheduler",result="scheduled"\} 20\.0', metrics)
    assert re.search(r'scheduler_framework_extension_point_duration_seconds_count\{extension_point="Bind",'
                     r'profile="default-scheduler",status="Success"\} 20\.0', metrics)
    assert re.search(r'scheduler_scheduling_attempt_duration_seconds_count\{profile="default-scheduler",'
                     r'result="scheduled"\} 20\.0', metrics)
    # plugins are timed on cycles 1 and 11 of the 20
    assert re.search(r'scheduler_plugin_execution_duration_seconds_count\{extension_point="Bind",'
                     r'plugin="DefaultBinder",status="Success"\} 2\.0', metrics)
    assert 'scheduler_pending_pods{queue="active"} 0.0' in metrics
    free_before = free_milli_cpu(d)
    assert sum(free_before.values()) == 3 * NODE_CPU * 1000 - 20 * 500

    d.kill9()
    d2 = daemon_factory(data_dir=d.data_dir)
    poll(lambda: all_bound(d2, 20), "20 pods after restart")
    assert bindings(d2) == before  # same nodes, same resourceVersions: nothing was bound again
    assert free_milli_cpu(d2) == free_before
    probe = tmp_path / "probe.yaml"
    probe.write_text(yaml.safe_dump(pod_manifest("probe", f"{max(free_before.values())}m")))
    report = d2.cli("explain", "-f", str(probe)).stdout
    chosen = re.search(r"^Chosen node: (\S+)$", report, re.M)
    assert chosen is not None and free_before[chosen.group(1)] == max(free_before.values())
    assert "NodeResourcesFit" in report and "Insufficient cpu" in report

    # A pod bigger than every node's remaining room stays pending (the capacity is
    # still accounted); one that fits goes where the room is.
    most = max(free_before.values())
    with d2.client() as c:
        c.apply([pod_manifest("too-big", f"{most + 1}m"), pod_manifest("fits", f"{most}m")])
        fits = poll(lambda: c.get("Pod", "fits")["spec"].get("nodeName") or None, "the pod that fits to bind")
        too_big = poll(lambda: (lambda p: p if any(x.get("type") == "PodScheduled" and x.get("status") == "False"
                                                   for x in (p.get("status") or {}).get("conditions", [])) else None)(
            c.get("Pod", "too-big")), "the pod that does not fit to be marked unschedulable")
    assert free_before[fits] == most
    assert "Insufficient cpu" in next(x["message"] for x in too_big["status"]["conditions"] if x["type"] == "PodScheduled")
    assert not too_big["spec"].get("nodeName")

    # Finishing every pod on another node frees it, and the waiting pod goes there.
    other = next(n for n in free_before if n != fits)
    on_other = sorted(name for name, (node, _) in before.items() if node == other)
    assert d2.cli("complete", on_other[0]).stdout.strip() == f"pod/{on_other[0]} succeeded"
    with d2.client() as c:
        for name in on_other[1:]:
            c.complete(name, failed=True)
        landed = poll(lambda: c.get("Pod", "too-big")["spec"].get("nodeName") or None, "the big pod to bind")
    assert landed == other
    assert d2.terminate() == 0


class Raw:
    def __init__(self, d: DaemonProcess) -> None:
        self.sock = socket.create_connection(("127.0.0.1", d.port), timeout=10)
        self.decoder = FrameDecoder(1 << 24)
        self.frames: list = []

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def recv(self):
        while not self.frames:
            try:
                data = self.sock.recv(65536)
            except ConnectionResetError:
                return None
            if not data:
                return None
            self.frames.extend(self.decoder.feed(data))
        return self.frames.pop(0)


def test_garbage_oversize_and_wrong_typed_frames_get_their_errors_and_other_clients_are_served(daemon_factory, tmp_path):
    config = tmp_path / "ksched.yaml"
    token = tmp_path / "token"
    token.write_text("e2e-token-0123456\n")
    token.chmod(0o600)
    config.write_text(yaml.safe_dump_all([
        {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
         "profiles": [{"schedulerName": "default-scheduler"}]},
        {"apiVersion": "ksched.io/v1alpha1", "kind": "DaemonConfiguration", "maxFrameBytes": 4096,
         "tokenFile": str(token)},
    ]))
    d = daemon_factory("--config", str(config))
    with d.client(token="e2e-token-0123456") as other:
        other.apply([{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
                      "status": {"allocatable": {"cpu": "1"}}}])

        raw = Raw(d)
        raw.send(encode_frame({"id": 1, "op": "hello", "token": "e2e-token-0123456"}))
        assert raw.recv()["ok"] is True
        raw.send(struct.pack(">I", 4) + b"\xc1\x00\xff\xc1")
        assert raw.recv()["error"]["reason"] == "Invalid"
        raw.send(encode_frame({"id": 2, "op": "list", "kind": "Node", "labelSelector": ["app=web"]}))
        wrong = raw.recv()
        assert (wrong["id"], wrong["error"]["reason"]) == (2, "Invalid")
        assert wrong["error"]["message"].startswith("labelSelector: must be a string")
        assert [n["metadata"]["name"] for n in other.list("Node")[0]] == ["n1"]

        raw.send(struct.pack(">I", 4097) + msgpack.packb({"id": 3, "op": "stats"}))
        assert raw.recv()["error"]["reason"] == "TooLarge"
        assert raw.recv() is None  # closed
        raw.sock.close()

        try:
            with d.client(token="not-it"):
                raise AssertionError("a wrong token was accepted")
        except ApiError as err:
            assert err.reason == Reason.UNAUTHORIZED
        stats = other.stats()
        # the four system namespaces the daemon made at start, then the node
        assert stats["objects"] == {"Node": 1, "Namespace": 4} and stats["resourceVersion"] == 5
    assert d.terminate() == 0  # SIGTERM: a graceful stop

    d2 = daemon_factory("--config", str(config), data_dir=d.data_dir)
    with d2.client(token="e2e-token-0123456") as c:
        assert [n["metadata"]["name"] for n in c.list("Node")[0]] == ["n1"]
        assert c.stats()["resourceVersion"] == 5  # nothing written again at the second start


def test_gang_members_between_assume_and_bind_at_kill_9_are_scheduled_again_after_restart(daemon_factory, tmp_path):
    # Two members fit and wait at Permit for the third, which fits no node yet; with
    # podGroupRejectPercentage 100 the waiting members are not rejected meanwhile.
    shipped = (ROOT / "configs" / "coscheduling.yaml").read_text()
    assert "podGroupRejectPercentage: 10\n" in shipped
    config = tmp_path / "coscheduling.yaml"
    config.write_text(shipped.replace("podGroupRejectPercentage: 10\n", "podGroupRejectPercentage: 100\n"))
    group = {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
             "metadata": {"name": "job", "namespace": "default"}, "spec": {"minMember": 3, "scheduleTimeoutSeconds": 300}}
    members = []
    for i in range(3):
        p = pod_manifest(f"job-{i}", "1")
        p["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] = "job"
        members.append(p)
    members[2]["spec"]["nodeSelector"] = {"disk": "ssd"}
    node = yaml.safe_load(nodes_yaml(1))

    def waiting(d: DaemonProcess, n: int) -> bool | None:
        with d.client() as c:
            return True if c.stats()["waitingPods"] == n else None

    d = daemon_factory("--config", str(config))
    with d.client() as c:
        c.apply([node, group, *members])
    poll(lambda: waiting(d, 2), "two members assumed and waiting at Permit")
    assert not any(n for n, _ in bindings(d).values())

    d.kill9()
    d2 = daemon_factory("--config", str(config), data_dir=d.data_dir)
    poll(lambda: waiting(d2, 2), "the two members assumed again after restart")
    assert not any(n for n, _ in bindings(d2).values())  # they were never bound
    with d2.client() as c:
        c.apply([{**node, "metadata": {"name": "node-ssd", "labels": {"disk": "ssd"}}}])
        placed = poll(lambda: all_bound(d2, 3), "the whole gang to bind")
        # (a second Scheduled event would count up the stored one: count it)
        scheduled = {name: sum(e["count"] for e in c.events("Pod", name) if e["reason"] == "Scheduled")
                     for name in placed}
    assert {name: node for name, (node, _) in placed.items()} == {"job-0": "node-0", "job-1": "node-0", "job-2": "node-ssd"}
    assert scheduled == {"job-0": 1, "job-1": 1, "job-2": 1}
    assert d2.terminate() == 0
