"""`ksched serve` with a configuration naming two real extender processes
(examples/extender.py): pods land where the extenders' verdicts and scores send
them, and `ksched describe pod` shows the filter extender's message."""
from __future__ import annotations

import subprocess
import sys
from typing import Iterator

import pytest
import yaml

from tests.e2e.conftest import ROOT, _env, free_ports, poll


def node(name: str, labels: dict[str, str]) -> dict:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}


def pod(name: str, selector: dict[str, str] | None = None) -> dict:
    spec: dict = {"containers": [{"name": "c", "image": "pause", "resources": {"requests": {"cpu": "100m"}}}]}
    if selector:
        spec["nodeSelector"] = selector
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"}, "spec": spec}


def _listening(port: int) -> bool | None:
    import socket

    with socket.socket() as s:
        s.settimeout(0.5)
        return True if s.connect_ex(("127.0.0.1", port)) == 0 else None


@pytest.fixture
def extender_processes() -> Iterator[tuple[int, int]]:
    filter_port, prio_port = free_ports(2)
    procs = [subprocess.Popen([sys.executable, str(ROOT / "examples" / "extender.py"), "--listen", f"127.0.0.1:{port}",
                               *args], cwd=ROOT, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
             for port, args in ((filter_port, ["--require-label", "zone=a"]),
                                (prio_port, ["--prefer-label", "disk=ssd"]))]
    try:
        for port in (filter_port, prio_port):
            poll(lambda port=port: _listening(port), f"the extender on port {port}")
        yield filter_port, prio_port
    finally:
        for p in procs:
            p.terminate()
            p.wait(timeout=10)
            if p.stderr is not None:
                p.stderr.close()


def test_pods_are_placed_by_two_extender_processes_and_describe_shows_the_filter_message(
        daemon_factory, extender_processes, tmp_path):
    filter_port, prio_port = extender_processes
    config = tmp_path / "ksched.yaml"
    config.write_text(yaml.safe_dump({
        "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
        "extenders": [
            {"urlPrefix": f"http://127.0.0.1:{filter_port}", "filterVerb": "filter", "httpTimeout": "5s"},
            {"urlPrefix": f"http://127.0.0.1:{prio_port}", "prioritizeVerb": "prioritize", "weight": 5},
        ]}))
    d = daemon_factory("--config", str(config))
    manifests = tmp_path / "cluster.yaml"
    docs = [node("a-hdd", {"zone": "a"}), node("a-ssd", {"zone": "a", "disk": "ssd"}),
            node("b-ssd", {"zone": "b", "disk": "ssd"}),
            *[pod(f"web-{i}") for i in range(4)], pod("only-b", {"zone": "b"})]
    manifests.write_text("\n---\n".join(yaml.safe_dump(x) for x in docs))
    d.cli("apply", "-f", str(manifests))

    def placed() -> dict[str, str] | None:
        with d.client() as c:
            pods, _ = c.list("Pod", "default")
        web = {p["metadata"]["name"]: p["spec"].get("nodeName", "") for p in pods if p["metadata"]["name"].startswith("web")}
        failed = [p for p in pods if p["metadata"]["name"] == "only-b"
                  and any(c.get("reason") == "Unschedulable" for c in p.get("status", {}).get("conditions", []))]
        return web if len(web) == 4 and all(web.values()) and failed else None

    web = poll(placed, "the web pods bound and only-b found unschedulable")
    # The filter extender drops zone b; the prioritizer's 10 * 5 * 10 points pick the ssd node.
    assert set(web.values()) == {"a-ssd"}
    described = d.cli("describe", "pod", "only-b").stdout
    assert "0/3 nodes are available: 1 example extender: node lacks label zone=a, " \
           "2 node(s) didn't match Pod's node affinity/selector." in described

    # explain shows each extender's verdict and weighted score beside the plugins'.
    probe = tmp_path / "probe.yaml"
    probe.write_text(yaml.safe_dump(pod("probe")))
    rows = [line.split() for line in d.cli("explain", "-f", str(probe)).stdout.splitlines()]
    flt, prio = f"http://127.0.0.1:{filter_port}", f"http://127.0.0.1:{prio_port}"
    assert ["extender", flt, "Unschedulable", "example", "extender:", "node", "lacks", "label", "zone=a"] in rows
    assert ["extender", flt, "Success"] in rows
    assert ["extender", prio, "10", "100", "5", "500"] in rows  # raw 10 -> 100 -> x weight 5
    assert ["Chosen", "node:", "a-ssd"] in rows
