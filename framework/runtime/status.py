"""The Statuses the runner words for every extension point (private to framework.runtime):
Success (one shared object where no caller changes it, a new one where one may)
and the Error that names the plugin whose call failed."""
from __future__ import annotations

from framework.interface import Code, Status

_OK = Status()


def _ok() -> Status:
    return Status()


def _error(plugin: str, text: str) -> Status:
    return Status(Code.Error, text, plugin=plugin)
