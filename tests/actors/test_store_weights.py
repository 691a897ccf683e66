"""What a write weighs (actors/store/weights.py, raw.encoded_size) is msgpack.packb(raw,
use_bin_type=True)'s length, exactly, on every path: the exact-types packer first, a
remembered spec's kept length, a pending pod's kept length and its binding's change.
A value the plain packer refuses is refused with the same error."""
from __future__ import annotations

import asyncio
import math

import msgpack
from hypothesis import HealthCheck, assume, given, settings, strategies as st

from actors.store import Store, weights
from actors.store.raw import encoded_size
from actors.store.pod_writes import PodWrites
from actors.store.weights import PodLengths, map_header, str_length, weight
from framework.api.objects import parse_object
from tests.actors.store_helpers import pod, serving


def packed(value):
    try:
        return "ok", len(msgpack.packb(value, use_bin_type=True))
    except Exception as e:  # noqa: BLE001 - the error itself is compared
        return type(e).__name__, str(e)


def outcome(f, *args):
    try:
        return "ok", f(*args)
    except Exception as e:  # noqa: BLE001
        return type(e).__name__, str(e)


class Odd(str):
    """A str subclass: the exact packer refuses it, the plain one packs it as a str."""


class OddDict(dict):
    pass


# Strings around each str header's bounds (fixstr 31, str8 255), non-ASCII, a lone surrogate.
texts = st.one_of(
    st.text(max_size=6),
    st.integers(0, 300).map(lambda n: "x" * n),
    st.sampled_from(["é", "日本", "\ud800", "a" * 31, "a" * 32, "é" * 16, "b" * 255, "b" * 256]),
)
atoms = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2 ** 70), max_value=2 ** 70),
    st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([0.0, -0.0, math.nan]),
    texts, st.builds(Odd, st.text(max_size=3)), st.binary(max_size=4),
)
keys = st.one_of(texts, st.sampled_from(["spec", "nodeName", "conditions"]))
odd_keys = st.one_of(keys, st.integers(-3, 3), st.booleans(), st.none(), st.builds(Odd, st.text(max_size=2)))
json_values = st.recursive(atoms, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(keys, inner, max_size=18),
    st.dictionaries(odd_keys, inner, max_size=3), st.tuples(inner, inner),
    st.dictionaries(keys, inner, max_size=3).map(OddDict)), max_leaves=24)
unencodable = st.sampled_from([{1, 2}, object(), frozenset(), 2 ** 64])


@settings(max_examples=300, deadline=None)
@given(st.one_of(json_values, st.lists(st.one_of(json_values, unencodable), max_size=3)))
def test_encoded_size_is_the_plain_packers_length_or_error(value):
    assert outcome(encoded_size, value) == packed(value)
    assert outcome(encoded_size, {"a": 1}) == ("ok", 4)  # nothing left behind by an error


def test_str_length_at_each_header_bound():
    for n in [*range(0, 40), *range(250, 262), *range(65530, 65540), 70_000]:
        for s in ("a" * n, "é" * (n // 2)):
            assert str_length(s) == len(msgpack.packb(s, use_bin_type=True)), n
    assert [map_header(n) for n in (0, 15, 16, 65535, 65536)] == [1, 1, 3, 3, 5]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(keys, json_values, max_size=18), st.dictionaries(keys, json_values, max_size=18),
       st.booleans())
def test_weight_of_an_object_with_a_remembered_spec(spec, rest, remembered):
    if remembered:
        weights.remember(spec)
    raw = {**rest, "spec": spec}
    assert outcome(weight, raw) == packed(raw)


names = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=4)
extra = st.dictionaries(st.text("xyz", min_size=1, max_size=20).map(lambda k: "x" + k), texts, max_size=17)
conditions = st.lists(st.fixed_dictionaries({"type": st.sampled_from(["PodScheduled", "Ready"]),
                                             "status": st.sampled_from(["True", "False"]),
                                             "message": texts}), max_size=3)


@st.composite
def pending_pods(draw):
    meta = {"name": "p", "namespace": "default", "uid": "u-1", **draw(extra)}
    rv = draw(st.one_of(st.none(), st.integers(0, 10 ** 12).map(str), st.just("\ud800"), st.just(7)))
    if rv is not None:
        meta["resourceVersion"] = rv
    spec = {"containers": [{"name": "c", "image": draw(texts)}], **draw(extra)}
    if draw(st.booleans()):
        spec["nodeName"] = ""
    status = dict(draw(extra))
    if draw(st.booleans()):
        status["conditions"] = draw(conditions)
    if draw(st.booleans()):
        status["nominatedNodeName"] = draw(names)
    raw = {"kind": "Pod", "metadata": meta, "spec": spec}
    if draw(st.booleans()) or status:
        raw["status"] = status
    return raw


def check_binding(raw, rv, node):
    """The stored pod's kept length is its packed length as stored, and its binding's
    (pod_writes.bind) the bound pod's packed length before its resourceVersion; True
    when the kept path was taken."""
    lengths = PodLengths()
    lengths.stamped(raw, "Pod", "default/p", rv, encoded_size(raw))
    if "default/p" in lengths._raws:
        assert lengths._lengths["default/p"] == encoded_size(raw)
    written = []

    def write(kind, key, new, batch, *, make, size=None):
        written.append((new, size))

    objects = {"Pod": {"default/p": parse_object(raw)}}
    PodWrites(objects, write, lengths).bind("default", "p", node, "", None)
    new, size = written[0]
    assert size is None or ("ok", size) == packed(new)
    return size is not None


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pending_pods(), st.integers(1, 10 ** 15), st.one_of(names, texts, st.builds(Odd, names)))
def test_a_binding_weighs_what_packing_it_says(raw, rv, node):
    assume(packed(raw)[0] == "ok")  # the store packs what it is given before it writes
    given = raw["metadata"].get("resourceVersion")
    usual = (type(raw.get("status")) is dict and "nodeName" not in raw["spec"] and type(node) is str
             and "\ud800" not in node and (given is None or (type(given) is str and "\ud800" not in given)))
    taken = check_binding(raw, rv, node)
    assert taken or not usual


def test_a_binding_at_each_map_header_bound():
    """A metadata map, a spec and a status of 15 and 16 items (fixmap to map16), with and
    without a resourceVersion before, conditions or a nomination."""
    def items(n, prefix):
        return {f"x{prefix}{i}": "v" for i in range(n)}
    for m in (11, 12, 13, 14, 15):
        for n in (13, 14, 15, 16):
            for rv in (None, "9" * 30, "1"):
                for status in ({}, items(14, "s"), items(15, "s"), {**items(15, "s"), "conditions": []},
                               {**items(14, "s"), "nominatedNodeName": "n"}):
                    meta = {"name": "p", "namespace": "default", "uid": "u", **items(m, "m")}
                    if rv is not None:
                        meta["resourceVersion"] = rv
                    raw = {"kind": "Pod", "metadata": meta, "spec": {"containers": [], **items(n, "c")},
                           "status": dict(status)}
                    assert check_binding(raw, 10 ** 12, "node-" + "x" * 30)


def test_a_binding_packs_nothing(monkeypatch):
    """Fails without the kept lengths: a binding of a pod the store created is weighed
    from the created pod's length, the remembered spec's, and the change."""
    async def run():
        async with serving(Store()) as (store, client):
            await client.create(pod("a"))
            await client.create(pod("b"))
            uid = store.peek("Pod", "default", "b").uid
            packed_now = []
            real = weights.encoded_size
            monkeypatch.setattr(weights, "encoded_size", lambda v: packed_now.append(v) or real(v))
            import actors.store.actor as actor
            monkeypatch.setattr(actor, "weight", lambda v: packed_now.append(v) or real(v))
            await client.bind("default", "b", "node-1", uid)
            assert packed_now == []
            bound = store.peek("Pod", "default", "b").raw
            assert store.history._sizes[-1] == len(msgpack.packb(
                {**bound, "metadata": {**bound["metadata"], "resourceVersion": "2"}}, use_bin_type=True))
    asyncio.run(run())


def test_every_weight_of_a_store_is_the_packed_length(monkeypatch):
    """A store's writes (creates of one template and of their own specs, failures and
    nominations, bindings with their Scheduled events, a pod deleted and made again, a
    binding refused) weigh what packing them says: the same weights as the store with
    every object packed."""
    async def run(fast):
        import actors.store.actor as actor
        if not fast:
            monkeypatch.setattr(actor, "weight", encoded_size)
            monkeypatch.setattr(PodLengths, "bound", lambda *a: None)
        async with serving(Store(clock=lambda: 1000.0)) as (store, client):
            for i in range(20):
                await client.create(pod(f"p{i}", labels={"i": "x" * i}, **({"hostname": "h" * i} if i % 3 else {})))
            for i in range(0, 20, 4):
                await client.update_pod_status("default", f"p{i}", condition={
                    "type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "0/1"})
            await client.update_pod_status("default", "p5", nominated_node_name="n" * 40)
            await client.delete("Pod", "default", "p6")
            await client.create(pod("p6", cpu="200m"))
            for i in range(20):
                uid = store.peek("Pod", "default", f"p{i}").uid
                await client.bind("default", f"p{i}", f"node-{'é' * i}", uid, scheduled_event=True)
            try:
                await client.bind("default", "p1", "node-x", "")
            except Exception:  # noqa: BLE001 - refused: already bound
                pass
            return list(store.history._sizes)
    fast = asyncio.run(run(True))
    assert fast == asyncio.run(run(False))
    assert len(fast) > 60



def test_a_pending_pod_deleted_is_not_kept():
    """Fails without PodLengths.drop: the kept raw of a pending pod outlived the pod,
    held until 65,536 pods filled the map. A pod created bound is not kept either."""
    async def run():
        async with serving(Store()) as (store, client):
            for name in ("a", "b"):
                await client.create(pod(name))
            assert set(store._lengths._raws) == {"default/a", "default/b"}
            await client.delete("Pod", "default", "a")
            assert set(store._lengths._raws) == set(store._lengths._lengths) == {"default/b"}
            await client.create(pod("a", nodeName="node-1"))
            assert set(store._lengths._raws) == {"default/b"}
            await client.bind("default", "b", "node-1", store.peek("Pod", "default", "b").uid)
            assert len(store._lengths) == 0
    asyncio.run(run())
