"""The values plugins and the runtime hand each other (upstream's Status and Code in
interface.go, CycleState in cycle_state.go, the results and QueuedPodInfo in types.go).
Plugin authors import them from framework.interface, the plugin contract."""
from __future__ import annotations

import enum
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable, Sequence

if TYPE_CHECKING:
    from framework.api.objects import Pod
    from framework.cache import NodeInfo


class Code(enum.IntEnum):
    """Upstream's status codes, same order and meaning."""

    Success = 0
    Error = 1
    Unschedulable = 2
    UnschedulableAndUnresolvable = 3
    Wait = 4
    Skip = 5
    Pending = 6


_new_status = object.__new__

# The codes the hot paths compare with, as module names: reading a member off an Enum
# class (`Code.Success`) costs about 0.2 µs in this Python, a module name a tenth of it.
_SUCCESS, _SKIP, _WAIT, _UNRESOLVABLE = Code.Success, Code.Skip, Code.Wait, Code.UnschedulableAndUnresolvable
_REJECTED = (Code.Unschedulable, Code.UnschedulableAndUnresolvable, Code.Pending)


class Status:
    """Result of a plugin call. `plugin` names the plugin that failed (upstream's
    FailedPlugin): the runtime returns the status under that name with `with_plugin`,
    which copies one a plugin returned under another name (or none) rather than change
    it, since plugins may share one Status between calls. Built-in plugins name their
    own statuses, so the runtime passes them on as they are."""

    __slots__ = ("code", "reasons", "plugin", "error")

    def __init__(self, code: Code = Code.Success, *reasons: str, plugin: str = "", error: BaseException | None = None) -> None:
        self.code = code
        self.reasons = list(reasons)
        self.plugin = plugin
        self.error = error

    @classmethod
    def error_of(cls, err: BaseException | str, plugin: str = "") -> "Status":
        return cls(Code.Error, str(err), plugin=plugin, error=err if isinstance(err, BaseException) else None)

    def is_success(self) -> bool:
        return self.code == _SUCCESS

    def is_skip(self) -> bool:
        return self.code == _SKIP

    def is_wait(self) -> bool:
        return self.code == _WAIT

    def is_rejected(self) -> bool:
        """Unschedulable, UnschedulableAndUnresolvable or Pending."""
        return self.code in _REJECTED

    def message(self) -> str:
        return ", ".join(self.reasons)

    def with_plugin(self, name: str) -> "Status":
        """This status under `name`: itself when it already has that name, else a copy."""
        if self.plugin == name:
            return self
        named = _new_status(Status)  # no __init__: the reasons list is shared, never changed
        named.code, named.reasons, named.plugin, named.error = self.code, self.reasons, name, self.error
        return named

    def as_error(self) -> str:
        return self.message()

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"code": self.code.name}
        if self.reasons:
            d["reasons"] = list(self.reasons)
        return d

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Status) and self.code == other.code and self.reasons == other.reasons

    def __repr__(self) -> str:
        return f"Status({self.code.name}, {self.reasons!r}{', plugin=' + self.plugin if self.plugin else ''})"


# The Skip a plugin answers when it has nothing to do for a pod: one object for all of
# them (the runtime only reads it; with_plugin copies rather than changes a Status).
SKIP = Status(Code.Skip)


def is_success(status: Status | None) -> bool:
    return status is None or status.code == _SUCCESS


# Framework constants (upstream values).
MAX_NODE_SCORE = 100
MIN_NODE_SCORE = 0
MAX_TOTAL_SCORE = (1 << 63) - 1
MAX_PERMIT_TIMEOUT_SECONDS = 15 * 60


class CycleState:
    """Per-pod scratch data shared by the plugins of one scheduling attempt.

    Plugins store values under their own keys. `clone()` copies the map and calls
    `clone()` on every value that has one (upstream's StateData.Clone), so
    preemption's dry runs can change state without touching the original.
    """

    __slots__ = ("_data", "skip_filter_plugins", "skip_score_plugins", "record_plugin_metrics", "read", "get", "write")

    # read(key): the value under `key`, KeyError when absent (upstream's ErrNotFound);
    # get(key, default=None); write(key, value). Each is the map's own method, bound once
    # a state (a cycle's plugins call get and write ~15 times a pod: no Python frame each).
    read: Callable[[str], Any]
    get: Callable[..., Any]
    write: Callable[[str, Any], None]

    def __init__(self) -> None:
        self._data: dict[str, Any] = {}
        self.skip_filter_plugins: set[str] = set()
        self.skip_score_plugins: set[str] = set()
        self.record_plugin_metrics = False
        data = self._data
        self.read, self.get, self.write = data.__getitem__, data.get, data.__setitem__

    def delete(self, key: str) -> None:
        self._data.pop(key, None)

    def clone(self) -> "CycleState":
        c = CycleState()
        for k, v in self._data.items():
            clone = getattr(v, "clone", None)
            c._data[k] = clone() if callable(clone) else v
        c.skip_filter_plugins = set(self.skip_filter_plugins)
        c.skip_score_plugins = set(self.skip_score_plugins)
        return c


@dataclass(slots=True)
class PreFilterResult:
    """Node names a PreFilter plugin narrows the search to; None means all nodes."""

    node_names: set[str] | None = None

    def all_nodes(self) -> bool:
        return self.node_names is None

    def merge(self, other: "PreFilterResult | None") -> "PreFilterResult":
        if other is None or other.all_nodes():
            return PreFilterResult(None if self.node_names is None else set(self.node_names))
        if self.all_nodes():
            return PreFilterResult(set(other.node_names or ()))
        return PreFilterResult(self.node_names & (other.node_names or set()))


@dataclass(slots=True)
class PostFilterResult:
    nominated_node_name: str = ""


# What a PostFilter plugin answers: a nomination (or None) and a status.
PostFilterAnswer = tuple[PostFilterResult | None, Status | None]


@dataclass(slots=True)
class NodeScore:
    name: str
    score: int


@dataclass(slots=True)
class NodePluginScores:
    name: str
    scores: list[tuple[str, int]] = field(default_factory=list)  # (plugin, weighted score)
    total_score: int = 0


class NodeToStatus:
    """Statuses of the nodes that failed filtering (upstream's NodeToStatus).
    Nodes not in the map get `absent` (UnschedulableAndUnresolvable when PreFilter
    narrowed the set, since those nodes were never tried)."""

    __slots__ = ("statuses", "absent")

    def __init__(self, statuses: dict[str, Status] | None = None, absent: Status | None = None) -> None:
        self.statuses = statuses if statuses is not None else {}
        self.absent = absent if absent is not None else Status(_UNRESOLVABLE)

    def get(self, node_name: str) -> Status:
        return self.statuses.get(node_name) or self.absent

    def set(self, node_name: str, status: Status) -> None:
        self.statuses[node_name] = status

    def __len__(self) -> int:
        return len(self.statuses)

    def items(self) -> Iterable[tuple[str, Status]]:
        return self.statuses.items()

    def nodes_for_code(self, all_nodes: Sequence["NodeInfo"], code: Code) -> list["NodeInfo"]:
        statuses = self.statuses
        if self.absent.code == code:
            return [n for n in all_nodes if (st := statuses.get(n.name)) is None or st.code == code]
        named = {name for name, st in statuses.items() if st.code == code}
        return [n for n in all_nodes if n.name in named]

    def distinct(self) -> list[Status]:
        """Each distinct Status held (by identity: nodes share them), `absent` not counted."""
        values = self.statuses.values()
        return list(dict(zip(map(id, values), values)).values())

    def counts(self) -> list[tuple[Status, int]]:
        """Each distinct Status (by identity: nodes share them) with its number of nodes."""
        values = self.statuses.values()
        by_id = dict(zip(map(id, values), values))
        return [(by_id[i], n) for i, n in Counter(map(id, values)).items()]


@dataclass(slots=True, eq=False)
class QueuedPodInfo:
    """A pod in the scheduling queue (upstream's QueuedPodInfo). QueueSort plugins
    read `pod`, `timestamp` and `initial_attempt_timestamp` (integer nanoseconds of
    the injected clock); the queue owns every other field."""

    pod: "Pod"
    timestamp: int = 0  # when the pod was last added (or returned) to the queue
    initial_attempt_timestamp: int | None = None  # when it first entered activeQ
    attempts: int = 0
    unschedulable_plugins: set[str] = field(default_factory=set)
    pending_plugins: set[str] = field(default_factory=set)
    gated: bool = False
    gating_plugin: str = ""
    backoff_expiration: int | None = None
    popped_cycle: int = 0  # the queue's scheduling cycle when it was last popped (0: never)
    # Among pods with equal sort keys, the order of their puts in the unschedulable
    # pool (0: none, then by push order): a queue that counts one instant for many
    # pods' failures (actors/queue/pod_classes.py) keeps the order their own,
    # distinct failure times would have given them.
    tie: int = 0
