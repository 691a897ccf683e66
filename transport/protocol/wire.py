"""The wire layer: msgpack maps <-> typed requests and replies. No I/O.

A request is `{"id": n, "op": OP, ...fields}`. `decode_request` checks every
field's type and returns one frozen dataclass per op; a bad request raises
ApiError(Invalid) naming the field. Replies are `{"id", "ok": true, "result"}` or
`{"id", "ok": false, "error": {"reason", "message"}}`; a watch's events are
`{"id": <the watch request's id>, "event": {"type", "object", "resourceVersion"}}`.

Ops and their fields (all optional unless marked *):
    hello    token
    apply    objects*: [object, ...], fieldValidation
                                                -> {"items": [object, ...], "actions": ["created"|"configured"|"unchanged", ...],
                                                    "warnings": [str, ...] (only when there are any)}
    create   object*, fieldValidation           -> {"object": object, "warnings": [...] (only when any)}
    delete   kind*, name*, namespace            -> {"object": object (its last state)}
    get      kind*, name*, namespace            -> {"object": object}
    events   kind*, name*, namespace            -> {"items": [{"type", "reason", "message", "ageSeconds",
                                                   "count", "firstAgeSeconds", "source", "name"}, ...]}
    list     kind*, namespace, labelSelector, fieldSelector, limit, continue
                                                -> {"items": [...], "resourceVersion": n, "continue": token}
             (limit 0 or absent: everything; "continue" is "" on the last page; every page
             of one list is read at the first page's resourceVersion; an old token: Expired)
    watch    kinds, namespace, resourceVersion  -> {"watch": id, "resourceVersion": n}, then events
             (a resourceVersion older than the kept history: Expired; list again)
    cancel   watch*: the watch request's id     -> {}
    explain  pod*                               -> framework.explain's result
    stats                                       -> counters

fieldValidation (Strict | Warn | Ignore, kube-apiserver's parameter) marks the objects
as a client's manifests: decoded as kube-apiserver decodes them (apiVersion must serve
the kind; unknown fields refused with BadRequest, returned as warnings and dropped, or
dropped) and admitted only into a namespace that exists. Without it a request keeps
the older, lenient meaning (an existing client's request means what it meant).
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Callable, Iterator, Mapping


class Reason(StrEnum):
    INVALID = "Invalid"
    BAD_REQUEST = "BadRequest"  # a manifest kube-apiserver would not decode (unknown fields, apiVersion)
    FORBIDDEN = "Forbidden"  # refused by admission whatever the request holds (deleting a system namespace)
    NOT_FOUND = "NotFound"
    ALREADY_EXISTS = "AlreadyExists"
    CONFLICT = "Conflict"
    UNAUTHORIZED = "Unauthorized"
    TOO_LARGE = "TooLarge"
    UNAVAILABLE = "Unavailable"
    INTERNAL = "Internal"
    EXPIRED = "Expired"
    TOO_MANY_REQUESTS = "TooManyRequests"  # a connection or watch limit (kube-apiserver's 429)  # a watch or continue token from a compacted resourceVersion: list again


class ApiError(Exception):
    """An error reply. `request_id` is set when the request's id was readable."""

    def __init__(self, reason: Reason, message: str, request_id: int | None = None, *,
                 causes: tuple[tuple[str, str], ...] = ()) -> None:
        super().__init__(f"{reason}: {message}")
        self.reason = reason
        self.message = message
        self.request_id = request_id
        # Invalid: every refused (field path, detail), for the REST port's Status causes.
        # In-process only: the msgpack reply carries the message.
        self.causes = causes

    def to_wire(self) -> dict[str, str]:
        return {"reason": str(self.reason), "message": self.message}

    @classmethod
    def from_wire(cls, err: object, request_id: int | None = None) -> "ApiError":
        if not isinstance(err, Mapping):
            return cls(Reason.INTERNAL, f"malformed error reply: {err!r}", request_id)
        try:
            reason = Reason(err.get("reason"))
        except ValueError:
            reason = Reason.INTERNAL
        return cls(reason, str(err.get("message", "")), request_id)


def invalid(field: str, message: str) -> ApiError:
    return ApiError(Reason.INVALID, f"{field}: {message}")


# --- requests ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Hello:
    id: int
    token: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Apply:
    id: int
    objects: tuple[dict[str, Any], ...]
    field_validation: str | None = None
    compact: bool = False  # the reply's compact form (actions, names, counts) whatever its size


@dataclass(frozen=True, slots=True, kw_only=True)
class Create:
    id: int
    object: dict[str, Any]
    field_validation: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class _Target:
    """A request about one named object."""

    id: int
    kind: str
    name: str
    namespace: str = ""


class Delete(_Target):
    __slots__ = ()


class Get(_Target):
    __slots__ = ()


class Events(_Target):
    __slots__ = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class List:
    id: int
    kind: str
    namespace: str = ""
    label_selector: str = ""
    field_selector: str = ""
    limit: int = 0  # 0: every object
    continue_token: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class Watch:
    id: int
    kinds: tuple[str, ...] = ()  # empty: every kind
    namespace: str = ""
    resource_version: int = 0  # 0: the current objects as ADDED, then changes


@dataclass(frozen=True, slots=True, kw_only=True)
class Cancel:
    id: int
    watch: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Explain:
    id: int
    pod: dict[str, Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class Stats:
    id: int


Request = Hello | Apply | Create | Delete | Get | Events | List | Watch | Cancel | Explain | Stats


# --- field readers ------------------------------------------------------------------------

FIELD_VALIDATION = ("Strict", "Warn", "Ignore")  # as framework.api.decode's (the wire imports no framework)

MAX_DEPTH = 64  # nesting of an object's maps and lists


def check_json_value(value: Any, path: str, depth: int = 0) -> None:
    """Objects are Kubernetes JSON: maps with string keys, lists, strings, numbers,
    booleans and null. msgpack can carry more (bytes, integer keys); refuse it here,
    naming the place, rather than fail later in the store."""
    for _ in json_value_steps(value, path, depth):
        pass


JSON_STEP = 2048  # values checked between two steps of json_value_steps


def json_value_steps(value: Any, path: str, depth: int = 0) -> Iterator[None]:
    """check_json_value as steps a caller may pause between (it yields after every
    JSON_STEP values): depth first, in document order, so the first error is the
    same; a value's path is spelt only when it is refused."""
    if (type(value) is dict or type(value) is list) and _plain_json(value, depth, [JSON_STEP]):
        return  # the usual object: checked at once, with no path kept
    # (key or None, value, depth, parent path node); a path node is (parent node, segment)
    stack: list[tuple[Any, Any, int, Any]] = [(None, value, depth, (None, path))]
    seen = 0
    while stack:
        key, v, d, where = stack.pop()
        if key is not None:
            if not isinstance(key, str):
                raise invalid(_spelt(where[0]), f"map keys must be strings, got {type(key).__name__} {key!r}")
        if d > MAX_DEPTH:
            raise invalid(_spelt(where), f"nested deeper than {MAX_DEPTH} levels")
        if isinstance(v, Mapping):
            stack.extend((k, item, d + 1, (where, k)) for k, item in reversed(v.items()))
        elif isinstance(v, list):
            stack.extend((None, item, d + 1, (where, i)) for i, item in reversed(list(enumerate(v))))
        elif v is not None and not isinstance(v, (str, int, float)):  # bool is an int
            raise invalid(_spelt(where), f"must be JSON (string, number, boolean, null, list or map), got {type(v).__name__}")
        seen += 1
        if seen % JSON_STEP == 0:
            yield


def _plain_json(value: dict[str, Any] | list[Any], depth: int, budget: list[int]) -> bool:
    """True when `value` is plain JSON (exact dict with str keys, list, str, int,
    bool, float, None) within MAX_DEPTH and at most `budget` values: nothing for
    json_value_steps to name, and no reason to pause. False leaves it to the steps."""
    if value and depth >= MAX_DEPTH:
        return False
    budget[0] -= len(value)
    if budget[0] < 0:
        return False
    if type(value) is dict:
        for k in value:
            if type(k) is not str:
                return False
        items: Any = value.values()
    else:
        items = value
    for v in items:
        t = type(v)
        if t is str or t is int or v is None or t is float or t is bool:
            continue
        if (t is not dict and t is not list) or not _plain_json(v, depth + 1, budget):
            return False
    return True


def _spelt(node: Any) -> str:
    """A path node's path: `objects[3].metadata.labels`."""
    parts: list[str] = []
    while node is not None:
        node, seg = node
        parts.append(f"[{seg}]" if isinstance(seg, int) else (seg if node is None else f".{seg}"))
    return "".join(reversed(parts))


class _Fields:
    """Typed access to one request map; errors name the field."""

    __slots__ = ("frame", "checked")

    def __init__(self, frame: Mapping[str, Any], checked: bool = False) -> None:
        self.frame = frame
        self.checked = checked  # the objects' JSON checks were made (request_steps)

    def str(self, name: str, *, required: bool = False) -> str:
        v = self.frame.get(name)
        if v is None:
            if required:
                raise invalid(name, "is required")
            return ""
        if not isinstance(v, str):
            raise invalid(name, f"must be a string, got {type(v).__name__}")
        if required and not v:
            raise invalid(name, "must not be empty")
        return v

    def opt_str(self, name: str) -> str | None:
        return self.str(name) if self.frame.get(name) is not None else None

    def int(self, name: str, *, required: bool = False) -> int:
        v = self.frame.get(name)
        if v is None:
            if required:
                raise invalid(name, "is required")
            return 0
        if isinstance(v, bool) or not isinstance(v, int):
            raise invalid(name, f"must be an integer, got {type(v).__name__}")
        if v < 0:
            raise invalid(name, "must be greater than or equal to 0")
        return v

    def map(self, name: str) -> dict[str, Any]:
        v = self.frame.get(name)
        if v is None:
            raise invalid(name, "is required")
        if not isinstance(v, Mapping):
            raise invalid(name, f"must be a map, got {type(v).__name__}")
        if not self.checked:
            check_json_value(v, name)
        return dict(v)

    def maps(self, name: str) -> tuple[dict[str, Any], ...]:
        v = self.frame.get(name)
        if v is None:
            raise invalid(name, "is required")
        if not isinstance(v, list):
            raise invalid(name, f"must be a list, got {type(v).__name__}")
        for i, item in enumerate(v):
            if not isinstance(item, Mapping):
                raise invalid(f"{name}[{i}]", f"must be a map, got {type(item).__name__}")
            if not self.checked:
                check_json_value(item, f"{name}[{i}]")
        return tuple(dict(item) for item in v)

    def field_validation(self) -> str | None:
        v = self.opt_str("fieldValidation")
        if v is not None and v not in FIELD_VALIDATION:
            raise invalid("fieldValidation", f'Unsupported value: "{v}": supported values: '
                          + ", ".join(f'"{m}"' for m in FIELD_VALIDATION))
        return v

    def flag(self, name: str) -> bool:
        v = self.frame.get(name)
        if v is None:
            return False
        if not isinstance(v, bool):
            raise invalid(name, f"must be a boolean, got {type(v).__name__}")
        return v

    def strs(self, name: str) -> tuple[str, ...]:
        v = self.frame.get(name)
        if v is None:
            return ()
        if not isinstance(v, list):
            raise invalid(name, f"must be a list of strings, got {type(v).__name__}")
        for i, item in enumerate(v):
            if not isinstance(item, str):
                raise invalid(f"{name}[{i}]", f"must be a string, got {type(item).__name__}")
        return tuple(v)


def _target(rid: int, f: _Fields, cls: type[_Target]) -> _Target:
    return cls(id=rid, kind=f.str("kind", required=True), name=f.str("name", required=True), namespace=f.str("namespace"))


PARSERS: dict[str, Callable[[int, _Fields], Request]] = {
    "hello": lambda rid, f: Hello(id=rid, token=f.opt_str("token")),
    "apply": lambda rid, f: Apply(id=rid, objects=f.maps("objects"), field_validation=f.field_validation(),
                                  compact=f.flag("compact")),
    "create": lambda rid, f: Create(id=rid, object=f.map("object"), field_validation=f.field_validation()),
    "delete": lambda rid, f: _target(rid, f, Delete),
    "get": lambda rid, f: _target(rid, f, Get),
    "events": lambda rid, f: _target(rid, f, Events),
    "list": lambda rid, f: List(id=rid, kind=f.str("kind", required=True), namespace=f.str("namespace"),
                                label_selector=f.str("labelSelector"), field_selector=f.str("fieldSelector"),
                                limit=f.int("limit"), continue_token=f.str("continue")),
    "watch": lambda rid, f: Watch(id=rid, kinds=f.strs("kinds"), namespace=f.str("namespace"),
                                  resource_version=f.int("resourceVersion")),
    "cancel": lambda rid, f: Cancel(id=rid, watch=f.int("watch", required=True)),
    "explain": lambda rid, f: Explain(id=rid, pod=f.map("pod")),
    "stats": lambda rid, f: Stats(id=rid),
}


def request_id(frame: Mapping[str, Any]) -> int | None:
    rid = frame.get("id")
    return rid if isinstance(rid, int) and not isinstance(rid, bool) else None


def decode_request(frame: Mapping[str, Any], *, checked: bool = False) -> Request:
    """The typed request for one decoded frame. Raises ApiError(Invalid) naming
    the field; its request_id is the frame's id when that was an integer.
    `checked`: request_steps has made the objects' JSON checks already."""
    rid, parser = _parser(frame)
    try:
        return parser(rid, _Fields(frame, checked))
    except ApiError as err:
        err.request_id = rid
        raise


def request_steps(frame: Mapping[str, Any]) -> Iterator[None]:
    """decode_request's costly part, the JSON checks of the objects a request
    carries, as steps a caller may pause between; then decode_request(frame,
    checked=True). Raises what decode_request would for the same frame, save
    that an object's error may come before one about a later plain field."""
    rid, _ = _parser(frame)
    try:
        name = _OBJECT_FIELDS.get(frame["op"])
        if name is not None:
            v = frame.get(name)
            if isinstance(v, list):
                for i, item in enumerate(v):
                    if not isinstance(item, Mapping):
                        return  # decode_request names it
                    yield from json_value_steps(item, f"{name}[{i}]")
                    yield
            elif isinstance(v, Mapping):
                yield from json_value_steps(v, name)
    except ApiError as err:
        err.request_id = rid
        raise


_OBJECT_FIELDS = {"apply": "objects", "create": "object", "explain": "pod"}  # what request_steps checks


def _parser(frame: Mapping[str, Any]) -> tuple[int, Callable[[int, _Fields], Request]]:
    rid = request_id(frame)
    if rid is None:
        raise ApiError(Reason.INVALID, f"id: must be an integer, got {type(frame.get('id')).__name__}")
    op = frame.get("op")
    parser = PARSERS.get(op) if isinstance(op, str) else None
    if parser is None:
        raise ApiError(Reason.INVALID, f"op: unknown op {op!r}; expected one of {', '.join(PARSERS)}", rid)
    return rid, parser


# --- replies ------------------------------------------------------------------------------


def ok_reply(rid: int | None, result: Any) -> dict[str, Any]:
    return {"id": rid, "ok": True, "result": result}


def error_reply(rid: int | None, err: ApiError) -> dict[str, Any]:
    return {"id": rid, "ok": False, "error": err.to_wire()}


def event_frame(watch_id: int, event_type: str, obj: Mapping[str, Any], resource_version: int) -> dict[str, Any]:
    return {"id": watch_id, "event": {"type": event_type, "object": obj, "resourceVersion": resource_version}}


def encode_request(rid: int, op: str, fields: Mapping[str, Any]) -> dict[str, Any]:
    """The client's side: a request map (fields with value None are left out)."""
    out: dict[str, Any] = {"id": rid, "op": op}
    out.update((k, v) for k, v in fields.items() if v is not None)
    return out
