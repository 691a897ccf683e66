"""Apply is all or nothing and ordered: each object sees the ones before it, so the
same object twice is created once, then unchanged or configured."""
from __future__ import annotations

import pytest

from actors.store import Invalid, WatchEvent

from tests.actors.store_helpers import pod, running


async def test_the_same_object_twice_in_one_apply_is_created_then_unchanged() -> None:
    async with running() as (store, c):
        items, actions = await c.apply_with_actions([pod("p"), pod("p")])
    assert actions == ["created", "unchanged"]
    assert items[0] == items[1] and store.resource_version == 1


async def test_a_changed_second_copy_configures_the_first() -> None:
    async with running() as (store, c):
        items, actions = await c.apply_with_actions([pod("p"), pod("p", labels={"app": "web"})])
    assert actions == ["created", "configured"]
    assert store.peek("Pod", "default", "p").labels == {"app": "web"}
    assert [i["metadata"]["resourceVersion"] for i in items] == ["1", "2"]


async def test_an_unchanged_object_is_not_written_or_watched_again() -> None:
    seen: list[WatchEvent] = []
    async with running() as (store, c):
        await c.apply([pod("p")])
        await c.watch(seen.append, from_rv=store.resource_version)
        _, actions = await c.apply_with_actions([pod("p")])
    assert actions == ["unchanged"] and seen == [] and store.resource_version == 1


async def test_a_refused_object_undoes_the_writes_before_it_in_the_same_apply() -> None:
    seen: list[WatchEvent] = []
    async with running() as (store, c):
        await c.apply([pod("keep")])
        await c.watch(seen.append, from_rv=store.resource_version)
        with pytest.raises(Invalid):
            await c.apply([pod("new"), pod("keep", labels={"v": "2"}), pod("keep", cpu="1.5.5")])
        items, rv = await c.list("Pod")
    assert [i["metadata"]["name"] for i in items] == ["keep"] and items[0]["metadata"]["labels"] == {}
    assert rv == 1 and seen == []
