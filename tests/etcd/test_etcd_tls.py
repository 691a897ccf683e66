"""etcd over TLS with client certificates (kube-apiserver's --etcd-cafile/certfile/keyfile)."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import grpc
import pytest
from aetcd.exceptions import ClientError

from actors.leader_election import LeaderElector
from actors.store.etcd import EtcdBackend, EtcdSettings
from tests.actors.store_helpers import pod
from tests.etcd.test_shared_store import running
from transport.ha.etcd_local import LocalEtcd


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def _certificates(d: Path) -> None:
    """A CA, a server certificate for 127.0.0.1 and a client certificate, all signed by the CA."""
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt",
             "-days", "1", "-subj", "/CN=ksched-test-ca", cwd=d)
    (d / "san.ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    for name in ("server", "client"):
        _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.csr",
                 "-subj", f"/CN={name}", cwd=d)
        _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
                 "-out", f"{name}.crt", "-days", "1", "-extfile", "san.ext", cwd=d)


@pytest.fixture(scope="module")
def tls_etcd(tmp_path_factory: pytest.TempPathFactory):
    if shutil.which("openssl") is None:
        pytest.skip("no openssl command to make the test certificates with")
    d = tmp_path_factory.mktemp("etcd-tls")
    _certificates(d)
    cluster = LocalEtcd(d / "data", members=1, tls=(d / "ca.crt", d / "server.crt", d / "server.key")).start()
    yield cluster, d
    cluster.stop(kill=True)  # a throw-away cluster: no graceful leader transfer to wait for


async def test_a_store_and_an_election_work_over_tls_with_a_client_certificate(tls_etcd) -> None:
    cluster, d = tls_etcd
    settings = EtcdSettings(endpoints=tuple(f"https://{e}" for e in cluster.endpoints), prefix="/tls",
                            ca_file=str(d / "ca.crt"), cert_file=str(d / "client.crt"), key_file=str(d / "client.key"))
    async with running(EtcdBackend(settings)) as (_, client):
        created = await client.create(pod("over-tls"))
        assert (await client.get("Pod", "default", "over-tls"))["metadata"]["resourceVersion"] == \
            created["metadata"]["resourceVersion"]
    elector = LeaderElector(settings, "tls")
    try:
        assert await elector.try_acquire()
    finally:
        await elector.resign()
        await elector.close()


async def test_without_a_client_certificate_the_tls_etcd_refuses_the_store(tls_etcd) -> None:
    cluster, d = tls_etcd
    settings = EtcdSettings(endpoints=tuple(cluster.endpoints), prefix="/tls", ca_file=str(d / "ca.crt"),
                            timeout_seconds=2)
    backend = EtcdBackend(settings)
    try:
        with pytest.raises((grpc.aio.AioRpcError, ClientError)):
            await backend.load_all()
    finally:
        await backend.close()
