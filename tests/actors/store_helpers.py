"""A running Store for the store tests, and manifests to write into it."""
from __future__ import annotations

import asyncio
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, AsyncIterator, TypeVar

from actors.clock import FakeClock
from actors.store import Store
from actors.store.backend import StoreBackend
from actors.store.limits import StoreLimits
from actors.store import StoreClient
from actors.store.write_chain import STRICT, WriteRules

S = TypeVar("S", bound=Store)


def running(backend: StoreBackend | None = None, rules: WriteRules = STRICT, *,
            limits: StoreLimits | None = None,
            clock: FakeClock | None = None) -> AbstractAsyncContextManager[tuple[Store, StoreClient]]:
    """A loaded, running Store on `backend` (a new in-memory one by default); with
    `clock`, the store reads time and arms its timers on it."""
    if clock is None:
        return serving(Store(backend, rules=rules, limits=limits))
    return serving(Store(backend, rules=rules, limits=limits, clock=clock.now, timers=clock))


@asynccontextmanager
async def serving(store: S) -> AsyncIterator[tuple[S, StoreClient]]:
    """`store` loaded and running, with a client; its backend is closed at the end
    (a SQLite file is then free for the next store)."""
    await store.load()
    async with asyncio.TaskGroup() as tg:
        tg.create_task(store.run())
        try:
            yield store, StoreClient(store)
        finally:
            store.inbox.close()
    await store.close()


def pod(name: str, *, ns: str = "default", labels: dict[str, str] | None = None, cpu: str = "100m",
        **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}]}
    body.update(spec)
    return {"kind": "Pod", "metadata": {"name": name, "namespace": ns, "labels": labels or {}}, "spec": body}


def priority_class(name: str, value: int, *, default: bool = False, policy: str | None = None) -> dict[str, Any]:
    pc: dict[str, Any] = {"kind": "PriorityClass", "metadata": {"name": name}, "value": value, "globalDefault": default}
    if policy is not None:
        pc["preemptionPolicy"] = policy
    return pc
