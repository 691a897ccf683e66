"""Manifests and config files are read as kubectl reads YAML (transport.protocol.manifests),
and any input the CLI cannot read gets one line naming the file and where in it."""
from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

from transport.protocol.manifests import (
    HAVE_LIBYAML,
    ManifestError,
    ManifestLoader,
    PureManifestLoader,
    decode_utf8,
    load_all,
)

ROOT = Path(__file__).resolve().parents[2]
UNREACHABLE = "127.0.0.1:1"  # files are read before connecting: no daemon is needed to refuse them


def ksched(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([sys.executable, "-m", "transport.cli.main", *args], cwd=ROOT, input=stdin,
                          capture_output=True, timeout=60)
    return subprocess.CompletedProcess(proc.args, proc.returncode, proc.stdout.decode(), proc.stderr.decode())


POD_HEAD = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n"
BAD_INPUTS = {
    "syntax": (POD_HEAD.encode() + b"spec: !!set {a, b}\nx: !!python/object:os.system {}\nbad: [\n",
               "line 8, column 1: did not find expected node content"),
    "nesting": (POD_HEAD.encode() + b"spec: " + b"[" * 3000 + b"]" * 3000 + b"\n", "line 5, column 1006"),
    "big-int": (POD_HEAD.encode() + b"spec:\n  priority: " + b"7" * 5000 + b"\n", "line 6, column 13"),
    "surrogate": (POD_HEAD.encode() + b'spec: {schedulerName: "\\ud800"}\n', "line 5, column 26"),
    "invalid-utf8": (POD_HEAD.encode() + b"spec: {schedulerName: caf\xe9}\n", "line 5, column 26"),
    "duplicate-key": (POD_HEAD.encode() + b"spec: {}\nmetadata: {}\n", "line 6, column 1"),
    "infinity": (POD_HEAD.encode() + b"spec: {priority: .inf}\n", "line 5, column 18"),
}


@pytest.mark.parametrize("name", sorted(BAD_INPUTS))
@pytest.mark.parametrize("command", ["apply", "delete", "explain"])
def test_every_unreadable_manifest_gets_one_line_naming_file_line_and_column(tmp_path, name, command):
    data, where = BAD_INPUTS[name]
    path = tmp_path / f"{name}.yaml"
    path.write_bytes(data)
    proc = ksched(command, "-f", str(path), "--server", UNREACHABLE)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {path}: "), proc.stderr
    assert where in lines[0], lines[0]


def test_stdin_is_read_the_same_way():
    proc = ksched("apply", "-f", "-", "--server", UNREACHABLE, stdin=b"kind: Pod\nkind: Node\n")
    assert proc.returncode == 2
    assert proc.stderr.strip() == ('error: <stdin>: not valid YAML or JSON: line 2, column 1: '
                                   'mapping key "kind" already defined at line 1')


def test_a_file_that_cannot_be_read_is_named_without_a_traceback(tmp_path):
    path = tmp_path / "manifest.yaml"
    with socket.socket(socket.AF_UNIX) as sock:  # open() on a socket fails (ENXIO), even as root
        sock.bind(str(path))
        proc = ksched("apply", "-f", str(path), "--server", UNREACHABLE)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip() == f"error: {path}: cannot read: No such device or address"


def test_serve_config_with_a_duplicate_key_or_invalid_utf8_exits_2_naming_the_line(tmp_path):
    for name, data, where in [
        ("dup", b"apiVersion: ksched.io/v1alpha1\nkind: DaemonConfiguration\nlisten: 127.0.0.1:0\n"
                b"listen: 127.0.0.1:1\n", "line 4, column 1: mapping key \"listen\" already defined at line 3"),
        ("utf8", b"apiVersion: ksched.io/v1alpha1\nkind: DaemonConfiguration\n# \xff\n", "line 3, column 3"),
    ]:
        path = tmp_path / f"{name}.yaml"
        path.write_bytes(data)
        proc = ksched("serve", "--config", str(path), "--data-dir", str(tmp_path / "data"))
        assert proc.returncode == 2, proc.stderr
        assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
        assert where in proc.stderr and str(path) in proc.stderr


# --- the loader's types, against go-yaml v2 (what kubectl uses) ------------------------------


@pytest.mark.parametrize("text, value", [
    ("1:30", "1:30"),            # YAML 1.1 sexagesimal: a string in go-yaml
    ("190:20:30", "190:20:30"),
    ("=", "="),                  # YAML 1.1 value key: a string
    ("2024-01-02", "2024-01-02"),  # timestamps stay as written
    ("2001-12-14 21:59:43.10 -5", "2001-12-14 21:59:43.10 -5"),
    ("y", True), ("Yes", True), ("ON", True), ("n", False), ("off", False), ("yEs", "yEs"),
    ("~", None), ("null", None), ("", None),
    ("0o17", 15), ("017", 15), ("0x1F", 31), ("0b101", 5), ("1_000", 1000), ("+12", 12), ("-0x10", -16),
    ("08", 8.0), ("1e3", 1000.0), ("1.0e3", 1000.0), (".5", 0.5), ("1.", 1.0),
    ("18446744073709551615", 18446744073709551615), ("-9223372036854775808", -9223372036854775808),
    ("0x", "0x"), ("1.2.3", "1.2.3"), ("-1-", "-1-"), ("+.5.", "+.5."),
])
@pytest.mark.parametrize("loader", [ManifestLoader, PureManifestLoader], ids=["libyaml", "pure-python"])
def test_plain_scalars_resolve_as_go_yaml_resolves_them(text, value, loader):
    [doc] = load_all(f"v: {text}\n", "f", loader)
    assert doc["v"] == value and type(doc["v"]) is type(value)


def test_quoted_scalars_are_strings_and_keys_become_json_strings():
    [doc] = load_all("a: '1:30'\nb: \"yes\"\ntrue: 1\n3: x\n", "f")
    assert doc == {"a": "1:30", "b": "yes", "true": 1, "3": "x"}


def test_merge_keys_are_not_duplicates_but_explicit_keys_are():
    [doc] = load_all("base: &b {x: 1, z: 2}\nd:\n  <<: *b\n  x: 5\n", "f")
    assert doc["d"] == {"x": 5, "z": 2}
    with pytest.raises(ManifestError, match=r'line 4, column 3: mapping key "x" already defined at line 3'):
        load_all("d:\n  <<: {x: 1}\n  x: 2\n  x: 3\n", "f")


@pytest.mark.parametrize("text, problem", [
    ("v: 18446744073709551616\n", "line 1, column 4: integer out of range"),
    ("v: +9223372036854775808\n", "line 1, column 4: integer out of range"),
    ("v: 1e400\n", "line 1, column 4: number out of range"),
    ("v: .nan\n", "line 1, column 4: .nan is not a finite number"),
    ("v: !!int abc\n", "line 1, column 4: cannot decode 'abc' as an integer"),
    ("~: 1\n", "line 1, column 1: a mapping key must not be null"),
    ("? [a]\n: 1\n", "line 1, column 3: a mapping key must be a scalar"),
    ("v: !!binary //79\n", "line 1, column 4: !!binary: not base64 of UTF-8 text"),
])
@pytest.mark.parametrize("loader", [ManifestLoader, PureManifestLoader], ids=["libyaml", "pure-python"])
def test_what_go_yaml_or_json_cannot_carry_is_refused_with_line_and_column(text, problem, loader):
    with pytest.raises(ManifestError) as err:
        load_all(text, "f.yaml", loader)
    assert str(err.value).startswith(f"f.yaml: {problem}")


def test_explicit_tags_give_plain_json_shapes():
    [doc] = load_all("a: !!set {x, w}\nb: !!omap [{k: 1}]\nc: !custom word\nd: !!binary aGk=\n"
                     "e: !!timestamp 2024-01-02\nf: !!float 12\n", "f")
    assert doc == {"a": {"x": None, "w": None}, "b": [{"k": 1}], "c": "word", "d": "hi", "e": "2024-01-02",
                   "f": 12.0}


def test_invalid_utf8_names_the_line_and_column_of_the_byte():
    with pytest.raises(ManifestError, match=r"^f: line 2, column 4: invalid UTF-8 \(byte 0xff\)"):
        decode_utf8(b"a: 1\nb: \xff\n", "f")
    assert decode_utf8(b"\xef\xbb\xbfa: 1\n", "f") == "a: 1\n"


def test_libyaml_is_used_when_installed():
    import yaml

    assert HAVE_LIBYAML == bool(yaml.__with_libyaml__)


def test_without_libyaml_a_lone_surrogate_and_deep_nesting_are_refused_too():
    with pytest.raises(ManifestError, match=r"^f: line 1, column 4: a lone surrogate"):
        load_all('v: "\\ud800"\n', "f", PureManifestLoader)
    with pytest.raises(ManifestError, match=r"^f: nested too deeply"):
        load_all("[" * 3000 + "]" * 3000, "f", PureManifestLoader)
