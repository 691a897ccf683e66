"""Events name pods by uid, which the store draws on create: to compare two runs,
every uid a message names is replaced by its pod's name."""
from __future__ import annotations

from typing import Any, Iterable


def remember_uids(uids: dict[str, str], applied: Iterable[dict[str, Any]]) -> None:
    """Keep uid -> name of the objects an apply returned (a pod may be gone later)."""
    for raw in applied:
        meta = raw.get("metadata") or {}
        if meta.get("uid"):
            uids[meta["uid"]] = meta.get("name", "")


def uids_as_names(uids: dict[str, str], message: str) -> str:
    for uid, name in uids.items():
        if uid in message:
            message = message.replace(uid, f"<uid of {name}>")
    return message
