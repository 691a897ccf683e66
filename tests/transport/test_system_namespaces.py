"""The system namespaces: created once when a daemon starts (transport/daemon/
system_namespaces.py) as stored objects, and refused deletion as kube-apiserver's
NamespaceLifecycle refuses it (403 Forbidden naming the namespace)."""
from __future__ import annotations

from tests.transport.test_kube_api import api  # noqa: F401 - the fixture: a store behind the HTTP port
from transport.daemon.system_namespaces import create_system_namespaces
from transport.server.service import StoreService


async def test_the_system_namespaces_are_created_once_and_listed_like_any_other(api):  # noqa: F811
    service = StoreService(api.store)
    assert await create_system_namespaces(service) == ["kube-system", "kube-public", "kube-node-lease", "default"]
    assert await create_system_namespaces(service) == []  # already there: nothing written again
    _, listed = await api.call("GET", "/api/v1/namespaces")
    assert [n["metadata"]["name"] for n in listed["items"]] == [
        "default", "demo", "kube-node-lease", "kube-public", "kube-system"]


async def test_deleting_default_kube_system_or_kube_public_is_forbidden_and_changes_nothing(api):  # noqa: F811
    await create_system_namespaces(StoreService(api.store))
    for name in ("default", "kube-system", "kube-public"):
        status, err = await api.call("DELETE", f"/api/v1/namespaces/{name}")
        assert (status, err["reason"], err["message"], err["details"]) == (
            403, "Forbidden", f'namespaces "{name}" is forbidden: this namespace may not be deleted',
            {"name": name, "kind": "namespaces"})
        status, _ = await api.call("GET", f"/api/v1/namespaces/{name}")
        assert status == 200
    status, _ = await api.call("DELETE", "/api/v1/namespaces/kube-node-lease")  # upstream lets this one go
    assert status == 200
