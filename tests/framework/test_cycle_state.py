"""CycleState's read, get and write are its own map's methods, bound when the state
is made (no Python frame a call): each state (a clone too) reads and writes its own
map only, read raises KeyError for a key never written, get gives the default."""
from __future__ import annotations

import pytest

from framework.types import CycleState


class Data:
    def __init__(self, n: int) -> None:
        self.n = n

    def clone(self) -> "Data":
        return Data(self.n)


def test_read_get_write_and_delete_work_on_the_state_s_own_map() -> None:
    state = CycleState()
    with pytest.raises(KeyError):
        state.read("k")
    assert state.get("k") is None and state.get("k", 7) == 7
    state.write("k", 1)
    assert state.read("k") == 1 and state.get("k", 7) == 1
    state.delete("k")
    state.delete("k")  # absent: nothing
    assert state.get("k") is None
    assert CycleState().get("k") is None  # another state's map is its own


def test_a_clone_reads_and_writes_its_own_map() -> None:
    state = CycleState()
    state.write("data", Data(1))
    state.write("plain", "v")
    state.skip_filter_plugins.add("P")
    copy = state.clone()
    assert copy.read("data") is not state.read("data") and copy.read("data").n == 1
    assert copy.read("plain") == "v" and copy.skip_filter_plugins == {"P"}
    copy.write("plain", "w")
    copy.write("new", 1)
    copy.read("data").n = 2
    assert state.read("plain") == "v" and state.get("new") is None and state.read("data").n == 1
    state.write("later", 3)
    assert copy.get("later") is None
