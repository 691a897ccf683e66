"""`ksched serve --feature-gates` and the config file's featureGates, on the real daemon."""
from __future__ import annotations

import subprocess
import sys

import yaml

from tests.e2e.conftest import ROOT, _env

GATE = "TaintTolerationComparisonOperators"
NODE = {"kind": "Node", "metadata": {"name": "n1"},
        "spec": {"taints": [{"key": "sla", "value": "950", "effect": "NoSchedule"}]},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}
POD = {"kind": "Pod", "metadata": {"name": "gt", "namespace": "default"},
       "spec": {"containers": [{"name": "c", "image": "pause"}],
                "tolerations": [{"key": "sla", "operator": "Gt", "value": "750"}]}}


def _serve(tmp_path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "transport.cli.main", "serve", "--data-dir", str(tmp_path / "d"),
                           "--listen", "127.0.0.1:0", "--http", "", *args],
                          cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=60)


def test_an_unknown_gate_on_the_flag_stops_start_up_naming_it(tmp_path):
    proc = _serve(tmp_path, "--feature-gates", f"{GATE}=true,NoSuchGate=true")
    assert proc.returncode == 2
    assert 'invalid argument "TaintTolerationComparisonOperators=true,NoSuchGate=true" for "--feature-gates" ' \
           "flag: unrecognized feature gate: NoSuchGate" in proc.stderr
    assert not (tmp_path / "d").exists()  # nothing was touched


def test_a_bad_value_and_a_locked_gate_on_the_flag_get_upstreams_errors(tmp_path):
    bad = _serve(tmp_path, "--feature-gates", f"{GATE}=yes")
    assert bad.returncode == 2 and f"invalid value of {GATE}=yes, err: strconv.ParseBool" in bad.stderr
    locked = _serve(tmp_path, "--feature-gates", "SchedulerQueueingHints=false")
    assert locked.returncode == 2
    assert "cannot set feature gate SchedulerQueueingHints to false, feature is locked to true" in locked.stderr


def test_an_unknown_gate_in_the_config_file_stops_start_up_naming_the_field(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump({"apiVersion": "kubescheduler.config.k8s.io/v1",
                                   "kind": "KubeSchedulerConfiguration", "featureGates": {"Bogus": True}}))
    proc = _serve(tmp_path, "--config", str(cfg))
    assert proc.returncode == 2
    assert "featureGates.Bogus: unrecognized feature gate: Bogus" in proc.stderr


def test_the_gates_in_effect_are_logged_and_the_flag_wins_over_the_file(daemon_factory, tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump({"apiVersion": "kubescheduler.config.k8s.io/v1",
                                   "kind": "KubeSchedulerConfiguration",
                                   "featureGates": {GATE: False, "StorageCapacityScoring": True}}))
    on = daemon_factory("--config", str(cfg), "--feature-gates", f"{GATE}=true", "--log-level", "INFO",
                        data_dir=tmp_path / "on")
    off = daemon_factory(data_dir=tmp_path / "off")
    for d in (on, off):
        with d.client() as c:
            c.apply([NODE])
    with on.client() as c:
        assert c.explain(POD)["chosen"] == "n1"  # the Gt toleration tolerates sla=950
    with off.client() as c:
        report = c.explain(POD)
        assert report["chosen"] is None  # upstream's default: the gate is off, Gt is not honoured
        assert "untolerated taint" in str(report["nodes"])
    assert on.terminate() == 0
    log = on.proc.stderr.read().decode()  # type: ignore[union-attr]
    line = next(x for x in log.splitlines() if "feature gates: " in x)
    gates = dict(p.split("=") for p in line.split("feature gates: ", 1)[1].split(","))
    assert gates[GATE] == "true" and gates["StorageCapacityScoring"] == "true"
    assert gates["SchedulerQueueingHints"] == "true" and gates["DRAExtendedResource"] == "false"
