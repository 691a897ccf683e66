"""`ksched serve` as a real process: the descriptor limit, the token file's checks,
the HTTP cap and idle flags, the shared auth throttle, and manifests read as kubectl
reads them."""
from __future__ import annotations

import http.client
import os
import resource
import socket
import subprocess
import sys
from pathlib import Path

import yaml

from tests.e2e.conftest import ROOT, UNVERIFIED, _env, free_ports
from transport.protocol.framing import FrameDecoder, encode_frame

GUARD = 60  # seconds: a hang guard for a subprocess, never a speed threshold
TOKEN = "e2e-hardening-token-0123"


def _lower_soft_nofile() -> None:
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard))


def _soft_nofile(pid: int) -> int:
    for line in Path(f"/proc/{pid}/limits").read_text().splitlines():
        if line.startswith("Max open files"):
            return int(line.split()[3])
    raise AssertionError("no 'Max open files' in /proc/PID/limits")


def test_serve_raises_its_soft_descriptor_limit_to_the_hard_limit_and_logs_it(daemon_factory):
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    assert hard != resource.RLIM_INFINITY and hard > 256, "this test needs a finite hard limit above 256"
    d = daemon_factory(preexec_fn=_lower_soft_nofile)
    assert d.proc is not None
    assert _soft_nofile(d.proc.pid) == hard
    assert d.terminate() == 0
    log = d.proc.stderr.read().decode()  # type: ignore[union-attr]
    assert f"descriptor limit (RLIMIT_NOFILE): {hard} (was 256, hard limit {hard})" in log


def serve(*args: str) -> subprocess.CompletedProcess[str]:
    listen, http_port = free_ports(2)
    return subprocess.run([sys.executable, "-m", "transport.cli.main", "serve", "--listen", f"127.0.0.1:{listen}",
                           "--http", f"127.0.0.1:{http_port}", *args], cwd=ROOT, env=_env(), capture_output=True,
                          text=True, timeout=GUARD)


def test_a_fifo_or_a_short_token_file_stops_start_up_at_once_saying_which_check_failed(tmp_path):
    fifo = tmp_path / "token.fifo"
    os.mkfifo(fifo, 0o600)  # nobody writes: reading it would block start-up forever
    proc = serve("--data-dir", str(tmp_path / "a"), "--token-file", str(fifo))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert f"tokenFile: {fifo}: not a regular file (a FIFO)" in proc.stderr

    short = tmp_path / "short"
    short.write_text("x\n")
    short.chmod(0o600)
    proc = serve("--data-dir", str(tmp_path / "b"), "--token-file", str(short))
    assert proc.returncode == 1 and "the token is 1 bytes; at least 16 are required" in proc.stderr


def _http_get(port: int, path: str, token: str | None = None, source: str = "127.0.0.1",
              tls: bool = False) -> tuple[int, str]:
    """GET over HTTP, or HTTPS (a daemon with a token serves it, with its own certificate)."""
    if tls:
        conn: http.client.HTTPConnection = http.client.HTTPSConnection(
            "127.0.0.1", port, timeout=GUARD, source_address=(source, 0), context=UNVERIFIED)
    else:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=GUARD, source_address=(source, 0))
    try:
        conn.request("GET", path, headers={"Authorization": f"Bearer {token}"} if token else {})
        r = conn.getresponse()
        return r.status, r.read().decode()
    finally:
        conn.close()


def test_silent_sockets_at_the_http_cap_are_evicted_so_healthz_answers(daemon_factory):
    d = daemon_factory("--max-http-connections", "3", "--http-idle-timeout", "3600")
    silent = [socket.create_connection(("127.0.0.1", d.http_port)) for _ in range(3)]
    try:
        assert _http_get(d.http_port, "/healthz") == (200, "ok")
        silent[0].settimeout(GUARD)
        assert silent[0].recv(1) == b""  # the longest-idle one made room
        metrics = _http_get(d.http_port, "/metrics")[1]
        assert 'ksched_server_rejections_total{limit="http_idle_evicted"}' in metrics
    finally:
        for s in silent:
            s.close()


def _hello(port: int, token: str, source: str = "127.0.0.1") -> dict:
    with socket.create_connection(("127.0.0.1", port), timeout=GUARD, source_address=(source, 0)) as s:
        s.sendall(encode_frame({"id": 1, "op": "hello", "token": token}))
        decoder = FrameDecoder(1 << 20)
        while True:
            data = s.recv(65536)
            assert data, "closed without a reply"
            if frames := decoder.feed(data):
                return frames[0]


def test_wrong_bearer_tokens_throttle_that_address_on_the_msgpack_port_too_and_no_other(daemon_factory, tmp_path):
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    token_file.chmod(0o600)
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"apiVersion": "ksched.io/v1alpha1", "kind": "DaemonConfiguration",
                                      "tokenFile": str(token_file),
                                      "limits": {"authFailureBurst": 2, "authFailuresPerSecond": 0.001}}))
    d = daemon_factory("--config", str(config))
    assert [_http_get(d.http_port, "/metrics", "guess", tls=True)[0] for _ in range(2)] == [401, 401]
    assert _http_get(d.http_port, "/metrics", TOKEN, tls=True)[0] == 429
    refused = _hello(d.port, TOKEN)
    assert refused["ok"] is False and refused["error"]["reason"] == "TooManyRequests"
    assert _hello(d.port, TOKEN, source="127.0.0.2")["ok"] is True
    status, metrics = _http_get(d.http_port, "/metrics", TOKEN, source="127.0.0.2", tls=True)
    assert status == 200
    assert 'ksched_server_rejections_total{limit="http_auth_failed"} 2.0' in metrics
    assert 'ksched_server_rejections_total{limit="auth_throttled"} 1.0' in metrics
    assert d.terminate() == 0
    assert "authentication from 127.0.0.1 over HTTP refused" in d.proc.stderr.read().decode()  # type: ignore[union-attr]


def test_a_sexagesimal_looking_quantity_is_a_string_refused_by_validation_naming_the_field(daemon_factory, tmp_path):
    d = daemon_factory()
    manifest = tmp_path / "pod.yaml"
    manifest.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n"
                        "    image: busybox\n    resources: {requests: {cpu: 1:30}}\n")
    proc = d.cli("apply", "-f", str(manifest), check=False)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith("Error from server (Invalid)")
    assert 'spec.containers[0].resources.requests[cpu]: Invalid value: "1:30"' in proc.stderr
