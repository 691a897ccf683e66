"""scheduling.k8s.io/v1alpha2 Workload and PodGroup through ksched's own front doors
on a real daemon: the CLI (`ksched get/describe/delete` by their group-qualified
names) and the msgpack wire (list and watch by kind key), and the daemon's
--feature-gates GenericWorkload=false refusing them (and REST neither discovering
nor serving them)."""
from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request

import pytest

from transport.protocol.wire import ApiError, Reason

MANIFESTS = """apiVersion: scheduling.k8s.io/v1alpha2
kind: Workload
metadata: {name: training}
spec:
  podGroupTemplates:
  - {name: workers, schedulingPolicy: {gang: {minCount: 2}}}
---
apiVersion: scheduling.k8s.io/v1alpha2
kind: PodGroup
metadata: {name: training-workers}
spec:
  podGroupTemplateRef: {workload: {workloadName: training, podGroupTemplateName: workers}}
  schedulingPolicy: {gang: {minCount: 2}}
  schedulingConstraints: {topology: [{key: example.com/rack}]}
  disruptionMode: PodGroup
  priority: 50
---
apiVersion: scheduling.x-k8s.io/v1alpha1
kind: PodGroup
metadata: {name: training-workers}
spec: {minMember: 3}
---
apiVersion: v1
kind: Pod
metadata: {name: w-0}
spec:
  schedulingGroup: {podGroupName: training-workers}
  containers: [{name: c, image: pause, resources: {requests: {cpu: 100m}}}]
"""


def test_the_cli_gets_describes_and_deletes_them_by_their_group_qualified_names(daemon_factory, tmp_path) -> None:
    d = daemon_factory()
    (tmp_path / "m.yaml").write_text(MANIFESTS)
    applied = d.cli("apply", "-f", str(tmp_path / "m.yaml")).stdout
    assert "workload.scheduling.k8s.io/training created" in applied
    assert "podgroup.scheduling.k8s.io/training-workers created" in applied
    assert "podgroup/training-workers created" in applied  # Coscheduling's, as ksched has always named it
    rows = [line.split() for line in d.cli("get", "podgroups.scheduling.k8s.io").stdout.strip().splitlines()]
    assert rows[0] == ["NAME", "POLICY", "MINCOUNT", "BOUND", "SCHEDULED", "AGE"]
    assert rows[1][:5] == ["training-workers", "Gang", "2", "0/1", "<none>"]
    rows = [line.split() for line in d.cli("get", "workloads.scheduling.k8s.io").stdout.strip().splitlines()]
    assert rows[1][:2] == ["training", "workers"]
    assert d.cli("get", "podgroups").stdout.split("\n")[0].split()[:3] == ["NAME", "PHASE", "MIN"]  # Coscheduling's
    described = d.cli("describe", "podgroups.scheduling.k8s.io", "training-workers").stdout
    assert "Gang (minCount 2)" in described and "example.com/rack" in described and "w-0" in described
    assert "Disruption Mode:" in described and "PodGroup" in described and "50 (no class)" in described
    assert "workers" in d.cli("describe", "workloads.scheduling.k8s.io", "training").stdout
    d.cli("delete", "-f", str(tmp_path / "m.yaml"))
    assert "No resources found" in d.cli("get", "podgroups.scheduling.k8s.io", check=False).stderr


def test_the_msgpack_wire_lists_and_watches_them_by_kind_key(daemon_factory, tmp_path) -> None:
    d = daemon_factory()
    c = d.client()
    (tmp_path / "m.yaml").write_text(MANIFESTS)
    d.cli("apply", "-f", str(tmp_path / "m.yaml"))
    items, rv = c.list("PodGroup.scheduling.k8s.io")
    assert [(o["kind"], o["apiVersion"]) for o in items] == [("PodGroup", "scheduling.k8s.io/v1alpha2")]
    assert [o["spec"]["minMember"] for o in c.list("PodGroup")[0]] == [3]
    seen = []
    events = c.watch(["PodGroup.scheduling.k8s.io"], "", rv)
    done = threading.Event()

    def reader() -> None:
        for ev in events:
            seen.append((ev.type, ev.object["metadata"]["name"]))
            if ev.type == "DELETED":
                done.set()
                return
    t = threading.Thread(target=reader, daemon=True)
    t.start()
    d.client().delete("PodGroup", "training-workers", "default")  # Coscheduling's: not in this watch
    d.client().delete("PodGroup.scheduling.k8s.io", "training-workers", "default")
    assert done.wait(30)
    assert seen == [("DELETED", "training-workers")]


def test_with_generic_workload_off_the_daemon_refuses_them_naming_the_gate(daemon_factory, tmp_path) -> None:
    d = daemon_factory("--feature-gates", "GenericWorkload=false")
    (tmp_path / "m.yaml").write_text(MANIFESTS.split("---\n")[1])
    out = d.cli("apply", "-f", str(tmp_path / "m.yaml"), check=False)
    assert out.returncode != 0 and "the GenericWorkload feature gate is off" in out.stderr
    with pytest.raises(ApiError) as err:
        d.client().create({"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "Workload", "metadata": {"name": "w"},
                           "spec": {"podGroupTemplates": [{"name": "t", "schedulingPolicy": {"basic": {}}}]}})
    assert err.value.reason == Reason.NOT_FOUND and "GenericWorkload" in err.value.message
    base = f"http://127.0.0.1:{d.http_port}"
    with urllib.request.urlopen(f"{base}/apis/scheduling.k8s.io") as r:  # discovery: only PriorityClass's v1
        assert [v["version"] for v in json.load(r)["versions"]] == ["v1"]
    with pytest.raises(urllib.error.HTTPError) as http_err:
        urllib.request.urlopen(f"{base}/apis/scheduling.k8s.io/v1alpha2/namespaces/default/podgroups")
    assert http_err.value.code == 404
