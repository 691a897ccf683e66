"""cel-go's static cost estimate for device selector expressions, as Kubernetes computes it.

The compiled program's serialize() is a google.protobuf.Any holding the checked (or parsed)
cel.expr AST; it is read here with a minimal protobuf wire decoder (no generated classes are
shipped for cel.expr). The estimate follows cel-go's checker/cost.go: identifiers and field
selections cost 1, constants 0, a list literal 10, logical && / || / ?: add no operator
cost, string equality and regex functions scale with the operands' size estimates, and a
comprehension costs range + init + result + size(range) * (condition + step).
Sizes of the `device` variable are upstream's (dynamic-resource-allocation/cel): the
attribute and capacity maps hold at most 32 entries, a driver name is at most 63 and a
string attribute at most 64 characters. Only the maximum is computed (what validation uses)."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from framework.protowire import ProtobufError, fields

UNKNOWN = 2**64 - 1          # cel-go's "no estimate" size (math.MaxUint64)
MAX_ENTRIES = 32             # resourceapi.ResourceSliceMaxAttributesAndCapacitiesPerDevice
DRIVER_NAME_MAX = 63         # resourceapi.DriverNameMaxLength
STRING_VALUE_MAX = 64        # resourceapi.DeviceAttributeMaxValueLength
LIST_CREATE_COST = 10        # common.ListCreateBaseCost
MAP_CREATE_COST = 30         # common.MapCreateBaseCost
STRUCT_CREATE_COST = 40      # common.StructCreateBaseCost
STRING_TRAVERSAL = 0.1       # common.StringTraversalCostFactor
REGEX_LENGTH = 0.25          # common.RegexStringLengthCostFactor


class CostEstimateError(ValueError):
    """The AST holds a construct the estimator does not know."""


# --- protobuf wire decoding -------------------------------------------------------------

def _fields(buf: bytes) -> list[tuple[int, Any]]:
    try:
        return list(fields(buf))
    except ProtobufError as e:
        raise CostEstimateError(f"unreadable serialized program: {e}") from None


def _one(fields: list[tuple[int, Any]], num: int, default: Any = None) -> Any:
    for n, v in fields:
        if n == num:
            return v
    return default


@dataclass(frozen=True, slots=True, kw_only=True)
class Node:
    """One cel.expr.Expr: kind is const, ident, select, call, list, struct or comprehension."""
    kind: str
    name: str = ""                      # ident name, select field, call function
    const: Any = None
    target: "Node | None" = None        # select operand or member-call target
    args: tuple["Node", ...] = ()       # call args or list elements
    comp: dict[str, Any] = field(default_factory=dict)


def _node(buf: bytes) -> Node:
    f = _fields(buf)
    for num, val in f:
        if num == 3:
            return Node(kind="const", const=_const(val))
        if num == 4:
            return Node(kind="ident", name=_one(_fields(val), 1, b"").decode())
        if num == 5:
            s = _fields(val)
            return Node(kind="select", name=_one(s, 2, b"").decode(), target=_node(_one(s, 1, b"")),
                        const=bool(_one(s, 3, 0)))
        if num == 6:
            c = _fields(val)
            tgt = _one(c, 1)
            return Node(kind="call", name=_one(c, 2, b"").decode(),
                        target=_node(tgt) if tgt is not None else None,
                        args=tuple(_node(v) for n, v in c if n == 3))
        if num == 7:
            return Node(kind="list", args=tuple(_node(v) for n, v in _fields(val) if n == 1))
        if num == 8:  # CreateStruct: {1 message_name, 2 entries {2 field_key, 3 map_key, 4 value}}
            st = _fields(val)
            parts: list[Node] = []
            for n, entry in st:
                if n == 2:
                    parts += [_node(v) for k, v in _fields(entry) if k in (3, 4)]
            return Node(kind="struct", name=_one(st, 1, b"").decode(), args=tuple(parts))
        if num == 9:
            c = _fields(val)
            parts = {"iter_var": (_one(c, 1, b"")).decode(), "accu_var": (_one(c, 3, b"")).decode()}
            for key, num2 in (("range", 2), ("init", 4), ("cond", 5), ("step", 6), ("result", 7)):
                parts[key] = _node(_one(c, num2, b""))
            return Node(kind="comprehension", comp=parts)
    return Node(kind="const", const=None)


def _const(buf: bytes) -> Any:
    for num, val in _fields(buf):
        if num == 6:
            return val.decode()
        if num == 7:
            return val
        if num in (2, 3, 4):
            return val
        if num == 5:
            return 0.0
    return None


def ast_from_serialized(data: bytes) -> Node:
    """The root expression of a serialized program (Any of CheckedExpr or ParsedExpr)."""
    any_fields = _fields(data)
    type_url = _one(any_fields, 1, b"").decode()
    inner = _fields(_one(any_fields, 2, b""))
    expr = _one(inner, 4 if type_url.endswith("CheckedExpr") else 2)
    if expr is None:
        raise CostEstimateError(f"no expression in serialized program ({type_url})")
    return _node(expr)


# --- the estimate ----------------------------------------------------------------------

Path = tuple[str, ...]

_FIXED_SIZES: dict[Path, int] = {
    ("device", "driver"): DRIVER_NAME_MAX,
    ("device", "attributes"): MAX_ENTRIES,
    ("device", "capacity"): MAX_ENTRIES,
    ("device", "attributes", "[]"): MAX_ENTRIES,
    ("device", "capacity", "[]"): MAX_ENTRIES,
    ("device", "attributes", "[]", "[]"): STRING_VALUE_MAX,
}
_PARSE_BY_LENGTH = frozenset({"quantity", "isQuantity", "semver", "isSemver"})
_REGEX = frozenset({"matches", "find", "findAll"})
_COMPARISONS = frozenset({"_<_", "_<=_", "_>_", "_>=_"})


def _ceil(size: int, factor: float) -> int:
    return UNKNOWN if size >= UNKNOWN else math.ceil(size * factor)


def _mul(a: int, b: int) -> int:
    return UNKNOWN if a * b >= UNKNOWN else a * b


def _is_text(n: Node) -> bool:
    return n.kind == "const" and isinstance(n.const, (str, bytes))


def _sat(*parts: int) -> int:
    total = sum(parts)
    return UNKNOWN if total >= UNKNOWN else total


@dataclass(slots=True)
class _Estimator:
    paths: dict[str, Path] = field(default_factory=dict)   # in-scope variables -> their path

    def path(self, n: Node) -> Path | None:
        if n.kind == "ident":
            return self.paths.get(n.name, (n.name,) if n.name == "device" else None)
        if n.kind == "select" and n.target is not None:
            base = self.path(n.target)
            if base is None:
                return None
            return base + ((n.name,) if base == ("device",) else ("[]",))
        if n.kind == "call" and n.name == "_[_]" and len(n.args) == 2:
            base = self.path(n.args[0])
            return None if base is None else base + ("[]",)
        return None

    def size(self, n: Node) -> int:
        if n.kind == "const":
            return len(n.const) if isinstance(n.const, (str, bytes)) else 1
        if n.kind == "list":
            return len(n.args)
        p = self.path(n)
        if p is not None and p in _FIXED_SIZES:
            return _FIXED_SIZES[p]
        return UNKNOWN

    def cost(self, n: Node) -> int:
        if n.kind == "const":
            return 0
        if n.kind == "ident":
            return 1
        if n.kind == "select":
            return _sat(self.cost(n.target), 1) if n.target is not None else 1
        if n.kind == "list":
            return _sat(LIST_CREATE_COST, *(self.cost(a) for a in n.args))
        if n.kind == "struct":  # a message literal (named) or a map literal
            return _sat(STRUCT_CREATE_COST if n.name else MAP_CREATE_COST, *(self.cost(a) for a in n.args))
        if n.kind == "comprehension":
            return self._comprehension(n.comp)
        if n.kind == "call":
            return self._call(n)
        raise CostEstimateError(f"no cost model for a {n.kind} expression")

    def _comprehension(self, c: dict[str, Any]) -> int:
        rng, init = c["range"], c["init"]
        fixed = [self.cost(rng), self.cost(init)]
        saved = dict(self.paths)
        rp, ip = self.path(rng), self.path(init)
        self.paths[c["iter_var"]] = (rp or ("?",)) + ("@key",)
        if ip is not None:
            self.paths[c["accu_var"]] = ip
        else:
            self.paths.pop(c["accu_var"], None)
        per_iteration = _sat(self.cost(c["cond"]), self.cost(c["step"]))
        fixed.append(self.cost(c["result"]))
        self.paths = saved
        count = self.size(rng)
        loop = UNKNOWN if count >= UNKNOWN or per_iteration >= UNKNOWN else count * per_iteration
        return _sat(*fixed, loop)

    def _call(self, n: Node) -> int:
        operands = ([n.target] if n.target is not None else []) + list(n.args)
        args = _sat(*(self.cost(a) for a in operands))
        name = n.name
        if name in ("_&&_", "_||_"):
            return args
        if name == "_?_:_":
            cond, yes, no = (self.cost(a) for a in operands)
            return _sat(cond, max(yes, no))
        return _sat(args, self._function(name, operands))

    def _function(self, name: str, operands: list[Node]) -> int:
        if name in ("_==_", "_!=_"):
            return _ceil(min(self.size(operands[0]), self.size(operands[1])), STRING_TRAVERSAL)
        if name == "@in":
            return self.size(operands[1]) if operands[1].kind == "list" else 1
        if name in _REGEX:
            return _mul(_ceil(self.size(operands[0]), STRING_TRAVERSAL), _ceil(self.size(operands[1]), REGEX_LENGTH))
        if name == "split":
            return _ceil(self.size(operands[0]), 2 * STRING_TRAVERSAL)
        if name in _COMPARISONS and any(_is_text(o) for o in operands):
            # string ordering stops at the shorter operand, as equality does
            return _ceil(min(self.size(operands[0]), self.size(operands[1])), STRING_TRAVERSAL)
        if name in ("contains", "indexOf", "lastIndexOf") and len(operands) >= 2:
            return _mul(_ceil(self.size(operands[0]), STRING_TRAVERSAL),
                        _ceil(self.size(operands[1]), STRING_TRAVERSAL))
        if name in ("startsWith", "endsWith") and len(operands) == 2:
            return _ceil(self.size(operands[1]), STRING_TRAVERSAL)
        if name in _PARSE_BY_LENGTH or name in ("lowerAscii", "upperAscii", "trim", "replace",
                                                "substring", "charAt", "join"):
            return _ceil(self.size(operands[0]), STRING_TRAVERSAL)
        return 1  # cel-go's default for any other function: one unit


def estimate_max_cost(serialized: bytes) -> int:
    """cel-go's estimated maximum cost of a compiled selector (its program's serialize())."""
    return _Estimator().cost(ast_from_serialized(serialized))
