"""The Store fills the fields the server owns, for every client alike: uid,
creationTimestamp (on the store's clock) and generation once, whatever the writer
set, no deletionTimestamp on create, generateName, and what a re-apply or an
update keeps (the system fields, status, a pod's server-set spec fields)."""
from __future__ import annotations

import asyncio
import random
import re
from contextlib import asynccontextmanager
from typing import AsyncIterator

from hypothesis import given, settings
from hypothesis import strategies as st

from actors.store import Store
from actors.store.fields import GENERATED_SUFFIX, NAME_ALPHABET, generated_suffix
from actors.store import StoreClient

UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
NEW_YEAR = 1767225600.0  # 2026-01-01T00:00:00Z


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def pod(name: str, **meta: object) -> dict:
    return {"kind": "Pod", "metadata": {"name": name, **meta},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}]}}


@asynccontextmanager
async def running(clock: Clock) -> AsyncIterator[StoreClient]:
    store = Store(clock=clock, rand=random.Random(3))
    await store.load()
    async with asyncio.TaskGroup() as tg:
        tg.create_task(store.run())
        try:
            yield StoreClient(store)
        finally:
            store.inbox.close()


async def test_a_created_object_gets_a_uuid_and_its_creation_time_from_the_store_clock() -> None:
    async with running(Clock(NEW_YEAR + 42.75)) as c:
        created = await c.create(pod("p"))
        node = (await c.apply([{"kind": "Node", "metadata": {"name": "n1"}}]))[0]
    assert UUID.match(created["metadata"]["uid"])
    assert created["metadata"]["creationTimestamp"] == "2026-01-01T00:00:42Z"
    assert UUID.match(node["metadata"]["uid"]) and node["metadata"]["uid"] != created["metadata"]["uid"]


CLIENT_SET = {"uid": "my-uid", "creationTimestamp": "2020-05-01T10:00:00Z", "generation": 7,
              "resourceVersion": "999", "deletionTimestamp": "2020-05-01T10:00:00Z", "deletionGracePeriodSeconds": 30}


async def test_on_create_the_server_sets_its_own_fields_whatever_the_writer_set() -> None:
    """rest.BeforeCreate and FillObjectMetaSystemFields: a new uid and creation time,
    generation 1, the store's resourceVersion, no deletionTimestamp (a pod created
    with one used to be taken for terminating and never scheduled)."""
    async with running(Clock(NEW_YEAR)) as c:
        created = await c.create(pod("p", **CLIENT_SET))
        applied = (await c.apply([pod("q", **CLIENT_SET)]))[0]
    for obj in (created, applied):
        meta = obj["metadata"]
        assert UUID.match(meta["uid"]) and meta["uid"] != "my-uid"
        assert meta["creationTimestamp"] == "2026-01-01T00:00:00Z"
        assert meta["generation"] == 1
        assert meta["resourceVersion"] != "999"
        assert "deletionTimestamp" not in meta and "deletionGracePeriodSeconds" not in meta


async def test_on_update_the_system_fields_are_the_stored_ones_and_generation_counts_spec_changes() -> None:
    clock = Clock(NEW_YEAR)
    async with running(clock) as c:
        first = await c.create(pod("p"))
        uid = first["metadata"]["uid"]
        clock.now += 60
        mine = {k: v for k, v in CLIENT_SET.items() if k != "resourceVersion"}  # that one is a precondition
        relabelled = await c.update(pod("p", labels={"x": "y"}, **{**mine, "uid": uid}))
        changed = pod("p", uid=uid, creationTimestamp="2020-05-01T10:00:00Z", generation=1)
        changed["spec"]["activeDeadlineSeconds"] = 30
        respecced = (await c.apply([changed]))[0]
        try:
            await c.update(pod("p", uid="someone-else"))
        except Exception as e:  # noqa: BLE001 - asserted below
            refused = e
    for obj, generation in ((relabelled, 1), (respecced, 2)):
        meta = obj["metadata"]
        assert meta["uid"] == uid and meta["creationTimestamp"] == first["metadata"]["creationTimestamp"]
        assert meta["generation"] == generation
        assert "deletionTimestamp" not in meta and "deletionGracePeriodSeconds" not in meta
    assert type(refused).__name__ == "Invalid" and refused.field == "metadata.uid"  # type: ignore[attr-defined]
    assert "field is immutable" in str(refused)


async def test_applying_the_same_manifest_twice_keeps_uid_creation_time_status_and_binding() -> None:
    clock = Clock(NEW_YEAR)
    async with running(clock) as c:
        first = (await c.apply([pod("web")]))[0]
        await c.bind("default", "web", "n1", first["metadata"]["uid"])
        clock.now += 3600
        again = (await c.apply([pod("web", labels={"v": "2"})]))[0]
        stored = await c.get("Pod", "default", "web")
    assert again["metadata"]["uid"] == first["metadata"]["uid"]
    assert again["metadata"]["creationTimestamp"] == first["metadata"]["creationTimestamp"] == "2026-01-01T00:00:00Z"
    assert again["metadata"]["labels"] == {"v": "2"}
    assert stored["spec"]["nodeName"] == "n1"
    assert stored["status"]["conditions"] == [{"type": "PodScheduled", "status": "True"}]


async def test_an_update_without_server_fields_keeps_them() -> None:
    clock = Clock(NEW_YEAR)
    async with running(clock) as c:
        first = await c.create(pod("p"))
        await c.bind("default", "p", "n2", first["metadata"]["uid"])
        clock.now += 60
        updated = await c.update(pod("p", labels={"x": "y"}))
    assert updated["metadata"]["uid"] == first["metadata"]["uid"]
    assert updated["metadata"]["creationTimestamp"] == first["metadata"]["creationTimestamp"]
    assert updated["spec"]["nodeName"] == "n2"
    assert updated["status"]["conditions"][0]["type"] == "PodScheduled"


async def test_a_replacement_that_sets_status_wins_and_one_that_repeats_the_node_name_is_no_change() -> None:
    async with running(Clock(NEW_YEAR)) as c:
        first = (await c.apply([pod("p")]))[0]
        await c.bind("default", "p", "n1", first["metadata"]["uid"])
        mine = pod("p")
        mine["spec"]["nodeName"] = "n1"
        mine["status"] = {"phase": "Succeeded"}
        again = (await c.apply([mine]))[0]
    assert again["spec"]["nodeName"] == "n1" and again["status"] == {"phase": "Succeeded"}


async def test_generate_name_gives_each_new_object_its_own_name_with_a_five_character_suffix() -> None:
    manifest = {"kind": "Pod", "metadata": {"generateName": "job-"},
                "spec": {"containers": [{"name": "c"}]}}
    async with running(Clock(NEW_YEAR)) as c:
        a = await c.create(manifest)
        b = (await c.apply([manifest]))[0]
        names, _ = await c.list("Pod")
    for obj in (a, b):
        name = obj["metadata"]["name"]
        assert name.startswith("job-") and len(name) == 9
        assert set(name[4:]) <= set(NAME_ALPHABET)
    assert a["metadata"]["name"] != b["metadata"]["name"] and len(names) == 2


def test_a_new_uid_is_a_random_version_4_uuid_in_its_canonical_string_form() -> None:
    import uuid

    from actors.store.fields import new_uid
    uids = [new_uid() for _ in range(600)]  # over more than two reads of the random source
    for s in uids:
        parsed = uuid.UUID(s)
        assert parsed.version == 4 and parsed.variant == uuid.RFC_4122 and str(parsed) == s
    assert len(set(uids)) == len(uids)


def test_a_forked_child_never_hands_out_a_uid_its_parent_made_ahead() -> None:
    import os

    from actors.store.fields import new_uid
    new_uid()  # the parent now holds uids made ahead
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its next uid, to the parent
        os.write(write, new_uid().encode())
        os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    childs = os.read(read, 64).decode()
    os.close(read)
    assert len(childs) == 36 and childs != new_uid()


@given(st.integers(min_value=0, max_value=2**64), st.integers(min_value=0, max_value=40))
@settings(max_examples=300, deadline=None)
def test_a_generated_suffix_is_the_five_choices_random_makes_from_the_same_state(seed: int, before: int) -> None:
    """generated_suffix draws with getrandbits as random.Random.choice does: the same
    characters from the same state, and the generator left in the same state after."""
    mine, theirs = random.Random(seed), random.Random(seed)
    for r in (mine, theirs):
        r.random() if before % 2 else r.getrandbits(before)  # any state, not only a fresh seed's
    for _ in range(3):
        want = "".join(theirs.choice(NAME_ALPHABET) for _ in range(GENERATED_SUFFIX))
        assert generated_suffix(mine) == want
        assert mine.getstate() == theirs.getstate()


def test_a_generated_suffix_from_a_random_subclass_is_its_own_choices() -> None:
    class Fixed(random.Random):
        def choice(self, seq):  # type: ignore[no-untyped-def, override]
            return seq[0]

    assert generated_suffix(Fixed(1)) == NAME_ALPHABET[0] * GENERATED_SUFFIX
    system = random.SystemRandom()
    assert len(generated_suffix(system)) == GENERATED_SUFFIX
    assert set(generated_suffix(system)) <= set(NAME_ALPHABET)
