"""`ksched apply -f` streams: objects go to the daemon in chunks as they are parsed,
each object's line is printed when its chunk is acknowledged, a progress bar shows
on request (issue 22, "Big applies"). Real CLI subprocesses against a real daemon."""
from __future__ import annotations

import yaml

from transport.protocol.manifests import HAVE_LIBYAML, ManifestLoader
from tests.e2e.test_cli_kubectl_habits import TEAM, apply, pod


def _docs(n: int, start: int = 0) -> list[str]:
    return [yaml.safe_dump(pod(f"p{i:04}", "10m")) for i in range(start, start + n)]


def test_libyaml_parses_manifests():
    import yaml._yaml  # noqa: F401 - the C extension PyYAML is built with here

    assert HAVE_LIBYAML and issubclass(ManifestLoader, yaml._yaml.CParser)


def test_every_object_is_printed_in_order_with_a_progress_bar(daemon_factory, tmp_path):
    d = daemon_factory()
    f = tmp_path / "pods.yaml"
    f.write_text("---\n".join(_docs(250)))
    out = d.cli("apply", "-f", str(f), "--chunk-size", "40", "--progress", "always")
    assert out.stdout.splitlines() == [f"pod/p{i:04} created" for i in range(250)]
    assert "% read, " in out.stderr and out.stderr.endswith("\033[K")  # drawn, then erased (\r reads as \n here)
    with d.client() as c:
        assert len(c.list("Pod")[0]) == 250
    again = d.cli("apply", "-f", str(f), "--chunk-size", "40")
    assert again.stdout.splitlines() == [f"pod/p{i:04} unchanged" for i in range(250)]
    assert "\r" not in again.stderr  # stderr is no terminal: no bar


def test_chunks_before_a_parse_error_are_applied_and_printed(daemon_factory, tmp_path):
    d = daemon_factory()
    f = tmp_path / "pods.yaml"
    f.write_text("---\n".join(_docs(100) + ["kind: Pod\nmetadata: {name: [unclosed\n"]))
    out = d.cli("apply", "-f", str(f), "--chunk-size", "25", check=False)
    assert out.returncode == 2
    assert f"{f}: not valid YAML or JSON: line " in out.stderr
    # sent while the file was still being parsed: the daemon has them, and said so
    assert out.stdout.splitlines() == [f"pod/p{i:04} created" for i in range(100)]
    with d.client() as c:
        assert len(c.list("Pod")[0]) == 100


def test_a_refused_chunk_is_reported_and_the_others_apply(daemon_factory, tmp_path):
    d = daemon_factory()
    bad = pod("bad", "10m")
    bad["spec"]["priority"] = "high"  # not an integer: the daemon refuses the chunk holding it
    f = tmp_path / "pods.yaml"
    f.write_text("---\n".join(_docs(10) + [yaml.safe_dump(bad)] + _docs(10, start=10)))
    out = d.cli("apply", "-f", str(f), "--chunk-size", "10", check=False)
    assert out.returncode == 1
    assert out.stderr.startswith("Error from server (Invalid):")
    assert "pod/bad to pod/p0018, none applied" in out.stderr
    assert out.stdout.splitlines() == [f"pod/p{i:04} created" for i in range(10)] + ["pod/p0019 created"]
    with d.client() as c:
        assert sorted(p["metadata"]["name"] for p in c.list("Pod")[0]) == [f"p{i:04}" for i in (*range(10), 19)]


def test_namespace_flag_places_objects_without_one(daemon_factory):
    d = daemon_factory()
    apply(d, TEAM)
    out = d.cli("-n", "team", "apply", "-f", "-", input=yaml.safe_dump({**pod("x"), "metadata": {"name": "x"}}))
    assert out.stdout.strip() == "pod/x created"
    assert d.cli("get", "-n", "team", "pod/x", "-o", "name").stdout.strip() == "pod/x"
    clash = d.cli("-n", "other", "apply", "-f", "-", input=yaml.safe_dump(pod("y", ns="team")), check=False)
    assert clash.returncode == 2 and "does not match the namespace" in clash.stderr
