"""A row's text (actors/store/row_text.py) is json.dumps(raw, separators=(",", ":"))'s, byte
for byte, whatever the object and whichever of its parts are remembered: the joined
text, the kept C encoder, a bound spec's extended text. A row json.dumps refuses is
refused with the same error, and the next row is not marked by it."""
from __future__ import annotations

import json
import math
import sqlite3

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from actors.store import row_text as rt
from actors.store.row_text import encode, extended, remember, row_text
from actors.store.sqlite import DB_FILE, SQLiteBackend
from tests.actors.store_helpers import pod, serving
from actors.store import Store


def dumps(value):
    return json.dumps(value, separators=(",", ":"))


def outcome(f, *args):
    try:
        return "ok", f(*args)
    except Exception as e:  # noqa: BLE001 - the error itself is compared
        return type(e).__name__, str(e)


class Odd(str):
    """A str subclass: json writes its text as a str's."""


# Short texts are enough: the encoder's work is per character, and the characters that
# take an escape (non-ASCII, U+2028, NUL, quote and backslash, a lone surrogate) are named
# beside them, so a longer string adds no case.
atoms = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2 ** 70), max_value=2 ** 70),
    st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([0.0, -0.0, 1e16, 1.5, math.nan]),
    st.text(max_size=8), st.sampled_from(["é", "\u2028", "\x00", '"\\', "日本", "\ud800"]),
    st.builds(Odd, st.text(max_size=3)),
)
keys = st.one_of(st.text(max_size=6), st.sampled_from(["nodeName", "spec", "containers", "é"]))
odd_keys = st.one_of(keys, st.integers(-3, 3), st.booleans(), st.none(), st.floats(allow_nan=False, width=16),
                     st.builds(Odd, st.text(max_size=2)), st.just((1, 2)))
json_values = st.recursive(atoms, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(keys, inner, max_size=4),
    st.dictionaries(odd_keys, inner, max_size=3), st.tuples(inner, inner)), max_leaves=20)
unencodable = st.sampled_from([{1, 2}, b"bytes", object(), frozenset()])


@pytest.fixture(autouse=True)
def fresh_registry():
    """Each test starts with nothing remembered and leaves nothing behind."""
    tables = (rt._TEXTS, rt._EXTENDED, rt._EXTENDED_TEXTS)
    saved = [dict(t) for t in tables]
    for t in tables:
        t.clear()
    yield
    for t, was in zip(tables, saved):
        t.clear()
        t.update(was)


@st.composite
def pods(draw):
    """A pod-like raw dict and which of its parts are remembered: the spec, some of the
    spec's values, a bound copy of the spec made by `extended`."""
    spec = draw(st.dictionaries(keys, json_values, max_size=5))
    if draw(st.booleans()):
        spec["containers"] = draw(st.lists(json_values, max_size=3))
    if draw(st.booleans()):
        spec[draw(odd_keys)] = draw(json_values)
    if draw(st.booleans()):
        spec["bad"] = draw(unencodable)
    for part in [spec, *spec.values()]:
        if draw(st.booleans()):
            remember(part)
    if draw(st.booleans()):
        spec = extended(spec, draw(st.sampled_from(["nodeName", "containers", ""])),
                        draw(st.one_of(st.text(max_size=5), st.builds(Odd, st.text(max_size=2)))))
    raw = draw(st.dictionaries(keys, json_values, max_size=4))
    for k in draw(st.permutations(["kind", "metadata", "spec", "status"]))[:draw(st.integers(1, 4))]:
        raw[k] = spec if k == "spec" else draw(json_values)
    if draw(st.booleans()):
        raw[draw(odd_keys)] = draw(st.one_of(json_values, unencodable))
    if draw(st.booleans()):
        raw["again"] = spec  # the spec twice: the same text both times
    return raw


@settings(max_examples=250, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(pods(), st.sampled_from(["Pod", "Node", "Event"]))
def test_a_rows_text_is_json_dumps_whatever_is_remembered(raw, kind):
    assert outcome(row_text, kind, raw) == outcome(dumps, raw)
    assert outcome(encode, raw) == outcome(dumps, raw)
    assert outcome(row_text, kind, raw) == outcome(dumps, raw)  # after an error too


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_the_kept_encoder_writes_any_value_as_json_dumps(value):
    assert outcome(encode, value) == outcome(dumps, value)


def test_a_refused_row_does_not_mark_the_next_one():
    """A circular row raises as json.dumps does; the containers it was in (left in the
    encoder's circular marks), once the loop is gone, are written as they are."""
    inner: list = [1]
    loop: list = []
    outer = {"spec": {"containers": inner}, "loop": loop}
    loop.append(outer)
    assert outcome(row_text, "Pod", outer) == outcome(dumps, outer)
    assert outcome(encode, outer) == ("ValueError", "Circular reference detected")
    loop.clear()
    ok = {"spec": outer["spec"], "list": inner, "loop": loop}
    assert row_text("Pod", ok) == encode(ok) == dumps(ok) == '{"spec":{"containers":[1]},"list":[1],"loop":[]}'
    assert encode(outer) == dumps(outer)


def test_a_remembered_spec_is_not_encoded_again(monkeypatch):
    spec = {"containers": [{"name": "c"}], "priority": 0}
    remember(spec)
    bound = extended(spec, "nodeName", "n1")
    raw = {"kind": "Pod", "metadata": {"name": "p"}, "spec": spec, "status": {}}
    encoded = []
    real = rt.encode
    monkeypatch.setattr(rt, "encode", lambda v: encoded.append(v) or real(v))
    assert row_text("Pod", raw) == dumps(raw)
    assert row_text("Pod", {**raw, "spec": bound}) == dumps({**raw, "spec": bound})
    assert not any(v is spec or v is bound or v is spec["containers"] for v in encoded)
    assert bound == {**spec, "nodeName": "n1"} and list(bound) == ["containers", "priority", "nodeName"]


def test_a_key_the_base_already_has_keeps_its_place_and_no_extended_text():
    spec = {"nodeName": "", "containers": []}
    remember(spec)
    bound = extended(spec, "nodeName", "n1")
    assert list(bound) == ["nodeName", "containers"] and id(bound) not in rt._EXTENDED
    assert row_text("Pod", {"spec": bound}) == dumps({"spec": bound})


def test_the_registry_is_bounded(monkeypatch):
    monkeypatch.setattr(rt, "MAX_TEXTS", 3)
    parts = [[i] for i in range(5)]
    for p in parts:
        remember(p)
    assert len(rt._TEXTS) <= 3 and all(kept[1] == dumps(kept[0]) for kept in rt._TEXTS.values())


async def test_the_sqlite_rows_of_created_bound_and_evented_pods_are_json_dumps_of_the_stored_objects(tmp_path):
    """Through the store: pods of one template (remembered spec and containers), bound
    (extended spec, Scheduled event), and one of their own; every row's body is
    json.dumps of the object the store holds."""
    store = Store(SQLiteBackend(tmp_path))
    async with serving(store) as (_, client):
        uids = {}
        for i in range(6):
            made = await client.create(pod(f"p{i}", labels={"app": "a"} if i % 2 else None,
                                           containers=[{"name": "c", "image": "registry/bücher:1"}]))
            uids[f"p{i}"] = made["metadata"]["uid"]
        uids["own"] = (await client.create(pod("own", cpu="250m", nodeName="")))["metadata"]["uid"]
        for i in range(5):
            await client.bind("default", f"p{i}", f"node-é{i}", uids[f"p{i}"], scheduled_event=True)
        await client.bind("default", "own", "node-9", uids["own"], scheduled_event=True)
        held = {(kind, key): obj.raw for kind, objs in store._objects.items() for key, obj in objs.items()}
    rows = sqlite3.connect(tmp_path / DB_FILE).execute("SELECT kind, key, body FROM objects").fetchall()
    assert {(k, key) for k, key, _ in rows} == set(held)
    assert sum(k == "Event" for k, _, _ in rows) == 6 and rt._EXTENDED
    for kind, key, body in rows:
        assert body == dumps(held[(kind, key)]), (kind, key)
