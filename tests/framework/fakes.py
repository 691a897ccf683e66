"""Small recording plugins for framework tests."""
from __future__ import annotations

from framework.interface import Code, PreFilterResult, Status


class Recorder:
    def __init__(self) -> None:
        self.calls: list[str] = []


class FilterFake:
    def __init__(self, name, reject=(), code=Code.Unschedulable, reason="nope", rec=None):
        self.name = name
        self.reject = set(reject)
        self.code = code
        self.reason = reason
        self.rec = rec
        self.seen: list[str] = []

    def filter(self, state, pod, node_info):
        self.seen.append(node_info.name)
        if self.rec is not None:
            self.rec.calls.append(f"filter:{self.name}:{node_info.name}")
        if node_info.name in self.reject or "*" in self.reject:
            return Status(self.code, self.reason)
        return None


class PreFilterFake:
    def __init__(self, name, result=None, status=None):
        self.name = name
        self.result = result
        self.status = status

    def pre_filter(self, state, pod, nodes):
        return (PreFilterResult(set(self.result)) if self.result is not None else None), self.status

    def pre_filter_extensions(self):
        return None


class ScoreFake:
    def __init__(self, name, scores, normalize=None):
        self.name = name
        self.scores = scores
        self._normalize = normalize

    def score(self, state, pod, node_info):
        return self.scores.get(node_info.name, 0), None

    def score_extensions(self):
        return self if self._normalize else None

    def normalize_score(self, state, pod, scores):
        self._normalize(scores)
        return None


class ReserveFake:
    def __init__(self, name, rec, fail=False):
        self.name = name
        self.rec = rec
        self.fail = fail

    def reserve(self, state, pod, node_name):
        self.rec.calls.append(f"reserve:{self.name}")
        return Status(Code.Unschedulable, "no room") if self.fail else None

    def unreserve(self, state, pod, node_name):
        self.rec.calls.append(f"unreserve:{self.name}")


class BindFake:
    def __init__(self, name, skip=False, rec=None):
        self.name = name
        self.skip = skip
        self.rec = rec

    async def bind(self, state, pod, node_name):
        if self.rec is not None:
            self.rec.calls.append(f"bind:{self.name}")
        return Status(Code.Skip) if self.skip else None


class SortFake:
    name = "Sort"

    def less(self, a, b):
        return a.timestamp < b.timestamp
