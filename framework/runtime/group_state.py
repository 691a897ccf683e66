"""PreFilter and PreScore state made once per pod shape within one group cycle
(issue 29, h29-speed7). No I/O.

A gang's members are made from one template: they differ in their name and uid, and a
plugin whose PreFilter (or PreScore) reads nothing else of the pod computes the same
result, status and CycleState values for each of them. Such a plugin says so itself,
with a class attribute (STATE_FROM_SHAPE below); the group cycle's placer hands the
runtime a ShapeStateMemo for its members' tries, and the runtime's PreFilter and
PreScore loops (filtering.py, scoring.py) ask the memo instead of the plugin. The first
member of a shape runs the plugin, its answer and the values it wrote are kept, and the
members after it of the same shape get them without the call.

The shape of a pod is its signature (framework/failure_memo.py): everything of it but
its identity (scheduler name, namespace, labels, annotations, owner references and the
whole spec) and the plugin's own SignPurpose.PLACEMENT fragment (SignPlugin). Two pods
have one shape when those parts are equal as their repr()s, which tells 1, 1.0 and True
apart as the signature's JSON does (a different order of keys only makes two shapes of
one, never one of two).

What a plugin promises by declaring (the same promise its sign_pod makes, narrowed):
- its PreFilter (PreScore) answer and the values it writes read the pod only through
  its signature, and nothing that changes within one group cycle (the snapshot, which
  each member assumed changes, the nominated pods, the nodes handed in: PreScore's
  window is each member's own); the lister's objects do not change within one cycle;
- it writes only keys of its own, and nobody changes those values afterwards (Filter,
  Score and the extensions read them; the members share one object; CycleState.clone
  still clones them for preemption's dry runs).

The memo lives for one group cycle: the placer starts it afresh with each group and
sets it on the runtime only around its members' algorithm runs (never a single pod's
cycle, never explain's dry run)."""
from __future__ import annotations

import functools
from typing import Any, Callable, Hashable, Iterable

from framework.api.objects import Pod
from framework.interface import CycleState, SignPlugin, SignPurpose

# The declaration: a class attribute naming the extension points ("PreFilter",
# "PreScore") whose state the plugin makes from the pod's shape alone (see above), e.g.
# `state_from_shape = ("PreFilter", "PreScore")`. Read only through a ShapeStateMemo.
STATE_FROM_SHAPE = "state_from_shape"
# served_at's answer when no memo is set: nothing served.
NONE_SERVED: dict[str, Any] = {}


class _Recording(CycleState):
    """A CycleState writing into another's values and noting each key written."""

    __slots__ = ("written",)

    def __init__(self, into: CycleState) -> None:
        super().__init__()
        self._data = into._data  # noqa: SLF001 - one map: the writes land in the member's state
        self.skip_filter_plugins = into.skip_filter_plugins
        self.skip_score_plugins = into.skip_score_plugins
        self.written: list[str] = []

    def write(self, key: str, value: Any) -> None:
        self.written.append(key)
        super().write(key, value)


class ShapeStateMemo:
    """The PreFilter and PreScore answers of the declaring plugins among the given ones,
    by pod shape, for one group cycle. `counts`: calls made and served, per point."""

    def __init__(self, pre_filter_plugins: Iterable[Any] = (), pre_score_plugins: Iterable[Any] = ()) -> None:
        # (point, plugin name, pod shape, plugin fragment) -> (its answer, the values it wrote)
        self._kept: dict[tuple[str, str, Hashable, Hashable], tuple[Any, tuple[tuple[str, Any], ...]]] = {}
        self._shape: tuple[Pod, str] | None = None  # the last pod asked about and its shape
        self.counts = {"PreFilter": [0, 0], "PreScore": [0, 0]}
        self._served: dict[str, dict[str, Callable[[CycleState, Pod, list[Any]], Any]]] = {
            point: {pl.name: functools.partial(self._answer, point, getattr(pl, method), pl)
                    for pl in plugins if declares(pl, point)}
            for point, method, plugins in (("PreFilter", "pre_filter", pre_filter_plugins),
                                           ("PreScore", "pre_score", pre_score_plugins))}

    def begin_group(self) -> None:
        """Forget every kept answer: a new group cycle (the world may have moved)."""
        self._kept.clear()
        self._shape = None

    def served_at(self, point: str) -> dict[str, Callable[[CycleState, Pod, list[Any]], Any]]:
        """Plugin name -> what the runtime calls instead of the plugin's own method
        (state, pod, nodes) at `point` ("PreFilter", "PreScore"); declaring plugins only."""
        return self._served[point]

    def _answer(self, point: str, run: Callable[[CycleState, Pod, list[Any]], Any], pl: Any,
                state: CycleState, pod: Pod, nodes: list[Any]) -> Any:
        fragment = pl.sign_pod(pod, SignPurpose.PLACEMENT)
        if fragment is None:
            return run(state, pod, nodes)
        key = (point, pl.name, self._shape_of(pod), fragment)
        kept = self._kept.get(key)
        counts = self.counts[point]
        if kept is not None:
            counts[1] += 1
            for k, value in kept[1]:
                state.write(k, value)
            return kept[0]
        counts[0] += 1
        recording = _Recording(state)
        answer = run(recording, pod, nodes)
        self._kept[key] = (answer, tuple((k, state.get(k)) for k in recording.written))
        return answer

    def _shape_of(self, pod: Pod) -> str:
        got = self._shape
        if got is not None and got[0] is pod:
            return got[1]
        shape = repr(pod_shape_parts(pod))
        self._shape = (pod, shape)
        return shape


def declares(pl: Any, point: str) -> bool:
    """Whether the plugin declares its state at `point` made from the pod's shape (and
    signs pods, which the shape needs)."""
    return point in getattr(pl, STATE_FROM_SHAPE, ()) and isinstance(pl, SignPlugin)


def pod_shape_parts(pod: Pod) -> tuple[Any, ...]:
    """The parts of a pod its signature holds besides the plugins' fragments (failure_memo's
    plain parts, as objects rather than JSON)."""
    meta = pod.raw.get("metadata") or {}
    return (pod.scheduler_name, pod.namespace, meta.get("labels"), meta.get("annotations"),
            meta.get("ownerReferences"), pod.raw.get("spec"))


__all__ = ["NONE_SERVED", "STATE_FROM_SHAPE", "ShapeStateMemo", "declares", "pod_shape_parts"]
