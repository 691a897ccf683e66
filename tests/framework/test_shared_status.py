"""The runtime's shared Success (and Bind's Skip): every door hands out one object, which
no caller can change (h26-algo3). The whole suite and the conformance cases run with
them: a caller that set an attribute or changed the reasons of one would raise there."""
import copy
import pickle

import pytest

from framework.interface import Code, CycleState, Status
from framework.runtime import run_unsuspended
from framework.runtime.common import _OK, _SKIPPED, shared_status
from tests.framework.test_runtime import make, ni, pod


class EveryPoint:
    """A plugin at every point of a cycle, succeeding at each (answering None, or its own
    fresh Success where a point allows it)."""

    name = "Every"

    def pre_enqueue(self, pod):
        return Status()

    def pre_filter(self, state, pod, nodes):
        return None, Status()

    def filter(self, state, pod, node_info):
        return None

    def pre_score(self, state, pod, nodes):
        return Status()

    def score(self, state, pod, node_info):
        return 5, None

    def score_extensions(self):
        return None

    def reserve(self, state, pod, node_name):
        return Status()

    def unreserve(self, state, pod, node_name):
        return None

    def permit(self, state, pod, node_name):
        return Status(), 0

    async def pre_bind(self, state, pod, node_name):
        return Status()


class SkipBind:
    name = "SkipBind"

    async def bind(self, state, pod, node_name):
        return Status(Code.Skip)


@pytest.mark.parametrize("shared, code", [(_OK, Code.Success), (_SKIPPED, Code.Skip)])
def test_a_shared_status_cannot_be_changed_and_equals_a_fresh_one(shared, code):
    assert shared == Status(code) and shared.code == code and shared.plugin == "" and shared.message() == ""
    assert shared.to_dict() == Status(code).to_dict() and repr(shared) == repr(Status(code))
    for name, value in (("code", Code.Error), ("reasons", ["x"]), ("plugin", "P"), ("error", ValueError())):
        with pytest.raises(AttributeError):
            setattr(shared, name, value)
    with pytest.raises(AttributeError):
        del shared.plugin
    for change in (lambda r: r.append("x"), lambda r: r.extend(["x"]), lambda r: r.insert(0, "x"),
                   lambda r: r.__setitem__(slice(0, 0), ["x"]), lambda r: r.__iadd__(["x"]), lambda r: r.clear(),
                   lambda r: r.pop()):
        with pytest.raises(TypeError):
            change(shared.reasons)
    assert shared.reasons == [] and shared == Status(code)
    assert copy.copy(shared) is shared and copy.deepcopy(shared) is shared
    assert pickle.loads(pickle.dumps(shared)) is shared and shared_status(code) is shared
    named = shared.with_plugin("P")  # a copy under the name: the shared one keeps none
    assert type(named) is Status and named.plugin == "P" and named.code == code and shared.plugin == ""


def test_every_door_that_succeeds_returns_the_one_shared_success():
    points = ("preEnqueue", "preFilter", "filter", "preScore", "score", "reserve", "permit", "preBind")
    fwk = make([EveryPoint()], {point: ["Every"] for point in points}, {"Every": 1})
    state, p = CycleState(), pod()
    assert fwk.run_pre_filter(state, p)[1] is _OK
    assert fwk.run_filter(state, p, ni()) is _OK
    assert fwk.run_pre_score(state, p, [ni()]) is _OK
    assert fwk.run_score(state, p, [ni()])[1] is _OK
    assert fwk.run_reserve(state, p, "n1") is _OK
    assert fwk.run_permit(state, p, "n1")[0] is _OK
    assert run_unsuspended(fwk.run_pre_bind(state, p, "n1")) is _OK
    assert fwk.run_pre_enqueue(p) is _OK


def test_a_bind_with_no_plugin_is_the_shared_skip_and_one_every_plugin_skips_is_the_last_skip():
    assert run_unsuspended(make([], {}).run_bind(CycleState(), pod(), "n1")) is _SKIPPED
    fwk = make([SkipBind()], {"bind": ["SkipBind"]})
    st = run_unsuspended(fwk.run_bind(CycleState(), pod(), "n1"))
    assert st.code == Code.Skip and st is not _SKIPPED
