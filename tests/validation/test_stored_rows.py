"""Rows of the SQLite file the daemon cannot use are quarantined, each with a log
line naming it, and the daemon starts and serves the rest (issue 19).

Each bad row is written straight into a real SQLite file with sqlite3, then the
real store (or the real daemon) starts on it. Before: a text resource_version (in
a row or in the meta table) or a non-UTF-8 body crash-looped the daemon; a row at
2^63-1 made every later write fail as Internal; one 30 MB row broke every list.
"""
from __future__ import annotations

import asyncio
import json
import logging
import sqlite3
from pathlib import Path
from typing import Any

from actors.store.backend import Write
from actors.store.limits import StoreLimits
from actors.store.raw import encoded_size
from actors.store.sqlite import SQLiteBackend
from actors.store.sqlite_rows import MAX_RESOURCE_VERSION
from tests.actors.store_helpers import pod, running
from tests.e2e.conftest import poll
from tests.e2e.test_daemon import nodes_yaml, pod_manifest

LIMIT = 20_000  # the store-level tests' object limit (msgpack bytes)


def _body(name: str, pad: str = "", **meta: Any) -> str:
    raw = pod(name)
    raw["metadata"].update(meta)
    if pad:
        raw["metadata"]["annotations"] = {"pad": pad}
    return json.dumps(raw, separators=(",", ":"))


async def seed(data: Path, good: int = 3) -> Path:
    """A real store file with `good` ordinary pods at versions 1..good (through the backend)."""
    backend = SQLiteBackend(data)
    await backend.load_all()
    await backend.commit([Write(kind="Pod", key=f"default/good-{i}", raw=json.loads(_body(f"good-{i}")),
                                resource_version=i + 1) for i in range(good)])
    await backend.close()
    return backend.path


def bad_rows(limit: int) -> list[tuple[str, str, Any, Any, str]]:
    """(kind, key, resource_version, body SQL value, what the quarantine says)."""
    over = "x" * (limit + 100)  # msgpack above the limit, JSON within 6x of it: measured
    escaped = "\u0001" * (limit // 5)  # JSON 6 bytes per character, msgpack 1: within the limit
    return [
        ("Pod", "default/text-rv", "abc", _body("text-rv"), "resource_version 'abc' (text)"),
        ("Pod", "default/real-rv", 4.5, _body("real-rv"), "resource_version 4.5 (real)"),
        ("Pod", "default/max-rv", 2**63 - 1, _body("max-rv"), f"from 1 to {MAX_RESOURCE_VERSION}"),
        ("Pod", "default/zero-rv", 0, _body("zero-rv"), "resource_version 0 (integer)"),
        ("Pod", "default/not-utf8", 20, b'{"kind":"Pod","metadata":{"name":"not-utf8\x80\xff"}}', "not UTF-8"),
        ("Pod", "default/nan", 21, _body("nan").replace('"spec":{', '"spec":{"x":NaN,'), "spec.x"),
        ("Pod", "default/over", 22, _body("over", over), "above the limit of"),
        ("Pod", "default/far-over", 23, _body("far-over", "y" * (7 * limit)), "above the limit of"),
        ("Pod", b"default/key-\xff", 24, _body("key"), "kind or key is not UTF-8"),
        ("Pod", "default/renamed", 19, _body("someone-else"), "the body is Pod default/someone-else, not the row's"),
        ("Pod", "default/escaped", 25, _body("escaped", escaped), ""),  # usable: not quarantined
    ]


def write_bad_rows(path: Path, rows: list[tuple[str, str, Any, Any, str]], meta: Any = None) -> None:
    with sqlite3.connect(path) as db:
        for kind, key, rv, body, _ in rows:
            key_sql = "CAST(? AS TEXT)" if isinstance(key, bytes) else "?"
            body_sql = "CAST(? AS TEXT)" if isinstance(body, bytes) else "?"
            db.execute(f"INSERT INTO objects VALUES (?, {key_sql}, ?, {body_sql})", (kind, key, rv, body))
        if meta is not None:
            # (a store that has committed no delete has no meta row yet: sqlite.py)
            db.execute("INSERT INTO meta VALUES ('resource_version', ?) "
                       "ON CONFLICT (name) DO UPDATE SET value = excluded.value", (meta,))


def store_on(data: Path, limit: int = LIMIT):  # type: ignore[no-untyped-def]
    return running(SQLiteBackend(data), limits=StoreLimits(max_object_bytes=limit))


async def test_every_unusable_row_is_quarantined_with_a_log_line_and_the_store_serves_the_rest(
        tmp_path: Path, caplog) -> None:
    data = tmp_path / "data"
    rows = bad_rows(LIMIT)
    assert encoded_size(json.loads(rows[-1][3])) <= LIMIT < len(rows[-1][3])  # the escaped one is in
    write_bad_rows(await seed(data), rows, meta="garbage")
    caplog.set_level(logging.WARNING, logger="ksched.store")
    async with store_on(data) as (store, c):
        served = sorted(o.name for o in store.peek_all("Pod"))
        assert served == ["escaped", "good-0", "good-1", "good-2"]
        quarantined = {key: why for (_, key), why in store.quarantined.items()}
        for _, key, _, _, says in rows[:-1]:
            name = key if isinstance(key, str) else key.decode("utf-8", "replace")
            assert says in quarantined[name], (name, quarantined.get(name))
            assert any(name in r.getMessage() and r.getMessage().startswith("quarantined stored Pod")
                       for r in caplog.records), name
        assert any("meta resource_version" in r.getMessage() and "rebuilt as 25" in r.getMessage()
                   for r in caplog.records)
        # Versions go on from the highest usable one (25), not from 2^63-1.
        assert store.resource_version == 25
        made = await c.create(pod("after"))
        # (the store's first turn writes each quarantined row's Warning event first)
        assert made["metadata"]["resourceVersion"] == str(25 + len(store.quarantined) + 1)
        assert len(store.peek_all("Event")) == len(store.quarantined)
        # The names of quarantined rows are free again: a write replaces the row.
        await c.create(pod("max-rv"))
        await c.create(pod("text-rv"))
        last = store.resource_version
    caplog.clear()
    async with store_on(data) as (store, _):
        assert {"after", "max-rv", "text-rv"} <= {o.name for o in store.peek_all("Pod")}
        assert ("Pod", "default/max-rv") not in store.quarantined
        assert store.resource_version == last
        assert not any("meta resource_version" in r.getMessage() for r in caplog.records)  # written back


async def test_a_meta_version_beyond_the_usable_range_is_rebuilt_from_the_rows(tmp_path: Path) -> None:
    data = tmp_path / "data"
    write_bad_rows(await seed(data, good=2), [], meta=2**63 - 1)
    async with store_on(data) as (store, c):
        assert store.resource_version == 2
        assert (await c.create(pod("next")))["metadata"]["resourceVersion"] == "3"


def test_a_daemon_started_on_unusable_rows_and_a_30_mb_row_serves_lists_and_binds_pods(
        daemon_factory, tmp_path: Path) -> None:
    data = tmp_path / "data"
    path = asyncio.run(seed(data))
    rows = [r for r in bad_rows(StoreLimits().max_object_bytes) if r[1] != "default/escaped"]
    rows.append(("Pod", "default/thirty-mb", 30, _body("thirty-mb", "z" * 30_000_000), "above the limit of"))
    write_bad_rows(path, rows, meta="garbage")
    for restart in range(2):
        d = daemon_factory(data_dir=data)
        (tmp_path / "nodes.yaml").write_text(nodes_yaml(2))
        d.cli("apply", "-f", str(tmp_path / "nodes.yaml"))
        with d.client() as c:
            c.apply([pod_manifest(f"new-{restart}-{i}", "100m") for i in range(5)])

        def bound() -> list[str] | None:
            with d.client() as c:
                pods, _ = c.list("Pod", "default")
            mine = [p for p in pods if p["metadata"]["name"].startswith(f"new-{restart}-")]
            return [p["metadata"]["name"] for p in pods] if all(p["spec"].get("nodeName") for p in mine) \
                and len(mine) == 5 else None

        names = poll(bound, "the new pods bound")
        assert {"good-0", "good-1", "good-2"} <= set(names) and "thirty-mb" not in names
        listed = json.loads(d.cli("get", "pods", "-o", "json").stdout)
        assert len(listed["items"]) == len(names)
        assert d.terminate() == 0
        assert d.proc is not None and d.proc.stderr is not None
        log = d.proc.stderr.read().decode()
        assert "Traceback" not in log
        for _, key, _, _, _ in rows:
            name = key if isinstance(key, str) else key.decode("utf-8", "replace")
            assert f"quarantined stored Pod {name}" in log, name
