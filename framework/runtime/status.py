"""The Statuses the runner words for every extension point (private to framework.runtime):
Success (one shared object where no caller changes it, a new one where one may)
and the Error that names the plugin whose call failed; a rejection names it too."""
from __future__ import annotations

from framework.interface import Code, Status

_OK = Status()


def _ok() -> Status:
    return Status()


def _error(plugin: str, text: str) -> Status:
    return Status(Code.Error, text, plugin=plugin)


def _rejected_or_error(plugin: str, st: Status, context: str) -> Status:
    """A plugin's answer that is not Success, as its run returns it: a rejection names
    the plugin; any other code becomes an Error "`context`: its message"."""
    if st.is_rejected():
        st.plugin = plugin
        return st
    return _error(plugin, f"{context}: {st.message()}")
