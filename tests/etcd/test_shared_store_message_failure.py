"""A bug in one message to the etcd store fails that message alone, as in the
SQLite store (one turn loop, actors/store/turns.py): its half-made changes are
undone, the other messages of its group are written in the group's transaction,
and nothing of the failed message reaches memory or etcd."""
from __future__ import annotations

import asyncio
from typing import Any

from actors.store import StoreError
from actors.store.etcd import EtcdBackend
from actors.store.shared import SharedStore
from tests.actors.store_helpers import pod, serving
from tests.etcd.test_shared_store import raw_get


class BuggySharedStore(SharedStore):
    """Raises a plain exception on the object named "boom", after the objects
    before it in the same apply were written in memory."""

    def _apply_one(self, index: int, raw: Any, batch: Any, *rest: Any) -> Any:
        if raw["metadata"]["name"] == "boom":
            raise RuntimeError("a bug")
        return super()._apply_one(index, raw, batch, *rest)


async def test_a_message_that_raises_mid_group_is_undone_and_the_rest_of_its_group_is_written(
        make_backend, etcd_settings) -> None:
    async with serving(BuggySharedStore(make_backend())) as (store, client):
        # Posted together, so the store takes them in one group.
        results = await asyncio.gather(client.create(pod("before")), client.apply([pod("first"), pod("boom")]),
                                       client.create(pod("other")), return_exceptions=True)
        before, failed, other = results
        assert isinstance(failed, StoreError) and failed.reason == "Internal" and "RuntimeError" in failed.message
        assert before["metadata"]["name"] == "before" and other["metadata"]["name"] == "other"
        assert store.peek("Pod", "default", "first") is None
        assert sorted(o.name for o in store.peek_all("Pod")) == ["before", "other"]
        after = await client.create(pod("after"))  # the store keeps serving
        assert after["metadata"]["name"] == "after"
    assert await raw_get(etcd_settings, f"{etcd_settings.prefix}/pods/default/first") is None
    async with serving(SharedStore(EtcdBackend(etcd_settings))) as (reloaded, _):
        assert sorted(o.name for o in reloaded.peek_all("Pod")) == ["after", "before", "other"]
