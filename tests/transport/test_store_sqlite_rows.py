"""The SQLite backend's batch statements (h26-store20): a batch of up to ROWS_MAX keys is
bound a row at a time into one multi-row INSERT of one of a few sizes, its last row
repeated to fill it, and stores exactly what the JSON-array statement stores."""
from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings, strategies as st

import actors.store.sqlite as sqlite_backend
from actors.store.backend import Write
from actors.store.sqlite import ROWS_MAX, ROWS_SIZES, SQLiteBackend

from tests.transport.sqlite_files import objects_and_meta


def pod(name: str, rv: int, node_name: str) -> dict:
    return {"kind": "Pod", "metadata": {"name": name, "namespace": "default", "resourceVersion": str(rv)},
            "spec": {"nodeName": node_name, "containers": [{"name": "c"}]}}


def batches_of(plan: list[list[tuple[int, bool, str]]]) -> list[list[Write]]:
    """Writes from (key number, deleted, node name) triples, versions in order."""
    out, rv = [], 0
    for planned in plan:
        batch = []
        for number, deleted, node_name in planned:
            rv += 1
            name = f"p{number}"
            batch.append(Write(kind="Pod", key=f"default/{name}", raw=None if deleted else pod(name, rv, node_name),
                               resource_version=rv))
        out.append(batch)
    return out


async def stored(path: Path, batches: list[list[Write]]) -> tuple[list[tuple], int | None, list[str]]:
    """The objects table, the meta row and the statements SQLite ran for the batches."""
    b = SQLiteBackend(path)
    await b.load_all()
    statements: list[str] = []
    await b._run(lambda: b._conn.set_trace_callback(statements.append))
    for batch in batches:
        await b.commit(batch)
    await b.close()
    rows, top = objects_and_meta(path)
    return rows, top, statements


def both_ways(batches: list[list[Write]]) -> tuple[tuple, tuple]:
    with tempfile.TemporaryDirectory() as d:
        by_row = asyncio.run(stored(Path(d) / "rows", batches))
        saved = sqlite_backend.ROWS_MAX
        sqlite_backend.ROWS_MAX = 0  # every batch as JSON arrays
        try:
            by_array = asyncio.run(stored(Path(d) / "arrays", batches))
        finally:
            sqlite_backend.ROWS_MAX = saved
    return by_row, by_array


_write = st.tuples(st.integers(0, 300), st.booleans(), st.sampled_from(["", "n1", "n\u00e9 \"2\""]))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.lists(st.lists(_write, min_size=1, max_size=320), min_size=1, max_size=4))
def test_batches_of_any_size_store_the_same_rows_and_version_as_the_json_array_statement(plan):
    batches = batches_of(plan)
    (rows, top, _), (array_rows, array_top, _) = both_ways(batches)
    assert rows == array_rows and top == array_top


def test_a_batch_of_forty_keys_is_one_row_statement_and_every_size_takes_one_of_a_few_statements():
    # Batches of 17 keys and more went as JSON arrays, their bodies escaped again inside
    # the array and parsed back by SQLite's json_each and json_extract (SchedulingBasic's
    # commits hold ~30-150 keys).
    plan = [[(i, i % 7 == 3, "n1") for i in range(40)]]
    (rows, top, statements), (array_rows, array_top, _) = both_ways(batches_of(plan))
    assert rows == array_rows and top == array_top and len(rows) == 40 - 6
    writes = sorted({s for s in statements if s.startswith("INSERT INTO batch")})  # (its trigger's traced as it)
    assert len(writes) == 1 and writes[0].startswith("INSERT INTO batch_rows (")
    assert writes[0].count("('Pod', ") == 40  # the next size: 40 rows, none repeated

    sizes = {sqlite_backend._Batch.of(batches_of([[(i, False, "") for i in range(n)]])[0]).sql
             for n in range(1, ROWS_MAX + 1)}
    assert len(sizes) == len(ROWS_SIZES) <= 40  # a few statements prepared, not one for every size
    big = sqlite_backend._Batch.of(batches_of([[(i, False, "") for i in range(ROWS_MAX + 1)]])[0])
    assert big.sql == sqlite_backend._WRITE_BATCH


def test_a_batch_between_two_sizes_repeats_its_last_row_to_fill_the_larger():
    batch = batches_of([[(i, i == 16, "") for i in range(17)]])[0]
    made = sqlite_backend._Batch.of(batch)
    assert made.sql.count("(?, ?, ?, ?)") == 24
    rows = [made.params[i:i + 4] for i in range(0, len(made.params), 4)]
    assert rows[16:] == [("Pod", "default/p16", 17, None)] * 8  # the last write (a delete) seven times again
    assert [r[1] for r in rows[:16]] == [f"default/p{i}" for i in range(16)]
