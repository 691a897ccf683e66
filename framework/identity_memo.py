"""IdentityMemo: an answer kept for each of the last objects asked about, by object
identity. For objects never changed in place (a stored Pod, its containers' request
lists): the same object gets the same answer without it being worked out again. Each
object is held with its answer, so its id cannot be reused for another while kept."""
from __future__ import annotations

from typing import Callable, Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class IdentityMemo(Generic[K, V]):
    __slots__ = ("_size", "_by_id")

    def __init__(self, size: int) -> None:
        self._size = size
        self._by_id: dict[int, tuple[K, V]] = {}

    def of(self, obj: K, compute: Callable[[K], V]) -> V:
        """compute(obj), or the answer kept for this very object."""
        kept = self._by_id.get(id(obj))
        if kept is not None and kept[0] is obj:
            return kept[1]
        value = compute(obj)
        if len(self._by_id) >= self._size:
            del self._by_id[next(iter(self._by_id))]  # the oldest
        self._by_id[id(obj)] = (obj, value)
        return value
