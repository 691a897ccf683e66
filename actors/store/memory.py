"""The in-memory StoreBackend: nothing survives the process."""
from __future__ import annotations

import copy
from typing import Any, Sequence

from actors.store.backend import LoadedState, Write


class InMemoryBackend:
    """Keeps committed objects in a dict: durable for the life of the process.
    Shared between two stores in turn, it models a restart in tests."""

    # A commit costs no fsync: a store on it commits events at once instead of holding
    # them for the next write (actors/store/event_hold.py), which would only move their
    # work into the next write's turn.
    free_commits = True

    def __init__(self) -> None:
        self._objects: dict[tuple[str, str], dict[str, Any]] = {}
        self._rv = 0
        self.commits = 0  # batches committed, for group-commit tests
        self.fail_next: BaseException | None = None  # tests: make the next commit raise this

    async def load_all(self, max_object_bytes: int | None = None) -> LoadedState:
        return LoadedState(objects=[copy.deepcopy(o) for o in self._objects.values()], resource_version=self._rv)

    async def commit(self, writes: Sequence[Write]) -> None:
        if self.fail_next is not None:
            err, self.fail_next = self.fail_next, None
            raise err
        for w in writes:
            if w.raw is None:
                self._objects.pop((w.kind, w.key), None)
            else:
                self._objects[(w.kind, w.key)] = w.raw
            self._rv = max(self._rv, w.resource_version)
        self.commits += 1

    async def close(self) -> None:
        return None
