"""The certificate the daemon makes for HTTPS and the kubeconfig it writes (transport.kube.tls)."""
from __future__ import annotations

import base64
import shutil
import ssl
import stat

import aiohttp
import pytest
import yaml

from transport.http.app import HttpDeps, make_http_app, start_http
from transport.http.metrics import SchedulerMetrics
from transport.kube.tls import client_host, self_signed, write_kubeconfig

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")


async def test_the_made_ca_signs_a_certificate_for_loopback_kept_across_starts(tmp_path):
    made = self_signed(tmp_path / "data", "127.0.0.1")
    first = made.cert_file.read_bytes()
    assert stat.S_IMODE(made.key_file.stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "data").stat().st_mode) == 0o700
    assert self_signed(tmp_path / "data", "127.0.0.1").cert_file.read_bytes() == first  # not made again
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.load_cert_chain(made.cert_file, made.key_file)
    runner, (host, port) = await start_http(make_http_app(HttpDeps(ready=lambda: True, metrics=SchedulerMetrics())),
                                            "127.0.0.1", 0, server)
    try:
        trusting = ssl.create_default_context(cafile=str(made.ca_file))  # verifies the chain and the IP SAN
        async with aiohttp.ClientSession() as s:
            async with s.get(f"https://127.0.0.1:{port}/healthz", ssl=trusting) as r:
                assert (r.status, await r.text()) == (200, "ok")
            with pytest.raises(aiohttp.ClientConnectorCertificateError):
                await s.get(f"https://127.0.0.1:{port}/healthz", ssl=ssl.create_default_context())
    finally:
        await runner.cleanup()


def test_the_kubeconfig_is_private_and_names_server_ca_and_token(tmp_path):
    ca = tmp_path / "ca.crt"
    ca.write_bytes(b"-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n")
    path = tmp_path / "kubeconfig"
    write_kubeconfig(path, "https://127.0.0.1:6443", ca_file=ca, token="t0k")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    doc = yaml.safe_load(path.read_text())
    cluster = doc["clusters"][0]["cluster"]
    assert cluster["server"] == "https://127.0.0.1:6443"
    assert base64.b64decode(cluster["certificate-authority-data"]) == ca.read_bytes()
    assert doc["users"][0]["user"] == {"token": "t0k"} and doc["current-context"] == "ksched"
    write_kubeconfig(path, "http://127.0.0.1:10251")
    doc = yaml.safe_load(path.read_text())
    assert doc["clusters"][0]["cluster"] == {"server": "http://127.0.0.1:10251"} and doc["users"][0]["user"] == {}
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".kubeconfig")] == []  # no temp file left
    assert (client_host("0.0.0.0"), client_host("::"), client_host("10.1.2.3")) == ("127.0.0.1", "::1", "10.1.2.3")
