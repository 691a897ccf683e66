"""`ksched` as a kubectl user types it (issue 22, "The CLI"): real CLI subprocesses
against a real daemon."""
from __future__ import annotations

import queue
import subprocess
import sys
import threading

import yaml

from tests.e2e.conftest import ROOT, DaemonProcess, _env, poll

NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
        "status": {"allocatable": {"cpu": "2", "memory": "4Gi", "pods": "110"}}}


TEAM = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}}


def pod(name: str, cpu: str = "1", ns: str = "default", gates: list[str] | None = None) -> dict:
    spec: dict = {"containers": [{"name": "c", "image": "pause", "resources": {"requests": {"cpu": cpu}}}]}
    if gates:
        spec["schedulingGates"] = [{"name": g} for g in gates]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns}, "spec": spec}


def apply(d: DaemonProcess, *objs: dict) -> str:
    return d.cli("apply", "-f", "-", input="\n---\n".join(yaml.safe_dump(o) for o in objs)).stdout


def bound(d: DaemonProcess, name: str, ns: str = "default") -> str | None:
    with d.client() as c:
        return (c.get("Pod", name, ns).get("spec") or {}).get("nodeName")


def test_resource_arguments_namespace_flags_anywhere_delete_and_describe(daemon_factory):
    d = daemon_factory()
    apply(d, NODE, TEAM, pod("a", "100m"), pod("b", "100m"), pod("c", "100m", ns="team"))

    assert d.cli("get", "pod/a").stdout.splitlines()[1].split()[0] == "a"
    assert d.cli("get", "pods/a", "-o", "name").stdout.split() == ["pod/a"]
    assert d.cli("get", "po", "a", "b", "-o", "name").stdout.split() == ["pod/a", "pod/b"]
    out = d.cli("get", "nodes,pods").stdout
    assert "node/n1" in out and "pod/a" in out and "pod/b" in out  # kind/ prefixes when several kinds
    # -n and -A before the verb, between names, after everything
    assert d.cli("-n", "team", "get", "pods", "-o", "name").stdout.split() == ["pod/c"]
    assert d.cli("get", "-n", "team", "po", "c", "-o", "name").stdout.split() == ["pod/c"]
    assert d.cli("-A", "get", "pods", "-o", "name").stdout.split() == ["pod/a", "pod/b", "pod/c"]
    assert "team" in d.cli("get", "pods", "-A").stdout.splitlines()[-1]

    page = d.cli("describe", "pod/a").stdout
    assert page.splitlines()[0].split() == ["Name:", "a"]
    assert "Name:" in d.cli("-n", "team", "describe", "pods/c").stdout

    assert d.cli("delete", "pod/b").stdout.strip() == "pod/b deleted"
    assert d.cli("get", "pods", "-o", "name").stdout.split() == ["pod/a"]

    bad = d.cli("get", "bogus", check=False)
    assert bad.returncode == 2
    for word in ("pods (po)", "nodes (no)", "podgroups (pg, pgs)", "priorityclasses (pc)", "services (svc)",
                 "persistentvolumeclaims (pvc)", "storageclasses (sc)", "csinodes", "volumeattachments"):
        assert word in bad.stderr


def _read_line(lines: "queue.Queue[str | None]", want: str) -> str:
    """The next line containing `want` that ksched get -w prints (bounded: within 20 s)."""
    while True:
        try:
            line = lines.get(timeout=20)
        except queue.Empty:
            raise AssertionError(f"no line with {want!r} from ksched get -w") from None
        if line is None:
            raise AssertionError(f"ksched get -w ended before printing {want!r}")
        if want in line:
            return line


def test_get_watch_prints_the_table_then_a_row_per_change(daemon_factory):
    d = daemon_factory()
    apply(d, pod("first", "100m"))
    proc = subprocess.Popen([sys.executable, "-m", "transport.cli.main", "get", "pods", "-w", "--server", d.server],
                            cwd=ROOT, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    lines: queue.Queue[str | None] = queue.Queue()

    def pump() -> None:  # a thread reads, so that lines Python has buffered are seen at once
        for line in proc.stdout:  # type: ignore[union-attr]
            lines.put(line)
        lines.put(None)

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    try:
        assert _read_line(lines, "NAME").split()[:2] == ["NAME", "STATUS"]
        assert _read_line(lines, "first").split()[0] == "first"
        apply(d, pod("second", "100m"))
        assert _read_line(lines, "second").split()[0] == "second"
    finally:
        proc.kill()
        proc.wait(timeout=10)
        reader.join(timeout=10)
        proc.stdout.close()  # type: ignore[union-attr]


def test_explain_a_stored_pod_by_name_bound_as_if_unbound_and_gated_says_so_first(daemon_factory):
    d = daemon_factory()
    apply(d, NODE, pod("big", "1500m"))
    poll(lambda: bound(d, "big"), "big bound")
    # Counted on its own node, the pod would not fit there (1500m + 1500m > 2 cores).
    out = d.cli("explain", "pod/big").stdout
    assert "explained as if it were not bound yet" in out.splitlines()[0]
    assert "Chosen node: n1" in out and "Insufficient cpu" not in out
    assert "Chosen node: n1" in d.cli("explain", "pod", "big").stdout

    apply(d, pod("held", "100m", gates=["example.com/wait"]))
    first = d.cli("explain", "pod/held").stdout.splitlines()[0]
    assert "not scheduled until its scheduling gates are removed" in first and "example.com/wait" in first

    missing = d.cli("explain", "pod/nope", check=False)
    assert missing.returncode == 1 and "NotFound" in missing.stderr
