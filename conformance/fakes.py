"""Test plugins the scenario cases enable (upstream's testing fakes), built from the
case's `fakePlugins` descriptions. Only the conformance runner registers these."""
from __future__ import annotations

import re
from typing import Any, Callable

from framework.interface import Code, CycleState, NodeScore, PreFilterResult, Status
from framework.plugins import Registry


class _Fake:
    name = ""

    def __init__(self, name: str) -> None:
        self.name = name


class TrueFilter(_Fake):
    def filter(self, state: CycleState, pod: Any, node_info: Any) -> Status | None:
        return None


class FalseFilter(_Fake):
    def filter(self, state: CycleState, pod: Any, node_info: Any) -> Status | None:
        return Status(Code.Unschedulable, "Nodes failed the fake plugin")


class MatchFilter(_Fake):
    def filter(self, state: CycleState, pod: Any, node_info: Any) -> Status | None:
        return None if node_info.name == pod.name else Status(Code.Unschedulable, "Nodes failed the fake plugin")


class NoPodsFilter(_Fake):
    def filter(self, state: CycleState, pod: Any, node_info: Any) -> Status | None:
        return None if not node_info.pods else Status(Code.Unschedulable, "Nodes failed the fake plugin")


class _Score(_Fake):
    fn: Callable[[str], int] = staticmethod(lambda name: 1)
    normalize: Callable[[list[NodeScore]], None] | None = None

    def score(self, state: CycleState, pod: Any, node_info: Any) -> tuple[int, Status | None]:
        return type(self).fn(node_info.name), None

    def score_extensions(self) -> Any:
        return self if type(self).normalize is not None else None

    def normalize_score(self, state: CycleState, pod: Any, scores: list[NodeScore]) -> Status | None:
        type(self).normalize(scores)
        return None


class NumericMap(_Score):
    fn = staticmethod(lambda name: int(name))


def _reverse(scores: list[NodeScore]) -> None:
    top = max((s.score for s in scores), default=0)
    for s in scores:
        s.score = top - s.score


class ReverseNumericMap(_Score):
    fn = staticmethod(lambda name: int(name))
    normalize = staticmethod(_reverse)


class TrueMap(_Score):
    normalize = staticmethod(lambda scores: None)


class EqualPrioritizerPlugin(_Score):
    def pre_score(self, state: CycleState, pod: Any, nodes: Any) -> Status | None:
        return None


class Node2Prioritizer(_Score):
    """upstream's tf.NewNode2PrioritizerPlugin: node2 scores 100, every other node 10."""

    fn = staticmethod(lambda name: 100 if name == "node2" else 10)


class FalseMap(_Fake):
    def score(self, state: CycleState, pod: Any, node_info: Any) -> tuple[int, Status | None]:
        return 0, Status(Code.Error, "priority map encounters an error")


class FakeFilter(_Fake):
    """Returns a configured code on listed nodes, Success elsewhere."""

    def __init__(self, name: str, codes: dict[str, Code]) -> None:
        super().__init__(name)
        self.codes = codes

    def filter(self, state: CycleState, pod: Any, node_info: Any) -> Status | None:
        code = self.codes.get(node_info.name)
        if code is None:
            return None
        return Status(code, f"injecting failure for pod {pod.name}")


class FakePreFilter(_Fake):
    def __init__(self, name: str, nodes: set[str] | None, status: Status | None) -> None:
        super().__init__(name)
        self.nodes = nodes
        self.status = status

    def pre_filter(self, state: CycleState, pod: Any, nodes: Any) -> tuple[PreFilterResult | None, Status | None]:
        result = PreFilterResult(set(self.nodes)) if self.nodes is not None else None
        st = Status(self.status.code, *self.status.reasons) if self.status is not None else None
        return result, st

    def pre_filter_extensions(self) -> Any:
        return None


class ErrorOnLabelledNodes(_Fake):
    """PreFilter with AddPod/RemovePod failing on nodes labelled error=true."""

    def pre_filter(self, state: CycleState, pod: Any, nodes: Any) -> tuple[None, None]:
        return None, None

    def filter(self, state: CycleState, pod: Any, node_info: Any) -> None:
        return None

    def pre_filter_extensions(self) -> Any:
        return self

    def add_pod(self, state: CycleState, pod: Any, pod_info: Any, node_info: Any) -> Status | None:
        if node_info.node is not None and node_info.node.labels.get("error") == "true":
            return Status(Code.Error, f"failed to add pod: {pod.name}")
        return None

    def remove_pod(self, state: CycleState, pod: Any, pod_info: Any, node_info: Any) -> Status | None:
        if node_info.node is not None and node_info.node.labels.get("error") == "true":
            return Status(Code.Error, f"failed to remove pod: {pod.name}")
        return None


_SIMPLE: dict[str, type[_Fake]] = {
    "TrueFilter": TrueFilter,
    "FalseFilter": FalseFilter,
    "MatchFilter": MatchFilter,
    "NoPodsFilter": NoPodsFilter,
    "NumericMap": NumericMap,
    "ReverseNumericMap": ReverseNumericMap,
    "TrueMap": TrueMap,
    "FalseMap": FalseMap,
    "EqualPrioritizerPlugin": EqualPrioritizerPlugin,
    "Node2Prioritizer": Node2Prioritizer,
    "test-plugin": ErrorOnLabelledNodes,
}

_FAKE_FILTER = re.compile(r"\(([^)]*)\)")
_PRE_FILTER = re.compile(r"(\w+) -> \((nil|NodeNames=\{([^}]*)\}), (nil|(\w+) \"([^\"]*)\")\)")


def _fake_filter_codes(description: str) -> dict[str, Code]:
    m = _FAKE_FILTER.search(description)
    codes: dict[str, Code] = {}
    if m:
        for part in m.group(1).split(","):
            node, _, code = part.partition(":")
            codes[node.strip()] = Code[code.strip()]
    return codes


def _pre_filters(description: str) -> list[FakePreFilter]:
    out = []
    for name, result, nodes, _status, code, msg in _PRE_FILTER.findall(description):
        node_set = {n.strip() for n in nodes.split(",") if n.strip()} if result != "nil" else None
        status = Status(Code[code], msg) if code else None
        out.append(FakePreFilter(name, node_set, status))
    return out


def fake_registry(fake_plugins: dict[str, str]) -> Registry:
    """Factories for the fakes a case names, configured from its descriptions."""
    reg = Registry()
    for key, description in fake_plugins.items():
        if key in _SIMPLE:
            cls = _SIMPLE[key]
            reg.register(key, lambda args, handle, cls=cls, key=key: cls(key))
        elif key == "FakeFilter":
            codes = _fake_filter_codes(description)
            reg.register(key, lambda args, handle, codes=codes: FakeFilter("FakeFilter", codes))
        elif key == "FakePreFilter*":
            for fake in _pre_filters(description):
                reg.register(fake.name, lambda args, handle, fake=fake: fake)
        else:
            raise ValueError(f"fake plugin {key!r} is not known to the runner")
    return reg
