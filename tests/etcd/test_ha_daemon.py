"""Two real daemons on a real etcd cluster: both serve, one leads, and they say so."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.e2e.conftest import DaemonProcess
from tests.etcd.test_ha_chaos import _pod, _wait_for_binding
from transport.protocol.wire import ApiError


@pytest.fixture
def pair(etcd_settings, tmp_path: Path):
    cfg = tmp_path / "ha.yaml"
    # long leases: a hand-over within this test can only come from the leader's resignation
    cfg.write_text(yaml.safe_dump({
        "apiVersion": "ksched.io/v1alpha1", "kind": "DaemonConfiguration", "logLevel": "WARNING",
        "etcd": {"prefix": etcd_settings.prefix},
        "leaderElection": {"leaseDuration": "60s", "renewDeadline": "40s", "retryPeriod": "250ms"}}))
    flags = ["--config", str(cfg), "--etcd-servers", ",".join(etcd_settings.endpoints), "--log-level", "WARNING"]
    first = DaemonProcess(tmp_path / "a", flags).start()
    second = DaemonProcess(tmp_path / "b", flags).start()
    yield first, second
    for d in (first, second):
        if d.proc is not None and d.proc.poll() is None:
            d.proc.kill()
            d.proc.wait(timeout=10)


def _leading(d: DaemonProcess) -> bool:
    with d.client() as c:
        return c.stats()["leaderElection"]["leading"]


def test_both_daemons_serve_one_leads_and_readyz_stats_and_metrics_say_which(pair) -> None:
    a, b = pair
    with a.client() as c:
        c.apply([{"kind": "Node", "metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "4", "pods": "10"}}},
                 _pod("p", "1")])
    _wait_for_binding(b, {"p"}, 0)  # written through a, bound by the leader, seen through b
    leader, standby = (a, b) if _leading(a) else (b, a)
    assert not _leading(standby)
    with standby.client() as c:
        info = c.stats()["leaderElection"]
        assert info["holder"] and info["holder"] != info["identity"]
        assert c.get("Pod", "p", "default")["spec"]["nodeName"] == "n1"
        with pytest.raises(ApiError, match="does not lead"):
            c.explain(_pod("q", "1"))
    assert leader.http_get("/readyz").endswith(": leader")
    assert standby.http_get("/readyz").endswith(": standby")
    assert 'leader_election_master_status{name="kube-scheduler"} 1.0' in leader.http_get("/metrics")
    assert 'leader_election_master_status{name="kube-scheduler"} 0.0' in standby.http_get("/metrics")


def test_a_leader_stopped_with_sigterm_revokes_its_lease_and_the_standby_binds_the_next_pod(pair) -> None:
    a, b = pair
    with a.client() as c:
        c.apply([{"kind": "Node", "metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "4", "pods": "10"}}}])
    leader, standby = (a, b) if _leading(a) else (b, a)
    assert leader.terminate() == 0
    with standby.client() as c:
        rv = c.list("Pod")[1]
        c.apply([_pod("after", "1")])
    # the lease is 60 s; the binding comes from the standby, which the revoked lease woke
    _wait_for_binding(standby, {"after"}, rv)
    assert _leading(standby)


def test_every_daemon_serves_the_kubernetes_api_on_the_shared_store(pair, tmp_path: Path) -> None:
    from tests.e2e.test_kubectl import KUBECTL, NODE, POD, Kubectl, _rows, _watch_until

    if KUBECTL is None:
        pytest.skip("kubectl is not installed (this test drives the real kubectl binary)")
    a, b = pair
    leader, standby = (a, b) if _leading(a) else (b, a)
    (tmp_path / "s").mkdir()
    (tmp_path / "l").mkdir()
    ks = Kubectl(standby.data_dir / "kubeconfig", tmp_path / "s")  # each daemon wrote its kubeconfig
    kl = Kubectl(leader.data_dir / "kubeconfig", tmp_path / "l")
    assert ks("create", "namespace", "demo").strip() == "namespace/demo created"  # writes through the standby
    ks("create", "-f", ks.file("n.yaml", NODE.format(name="node-a", n=1)))
    ks("create", "-f", ks.file("p1.yaml", POD.format(name="p1")))
    # scheduled by the leader, seen through the standby
    assert "condition met" in ks("wait", "--for=condition=PodScheduled", "pod/p1", "-n", "demo", "--timeout=30s")
    assert "node-a" in _rows(ks("get", "pods", "-n", "demo", "-o", "wide"))[1]
    seen = _watch_until(kl, ["get", "pods", "-n", "demo", "-w", "--output-watch-events"], "MODIFIED",
                        lambda: ks("label", "pod", "p1", "-n", "demo", "tier=fe"))
    assert seen[-1].split()[:2] == ["MODIFIED", "p1"]  # written through the standby, watched through the leader
    assert kl.jsonpath("get pod p1 -n demo", "{.metadata.labels.tier}") == "fe"
    assert 'pod "p1" deleted' in kl("delete", "pod", "p1", "-n", "demo", "--timeout=30s")
    assert 'pods "p1" not found' in ks("get", "pod", "p1", "-n", "demo", check=False)
