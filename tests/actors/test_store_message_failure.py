"""A bug in one store message (any exception but the store's own refusals) fails
that message alone: its half-made changes are undone, the other messages of the
same turn commit, and memory never holds what the backend does not."""
from __future__ import annotations

import asyncio
from typing import Any

import pytest

from actors.store import Store, StoreClient, StoreError
from actors.store.memory import InMemoryBackend

from tests.actors.store_helpers import pod


class BuggyStore(Store):
    """Raises a plain exception on the object named "boom", after the objects
    before it in the same apply were written."""

    def _apply_one(self, index: int, raw: Any, batch: Any, *rest: Any) -> Any:
        if raw["metadata"]["name"] == "boom":
            raise RuntimeError("a bug")
        return super()._apply_one(index, raw, batch, *rest)


async def test_a_failing_message_is_undone_and_the_rest_of_its_turn_commits() -> None:
    backend = InMemoryBackend()
    store = BuggyStore(backend)
    await store.load()
    client = StoreClient(store)
    async with asyncio.TaskGroup() as tg:
        tg.create_task(store.run())
        # Posted together, so the store takes them in one turn.
        results = await asyncio.gather(client.apply([pod("first"), pod("boom")]), client.create(pod("other")),
                                       return_exceptions=True)
        store.inbox.close()
    failed, created = results
    assert isinstance(failed, StoreError) and failed.reason == "Internal" and "RuntimeError" in failed.message
    assert created["metadata"]["name"] == "other"
    assert store.peek("Pod", "default", "first") is None
    assert store.peek("Pod", "default", "other") is not None

    reloaded = Store(backend)
    await reloaded.load()
    assert [o.name for o in reloaded.peek_all("Pod")] == [o.name for o in store.peek_all("Pod")] == ["other"]
    assert reloaded.resource_version == store.resource_version


@pytest.mark.parametrize("names", [["boom"], ["a", "b", "boom"]])
async def test_the_store_keeps_serving_after_a_failed_message(names: list[str]) -> None:
    store = BuggyStore(InMemoryBackend())
    await store.load()
    client = StoreClient(store)
    async with asyncio.TaskGroup() as tg:
        tg.create_task(store.run())
        with pytest.raises(StoreError):
            await client.apply([pod(n) for n in names])
        await client.create(pod("after"))
        store.inbox.close()
    assert [o.name for o in store.peek_all("Pod")] == ["after"]
