"""Transport reads the Store only through the read-only interface the store hands
out (actors/store/reads.py StoreReader), never through the store's fields."""
from __future__ import annotations

import ast
import inspect
from pathlib import Path

from actors.store.reads import StoreReader

ROOT = Path(__file__).resolve().parents[2]
PUBLIC_READS = {name for name, _ in inspect.getmembers(StoreReader) if not name.startswith("_")}


def _attributes(path: Path) -> list[ast.Attribute]:
    return [n for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.Attribute)]


def test_the_reader_offers_reads_only() -> None:
    assert PUBLIC_READS == {"read", "read_list", "peek", "count", "resource_version", "commits"}


def test_service_and_the_kube_api_touch_no_store_field_and_read_only_the_published_interface() -> None:
    for rel in ("transport/server/service.py", "transport/kube/reads.py"):
        attrs = _attributes(ROOT / rel)
        assert not [a for a in attrs if a.attr == "store"], f"{rel} reaches the Store actor's object"
        via_reads = {a.attr for a in attrs if isinstance(a.value, ast.Attribute) and a.value.attr == "reads"}
        assert via_reads <= PUBLIC_READS, f"{rel} reads {via_reads - PUBLIC_READS} past the reader"
        private = {a.attr for a in attrs if a.attr.startswith("_") and not a.attr.startswith("__")
                   and not (isinstance(a.value, ast.Name) and a.value.id in {"self", "cls"})}
        assert not private, f"{rel} reads private fields {private}"


async def test_a_service_holds_the_reader_and_a_client_not_the_store(tmp_path: Path) -> None:
    from actors.store import Store
    from actors.store.sqlite import SQLiteBackend
    from transport.server.service import StoreService

    store = Store(SQLiteBackend(str(tmp_path)))
    await store.load()
    service = StoreService(store)
    assert not hasattr(service, "store")
    assert isinstance(service.reads, StoreReader)
    assert (await service.stats())["resourceVersion"] == service.reads.resource_version
    await store.close()
