"""The Store actor's durability interface.

The Store actor keeps every object in memory and is the only writer. A backend
only makes the store's writes durable and gives them back at start-up:

- `load_all()` once, before the store serves anything: every stored object (its
  JSON dict, metadata.resourceVersion set) and the highest resourceVersion ever
  committed (deletes included, so versions never go backwards after a restart).
- `commit(writes)` for one batch (group commit: everything the store took from its
  inbox in one turn). The store acknowledges none of the batch's requests before
  the returned awaitable completes; if it raises, none of them is acknowledged
  and the store's memory is rolled back to before the batch. A batch is applied
  all-or-nothing, in order; `resource_version` increases along the batch.
- `close()` at shutdown, after the last commit.

Calls never overlap: the store awaits one commit before it starts the next.
Backends: InMemoryBackend (actors/store/memory.py; tests and `ksched bench`) and
SQLiteBackend (actors/store/sqlite.py).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, Sequence


@dataclass(frozen=True, slots=True, kw_only=True)
class Write:
    """One change: `raw` is the object's full JSON dict after the change (with
    metadata.resourceVersion == resource_version), or None for a delete."""

    kind: str
    key: str  # "namespace/name", or "name" for cluster-scoped kinds
    raw: dict[str, Any] | None
    resource_version: int

    @property
    def is_delete(self) -> bool:
        return self.raw is None


@dataclass(slots=True, kw_only=True)
class LoadedState:
    """What a backend holds: every live object's JSON dict, and the last
    resourceVersion committed (0 for an empty store)."""

    objects: list[dict[str, Any]] = field(default_factory=list)
    resource_version: int = 0
    # Rows the store cannot use (not a JSON object, an unusable resourceVersion, not
    # UTF-8, above the object limit): (kind, key, why). The store quarantines them (a
    # log line and an event) rather than refuse to start.
    unreadable: list[tuple[str, str, str]] = field(default_factory=list)


class StoreBackend(Protocol):
    async def load_all(self, max_object_bytes: int | None = None) -> LoadedState:
        """Every stored object and the last committed resourceVersion; a backend that
        can hold objects above `max_object_bytes` (msgpack) reports them unreadable."""
        ...

    async def commit(self, writes: Sequence[Write]) -> None:
        """Make `writes` durable, all or nothing. Raises on failure."""
        ...

    async def close(self) -> None:
        """Release resources; called once after the last commit."""
        ...
