"""Classes with one duty each, composed rather than mixed in (issue 27): every class
of framework/, actors/ and transport/, counted with the methods its own bases bring,
has at most 40 methods, and none mixes several of the project's classes in as
bases, so no behaviour depends on the order of bases.

Counted: functions, static and class methods and properties defined in the
project's classes of the MRO (a name overridden counts once); the methods of a
standard-library or third-party base (Exception, Sequence, yaml's parts) are not
the project's. Allowed several bases: exceptions, typing Protocols, and classes
whose bases all are or derive from a third-party library's classes (PyYAML builds a
loader only from its Reader, Scanner, Parser, Composer, Constructor and Resolver).
No class has a mixin for a base, even a single one: a project base named *Mixin, or
whose docstring or module docstring calls it a mixin."""
from __future__ import annotations

import abc
import importlib
import inspect
import pkgutil
import re
import typing

import pytest

PACKAGES = ("framework", "actors", "transport")
MAX_METHODS = 40
TRIVIAL_BASES = {object, typing.Generic, typing.Protocol, abc.ABC}


def _modules() -> list:
    mods = []
    for name in PACKAGES:
        pkg = importlib.import_module(name)
        mods.append(pkg)
        mods.extend(importlib.import_module(m.name) for m in pkgutil.walk_packages(pkg.__path__, name + "."))
    return mods


def _classes() -> list[type]:
    seen: dict[int, type] = {}
    for mod in _modules():
        for obj in vars(mod).values():
            if inspect.isclass(obj) and obj.__module__ == mod.__name__:
                seen.setdefault(id(obj), obj)
    return sorted(seen.values(), key=lambda c: (c.__module__, c.__qualname__))


def _own(cls: type) -> bool:
    return cls.__module__.split(".")[0] in PACKAGES


def _library_rooted(cls: type) -> bool:
    """A class of a library, or of ours built on one (its MRO holds a third-party class)."""
    return any(not _own(k) and k.__module__ not in ("builtins", "abc", "typing") for k in cls.__mro__)


def method_count(cls: type) -> int:
    names: set[str] = set()
    for k in cls.__mro__:
        if _own(k):
            names.update(n for n, v in vars(k).items()
                         if inspect.isfunction(v) or isinstance(v, (staticmethod, classmethod, property)))
    return len(names)


def mixed_bases(cls: type) -> list[type]:
    """The bases that count as mixed in: not trivial, and `cls` is not an exception, a
    Protocol, or made only of a library's parts."""
    if issubclass(cls, BaseException) or getattr(cls, "_is_protocol", False):
        return []
    bases = [b for b in cls.__bases__ if b not in TRIVIAL_BASES]
    if all(_library_rooted(b) for b in bases):
        return []
    return bases


_A_MIXIN = re.compile(r"\ba mixin\b", re.IGNORECASE)


def mixin_bases(cls: type) -> list[type]:
    """The project's bases of `cls` that are mixins by name or by their own words."""
    return [b for b in cls.__bases__ if _own(b) and (
        b.__name__.endswith("Mixin") or _A_MIXIN.search(b.__doc__ or "")
        or _A_MIXIN.search(inspect.getmodule(b).__doc__ or ""))]


CLASSES = _classes()


def test_every_class_of_framework_actors_and_transport_has_at_most_40_methods_with_its_bases() -> None:
    over = {f"{c.__module__}.{c.__qualname__}": n for c in CLASSES if (n := method_count(c)) > MAX_METHODS}
    assert over == {}


def test_no_class_mixes_in_more_than_one_base() -> None:
    mixed = {f"{c.__module__}.{c.__qualname__}": [b.__name__ for b in bases]
             for c in CLASSES if len(bases := mixed_bases(c)) > 1}
    assert mixed == {}


def test_the_framework_is_composed_of_its_parts_not_mixed_from_them() -> None:
    from framework.runtime import Framework
    from framework.runtime.binding import Binding
    from framework.runtime.columnar import ColumnarFiltering
    from framework.runtime.post_filter import PostFiltering
    from framework.runtime.scoring import Scoring

    assert Framework.__bases__ == (object,)
    parts = {"filtering": ColumnarFiltering, "post_filtering": PostFiltering, "scoring": Scoring, "binding": Binding}
    from framework.config import build_frameworks, load_config
    from framework.handle import FrameworkHandle

    fwk = next(iter(build_frameworks(load_config(None), FrameworkHandle()).values()))
    for attr, part in parts.items():
        assert type(getattr(fwk, attr)) is part
        assert not issubclass(Framework, part)


def test_no_class_has_a_mixin_for_a_base() -> None:
    with_mixins = {f"{c.__module__}.{c.__qualname__}": [b.__name__ for b in bases]
                   for c in CLASSES if (bases := mixin_bases(c))}
    assert with_mixins == {}


def test_the_scheduling_queue_holds_its_requeue_decisions_instead_of_inheriting_them() -> None:
    from actors.queue.requeue_hints import RequeueDecisions, Strategy
    from actors.queue.scheduling_queue import SchedulingQueue
    from framework.api.objects import Pod
    from framework.interface import ActionType, ClusterEvent, QueuedPodInfo
    from framework.plugins.queuesort.priority_sort import PrioritySort

    assert SchedulingQueue.__bases__ == (object,)
    q = SchedulingQueue(less=PrioritySort().less)
    assert type(q.requeue) is RequeueDecisions and not isinstance(q, RequeueDecisions)
    qpi = QueuedPodInfo(pod=Pod({"metadata": {"name": "p", "namespace": "default"}, "spec": {}}),
                        unschedulable_plugins={"NodeAffinity"})
    event = ClusterEvent("Node", ActionType.Add, "NodeAdd")
    # no hint registered for the rejector: the event cannot help the pod
    assert q.worth_requeuing(qpi, event, None, None) == Strategy.SKIP


@pytest.mark.parametrize("shape", ["many methods", "mixed bases", "a mixin by name", "a mixin by its words"])
def test_the_checks_catch_what_they_forbid(shape: str) -> None:
    if shape == "many methods":
        big = type("Big", (), {f"m{i}": (lambda self: None) for i in range(MAX_METHODS + 1)})
        big.__module__ = "framework.fake"
        assert method_count(big) == MAX_METHODS + 1
    elif shape == "mixed bases":
        one = type("One", (), {"a": lambda self: None})
        two = type("Two", (), {"b": lambda self: None})
        for c in (one, two):
            c.__module__ = "actors.fake"
        both = type("Both", (one, two), {})
        both.__module__ = "actors.fake"
        assert mixed_bases(both) == [one, two]
    else:
        named = shape == "a mixin by name"
        base = type("DecisionsMixin" if named else "Decisions", (),
                    {"__doc__": "Decisions." if named else "Decisions, a mixin of the queue."})
        base.__module__ = "actors.queue.requeue_hints"
        queue = type("Queue", (base,), {})
        assert mixed_bases(queue) == [base] and mixin_bases(queue) == [base]
