"""List pages as Kubernetes pages them: `limit` and an opaque `continue` token.

A token carries the resourceVersion of the first page and the last key served;
every page of one list is read as of that resourceVersion (a consistent snapshot):
the store rebuilds the older state of the keys changed since from its watch
history. When that history has been compacted past the token's version, the list
is Expired and must start again, as kube-apiserver answers 410 for an old token.

Keys are "namespace/name" (or "name"), served in byte order, like etcd's keys.
"""
from __future__ import annotations

import base64
import bisect
import heapq
import json
from dataclasses import dataclass
from typing import Callable, Iterator, Mapping

from actors.store.messages import Invalid
from framework.api.objects import KubeObject


@dataclass(frozen=True, slots=True)
class Continue:
    resource_version: int
    start: str  # the first key of the next page


def encode_continue(rv: int, last_key: str) -> str:
    body = json.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": last_key + "\x00"}, separators=(",", ":"))
    return base64.urlsafe_b64encode(body.encode()).decode()


def decode_continue(token: str) -> Continue:
    try:
        body = json.loads(base64.urlsafe_b64decode(token.encode()))
        rv, start = body["rv"], body["start"]
        if not isinstance(rv, int) or isinstance(rv, bool) or rv < 0 or not isinstance(start, str):
            raise ValueError
    except (ValueError, KeyError, TypeError):
        raise Invalid("continue: continue key is not valid", "continue") from None
    return Continue(rv, start)


def page(keys: list[str], current: Mapping[str, KubeObject], older: Mapping[str, KubeObject | None], *,
         start: str, prefix: str, limit: int, keep: Callable[[KubeObject], bool],
         max_bytes: int = 0, size: Callable[[KubeObject], int] | None = None
         ) -> tuple[list[KubeObject], str | None]:
    """Up to `limit` (0: all) objects kept by `keep`, from key `start` on, among
    keys beginning with `prefix`, and, with `max_bytes`, no more than fit in it by
    `size` (at least one, whatever its size). `keys` are the current keys sorted;
    `older` holds, for keys changed since the snapshot, their state in it (None:
    absent). Returns the objects and the last key served when more keys follow, else None."""
    out: list[KubeObject] = []
    used, last = 0, ""
    it = _keys_from(keys, current, older, max(start, prefix))
    for key in it:
        if not key.startswith(prefix):
            return out, None
        obj = older[key] if key in older else current[key]
        if obj is None or not keep(obj):
            continue
        if max_bytes and size is not None:
            used += size(obj)
            if used > max_bytes and out:  # this one starts the next page
                return out, last
        out.append(obj)
        last = key
        if limit and len(out) == limit:
            for nxt in it:
                if not nxt.startswith(prefix):
                    return out, None
                if (older[nxt] if nxt in older else current[nxt]) is not None:
                    return out, key
            return out, None
    return out, None


def _keys_from(keys: list[str], current: Mapping[str, KubeObject], older: Mapping[str, KubeObject | None],
               start: str) -> Iterator[str]:
    """Current keys and keys that existed only in the snapshot, merged in order."""
    gone = sorted(k for k, v in older.items() if v is not None and k not in current and k >= start)
    lo = bisect.bisect_left(keys, start)
    return heapq.merge((keys[i] for i in range(lo, len(keys))), gone)
