"""The Store's committed reads: what any task on the event loop may read at once,
never waiting behind a batch's fsync (while a batch commits, the keys it changed
read as they were before it). CommittedReads is one of the Store actor's duties,
over the store's objects and the batch in commit (it changes nothing).

Code outside the store (transport's service, the Kubernetes API) reads through
the StoreReader the store hands out (`Store.reader()`): its published read-only
interface, never the store's fields."""
from __future__ import annotations

from typing import Any, Mapping, Protocol

from actors.store.history import WatchHistory
from actors.store.messages import Invalid, NotFound
from actors.store.paging import decode_continue, encode_continue, page
from actors.store.raw import encoded_size
from actors.store.select import Selectors
from framework.api.errors import ValidationError
from framework.api.objects import KINDS, KubeObject


def key_of(kind: str, namespace: str, name: str) -> str:
    """The store's key: `name` for a cluster-scoped kind, else `namespace/name`."""
    cls = KINDS.get(kind)
    if cls is not None and not cls.namespaced:
        return name
    return f"{namespace or 'default'}/{name}"


class StoreReader:
    """The Store's read-only interface for others: committed objects, counts, the
    resource version, the commit count and the kept events. Every method reads;
    none changes anything, and none waits for a commit. It is handed the store's
    committed reads (its one collaborator), not the Store."""

    __slots__ = ("_reads",)

    def __init__(self, reads: "CommittedReads") -> None:
        self._reads = reads

    def read(self, kind: str, namespace: str, name: str) -> KubeObject:
        """The object as last committed; NotFound if there is none."""
        return self._reads.read(kind, namespace, name)

    def read_list(self, kind: str, namespace: str = "", label_selector: str | Mapping[str, Any] | None = None,
                  field_selector: str | None = None, *, limit: int = 0, continue_token: str = "",
                  max_bytes: int = 0) -> tuple[list[KubeObject], int, str]:
        """A page of committed objects in key order (CommittedReads.read_list)."""
        return self._reads.read_list(kind, namespace, label_selector, field_selector, limit=limit,
                                     continue_token=continue_token, max_bytes=max_bytes)

    def peek(self, kind: str, namespace: str, name: str) -> KubeObject | None:
        """The object as the store holds it now, or None."""
        return self._reads.peek(kind, namespace, name)

    def count(self, kind: str) -> int:
        """How many objects of `kind` the store holds."""
        return self._reads.count(kind)

    @property
    def resource_version(self) -> int:
        return self._reads.resource_version

    @property
    def commits(self) -> int:
        return self._reads.commits


class _CommitState(Protocol):
    """What of the store's state moves as it commits (actors/store/actor.py; the commit
    duties set it): the batch in commit, the versions, the commit count."""

    _committing: dict[tuple[str, str], KubeObject | None] | None
    _committed_rv: int
    _rv: int
    commits: int


class CommittedReads:
    """Handed the store's objects, watch history and sorted-key cache (held, never
    replaced) and the commit state it must see as it moves."""

    def __init__(self, objects: dict[str, dict[str, KubeObject]], history: WatchHistory,
                 sorted_keys: dict[str, list[str]], state: _CommitState) -> None:
        self._objects = objects
        self._history = history
        self._sorted_keys = sorted_keys
        self._s = state

    # --- what the store holds now (StoreReader's peek, count, versions) --------------------

    def peek(self, kind: str, namespace: str, name: str) -> KubeObject | None:
        """The object as the store holds it now, or None."""
        return self._objects.get(kind, {}).get(key_of(kind, namespace, name))

    def count(self, kind: str) -> int:
        """How many objects of `kind` the store holds."""
        return len(self._objects.get(kind, {}))

    @property
    def resource_version(self) -> int:
        return self._s._rv

    @property
    def commits(self) -> int:
        return self._s.commits

    # --- committed reads (any task on the event loop; never wait for a commit) -----------

    def read(self, kind: str, namespace: str, name: str) -> KubeObject:
        """The object as last committed; NotFound if there is none."""
        key = key_of(kind, namespace, name)
        committing = self._s._committing
        if committing is not None and (kind, key) in committing:
            obj = committing[(kind, key)]
        else:
            obj = self._objects.get(kind, {}).get(key)
        if obj is None:
            raise NotFound(f'{kind} "{key}" not found')
        return obj

    def read_list(self, kind: str, namespace: str = "", label_selector: str | Mapping[str, Any] | None = None,
                  field_selector: str | None = None, *, limit: int = 0, continue_token: str = "",
                  max_bytes: int = 0) -> tuple[list[KubeObject], int, str]:
        """A page of committed objects in key order: (objects, resourceVersion, continue).
        Every page of one list is read as of the first page's resourceVersion; a
        token older than the kept history raises Gone (Expired). With `max_bytes`
        the page also ends before its objects' encodings pass it (one object at least)."""
        sel = self._selectors(kind, label_selector, field_selector)
        rv, start = self._s._committed_rv, ""
        if continue_token:
            token = decode_continue(continue_token)
            self._history.check(token.resource_version, "continue token")
            if token.resource_version > rv:
                raise Invalid("continue: continue key is not valid (from the future)", "continue")
            rv, start = token.resource_version, token.start
        objs, last = page(self._keys(kind), self._objects[kind], self._older(kind, rv),
                          start=start, prefix=self._prefix(kind, namespace), limit=limit, keep=sel.matches,
                          max_bytes=max_bytes, size=lambda o: encoded_size(o.raw))
        return objs, rv, encode_continue(rv, last) if last is not None else ""

    def _keys(self, kind: str) -> list[str]:
        keys = self._sorted_keys.get(kind)
        if keys is None:
            keys = self._sorted_keys[kind] = sorted(self._objects[kind])
        return keys

    @staticmethod
    def _prefix(kind: str, namespace: str) -> str:
        cls = KINDS.get(kind)
        return f"{namespace}/" if namespace and (cls is None or cls.namespaced) else ""

    def _older(self, kind: str, rv: int) -> dict[str, KubeObject | None]:
        """For the keys of `kind` changed after `rv`, their state at `rv` (None: absent)."""
        older: dict[str, KubeObject | None] = {}
        for past in self._history.since(rv):
            if past.kind == kind and past.key not in older:
                older[past.key] = past.old()
        for (k, key), old in (self._s._committing or {}).items():
            if k == kind:
                older.setdefault(key, old)
        return older

    def list_now(self, kind: str, namespace: str, label_selector: str | Mapping[str, Any] | None,
                 field_selector: str | None) -> list[dict[str, Any]]:
        """Every object of `kind` as the owner sees it now (the store's ListObjects)."""
        sel = self._selectors(kind, label_selector, field_selector)
        return [o.raw for o in self._objects[kind].values()
                if (not namespace or o.namespace == namespace) and sel.matches(o)]

    def _selectors(self, kind: str, label_selector: str | Mapping[str, Any] | None,
                   field_selector: str | None) -> Selectors:
        """The selectors of a list of `kind`; Invalid for an unknown kind or a bad selector."""
        if kind not in self._objects:
            raise Invalid(f"unsupported kind {kind!r}", "kind")
        try:
            return Selectors(label_selector, field_selector, kind)
        except ValidationError as e:
            raise Invalid(str(e), e.field) from None
