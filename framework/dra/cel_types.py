"""Kubernetes' CEL types Quantity and Semver as CEL message types, and their functions.

cel-expr-python evaluates only CEL's own and protobuf message values, so each Kubernetes
opaque type is a one-field message (`text`, the string it was made from) in a private
descriptor pool; the functions parse that text (results are cached by the parsers)."""
from __future__ import annotations

import re
from fractions import Fraction
from typing import Any, Callable

from cel_expr_python import cel
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from framework.api.quantity import parse_quantity_text
from framework.dra.semver import parse_version

_PACKAGE = "ksched.dra.cel"
POOL = descriptor_pool.DescriptorPool()
_file = descriptor_pb2.FileDescriptorProto(name="ksched_dra_cel.proto", package=_PACKAGE, syntax="proto3")
for _name in ("Quantity", "Semver"):
    _file.message_type.add(name=_name).field.add(
        name="text", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_STRING,
        label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
POOL.Add(_file)
QuantityMsg: Any = message_factory.GetMessageClass(POOL.FindMessageTypeByName(f"{_PACKAGE}.Quantity"))
SemverMsg: Any = message_factory.GetMessageClass(POOL.FindMessageTypeByName(f"{_PACKAGE}.Semver"))
QUANTITY = cel.Type(f"{_PACKAGE}.Quantity")
SEMVER = cel.Type(f"{_PACKAGE}.Semver")
T = cel.Type
_INT64 = 2**63 - 1


def _amount(q: Any) -> Fraction:
    return parse_quantity_text(q.text)


def _quantity(text: str) -> Any:
    try:
        parse_quantity_text(text)
    except ValueError:
        raise ValueError("quantities must match the regular expression "
                         "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'") from None
    return QuantityMsg(text=text)


def _is_quantity(text: str) -> bool:
    try:
        parse_quantity_text(text)
    except ValueError:
        return False
    return True


def _from_amount(value: Fraction) -> Any:
    if value.denominator == 1:
        return QuantityMsg(text=str(value.numerator))
    milli = value * 1000
    if milli.denominator == 1:
        return QuantityMsg(text=f"{milli.numerator}m")
    return QuantityMsg(text=f"{int(value * 10**9)}n")


def _as_integer(q: Any) -> int:
    v = _amount(q)
    if v.denominator != 1 or not -_INT64 - 1 <= v.numerator <= _INT64:
        raise ValueError("cannot convert value to integer")
    return v.numerator


def _cmp(a: Any, b: Any) -> int:
    return (a > b) - (a < b)


def _semver(text: str, normalize: bool = False) -> Any:
    try:
        parse_version(text, normalize)
    except ValueError as e:
        raise ValueError(f"could not parse {text!r} as semver: {e}") from None
    return SemverMsg(text=text if not normalize else _normal_text(text))


def _normal_text(text: str) -> str:
    v = parse_version(text, True)
    return f"{v.major}.{v.minor}.{v.patch}" + ("-" + ".".join(v.pre) if v.pre else "")


def _is_semver(text: str, normalize: bool = False) -> bool:
    try:
        parse_version(text, normalize)
    except ValueError:
        return False
    return True


def _ver(s: Any) -> Any:
    return parse_version(s.text)


def _find_all(s: str, pattern: str, limit: int = -1) -> list[str]:
    found = [m.group(0) for m in re.finditer(pattern, s)]
    return found if limit < 0 else found[:limit]


def _find(s: str, pattern: str) -> str:
    m = re.search(pattern, s)
    return m.group(0) if m else ""


def _compare(a: Any, b: Any) -> int:
    if isinstance(a, QuantityMsg) and isinstance(b, QuantityMsg):
        return _cmp(_amount(a), _amount(b))
    if isinstance(a, SemverMsg) and isinstance(b, SemverMsg):
        return _ver(a).compare(_ver(b))
    raise ValueError(f"no such overload: {type(a).__name__} and {type(b).__name__} compared")


def _overload(oid: str, ret: Any, params: list[Any], member: bool, impl: Callable[..., Any] | None) -> cel.Overload:
    if impl is None:
        return cel.Overload(oid, ret, params, is_member=member)
    return cel.Overload(oid, ret, params, is_member=member, impl=impl)


def _decl(name: str, *overloads: tuple[str, Any, list[Any], bool, Callable[..., Any] | None]) -> cel.FunctionDecl:
    return cel.FunctionDecl(name, [_overload(*o) for o in overloads])


def kubernetes_functions() -> list[cel.FunctionDecl]:
    """Kubernetes' quantity, semver and regex libraries (apiserver/pkg/cel/library)."""
    Q, S = QUANTITY, SEMVER
    return [
        _decl("quantity", ("string_to_quantity", Q, [T.STRING], False, _quantity)),
        _decl("isQuantity", ("is_quantity_string", T.BOOL, [T.STRING], False, _is_quantity)),
        _decl("sign", ("quantity_sign", T.INT, [Q], True, lambda q: _cmp(_amount(q), 0))),
        _decl("isInteger", ("quantity_is_integer", T.BOOL, [Q], True, lambda q: _amount(q).denominator == 1)),
        _decl("asInteger", ("quantity_as_integer", T.INT, [Q], True, _as_integer)),
        _decl("asApproximateFloat", ("quantity_as_float", T.DOUBLE, [Q], True, lambda q: float(_amount(q)))),
        _decl("add", ("quantity_add", Q, [Q, Q], True, lambda a, b: _from_amount(_amount(a) + _amount(b))),
              ("quantity_add_int", Q, [Q, T.INT], True, lambda a, b: _from_amount(_amount(a) + b))),
        _decl("sub", ("quantity_sub", Q, [Q, Q], True, lambda a, b: _from_amount(_amount(a) - _amount(b))),
              ("quantity_sub_int", Q, [Q, T.INT], True, lambda a, b: _from_amount(_amount(a) - b))),
        # The runtime dispatches on the value kind (a message), so the Quantity and the Semver
        # overload share one implementation that looks at the operands' type.
        _decl("isLessThan", ("quantity_less", T.BOOL, [Q, Q], True, lambda a, b: _compare(a, b) < 0),
              ("semver_less", T.BOOL, [S, S], True, None)),
        _decl("isGreaterThan", ("quantity_greater", T.BOOL, [Q, Q], True, lambda a, b: _compare(a, b) > 0),
              ("semver_greater", T.BOOL, [S, S], True, None)),
        _decl("compareTo", ("quantity_compare", T.INT, [Q, Q], True, _compare),
              ("semver_compare", T.INT, [S, S], True, None)),
        _decl("semver", ("string_to_semver", S, [T.STRING], False, _semver),
              ("string_bool_to_semver", S, [T.STRING, T.BOOL], False, _semver)),
        _decl("isSemver", ("is_semver_string", T.BOOL, [T.STRING], False, _is_semver),
              ("is_semver_string_bool", T.BOOL, [T.STRING, T.BOOL], False, _is_semver)),
        _decl("major", ("semver_major", T.INT, [S], True, lambda s: _ver(s).major)),
        _decl("minor", ("semver_minor", T.INT, [S], True, lambda s: _ver(s).minor)),
        _decl("patch", ("semver_patch", T.INT, [S], True, lambda s: _ver(s).patch)),
        _decl("find", ("string_find_string", T.STRING, [T.STRING, T.STRING], True, _find)),
        _decl("findAll", ("string_find_all_string", T.List(T.STRING), [T.STRING, T.STRING], True, _find_all),
              ("string_find_all_string_int", T.List(T.STRING), [T.STRING, T.STRING, T.INT], True, _find_all)),
    ]
