"""TLS on the msgpack port: a client that trusts the certificate talks; a plain one cannot."""
from __future__ import annotations

import asyncio
import shutil
import ssl
import subprocess

import pytest

from actors.store import Store
from actors.store.memory import InMemoryBackend
from transport.client.tcp import Client, client_tls_context
from transport.server.tcp import Server
from transport.server.service import StoreService
from transport.protocol.wire import ApiError, Reason

from tests.transport.conftest import node

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")


@pytest.fixture
def certificate(tmp_path):
    cert, key = tmp_path / "server.crt", tmp_path / "server.key"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True, timeout=60)
    return cert, key


async def test_a_client_trusting_the_certificate_is_served_and_a_plain_one_is_not(certificate):
    cert, key = certificate
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_ctx.load_cert_chain(cert, key)
    store = Store(InMemoryBackend())
    await store.load()
    task = asyncio.get_running_loop().create_task(store.run())
    server = Server(StoreService(store), ssl_context=server_ctx)
    host, port = await server.start("127.0.0.1", 0)
    try:
        async with await Client.connect(f"{host}:{port}", ssl_context=client_tls_context(str(cert))) as c:
            await c.create(node("n1"))
            assert [n["metadata"]["name"] for n in (await c.list("Node"))[0]] == ["n1"]
        with pytest.raises(ApiError) as err:
            await Client.connect(f"{host}:{port}", timeout=5)
        assert err.value.reason == Reason.UNAVAILABLE
    finally:
        await server.close()
        store.inbox.close()
        await task


def test_an_unreadable_ca_file_is_invalid_naming_the_flag(tmp_path):
    with pytest.raises(ApiError, match="tls-ca: cannot load"):
        client_tls_context(str(tmp_path / "missing.pem"))


async def test_the_http_port_speaks_the_same_tls_and_asks_for_the_token(certificate):
    import aiohttp

    from transport.http.app import HttpDeps, make_http_app, start_http
    from transport.http.metrics import SchedulerMetrics

    cert, key = certificate
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_ctx.load_cert_chain(cert, key)
    deps = HttpDeps(ready=lambda: True, metrics=SchedulerMetrics(), token="s3cret")
    runner, (host, port) = await start_http(make_http_app(deps), "127.0.0.1", 0, server_ctx)
    try:
        trusted = client_tls_context(str(cert))
        async with aiohttp.ClientSession() as s:
            seen = []
            for path, headers in (("/readyz", {}), ("/metrics", {}), ("/metrics", {"Authorization": "Bearer s3cret"})):
                async with s.get(f"https://{host}:{port}{path}", ssl=trusted, headers=headers) as r:
                    seen.append(r.status)
            assert seen == [200, 401, 200]
            with pytest.raises(aiohttp.ClientError):
                async with s.get(f"http://{host}:{port}/readyz") as r:
                    await r.read()
    finally:
        await runner.cleanup()
