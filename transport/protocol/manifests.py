"""YAML and JSON read as kubectl reads them, for manifests and config files.

kubectl turns YAML into JSON with sigs.k8s.io/yaml over go-yaml v2, whose
implicit types are not PyYAML's YAML 1.1 ones. This loader keeps PyYAML's parser
(libyaml through CParser when installed, the pure-Python one otherwise) and
resolves plain scalars as go-yaml does:

- bool: y Y yes Yes YES true True TRUE on On ON, n N no No NO false False FALSE
  off Off OFF (no other spellings);
- null: empty, ~, null, Null, NULL;
- int: what Go's strconv.ParseInt/ParseUint read with base 0 after dropping
  underscores: 10, +10, 0x1F, 0o17, 0b101, 017 (octal, as YAML 1.1);
- float: go-yaml's `[-+]?(\\.[0-9]+|[0-9]+(\\.[0-9]*)?)([eE][-+]?[0-9]+)?`
  (so 1e3 is a float, and 08 is 8.0), .inf and .nan spellings;
- everything else is a string: 1:30 (no sexagesimal numbers), = (no YAML 1.1
  value key), 2024-01-02 and other timestamps (go-yaml hands them to an untyped
  target as the text written).

What kubectl refuses is refused here, with the line and column: a mapping key
defined twice (`mapping key "x" already defined at line N`, go-yaml's words), a
null, sequence or mapping used as a key, NaN and infinities (JSON has none). What
go-yaml would silently change is refused too: an integer outside 64 bits (go-yaml
makes it a float, losing digits, or a string) and a float that overflows.
Explicit tags: !!set is read as a mapping and !!omap/!!pairs as a sequence (as
go-yaml reads them into an untyped value), !!timestamp as its text, !!binary as
the decoded text when it is UTF-8, any other tag as the node's plain value.

Nesting is bounded by libyaml (1,000 levels); without libyaml Python's recursion
limit bounds it, reported as too deep. Input bytes must be UTF-8 (a BOM is
allowed); a lone surrogate escape is refused.
"""
from __future__ import annotations

import base64
import binascii
import math
import re
from typing import Any

import yaml
from yaml.constructor import ConstructorError, SafeConstructor
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from yaml.resolver import BaseResolver

from yaml.composer import Composer
from yaml.parser import Parser
from yaml.reader import Reader
from yaml.scanner import Scanner


class _PyParser(Reader, Scanner, Parser, Composer):
    """PyYAML's pure-Python reader, scanner, parser and composer (no libyaml)."""

    def __init__(self, stream: str) -> None:
        Reader.__init__(self, stream)
        Scanner.__init__(self)
        Parser.__init__(self)
        Composer.__init__(self)


try:
    from yaml._yaml import CParser as _CParser  # libyaml: scanner, parser and composer in C

    HAVE_LIBYAML = True
except ImportError:  # pragma: no cover - PyYAML built without libyaml
    _CParser = _PyParser  # type: ignore[misc,assignment]
    HAVE_LIBYAML = False

_TAG = "tag:yaml.org,2002:"
STR, INT, FLOAT, BOOL, NULL = _TAG + "str", _TAG + "int", _TAG + "float", _TAG + "bool", _TAG + "null"
SEQ, MAP, MERGE = _TAG + "seq", _TAG + "map", _TAG + "merge"

_TRUE = frozenset({"y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"})
_FALSE = frozenset({"n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"})
_NULLS = frozenset({"", "~", "null", "Null", "NULL"})
_NON_FINITE = frozenset({".nan", ".NaN", ".NAN", ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF",
                         "-.inf", "-.Inf", "-.INF"})
_GO_INT = re.compile(r"([-+]?)(?:0[xX]([0-9a-fA-F]+)|0[oO]([0-7]+)|0[bB]([01]+)|0([0-7]*)|([1-9][0-9]*))")
_GO_FLOAT = re.compile(r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?")
_SURROGATE = re.compile("[\ud800-\udfff]")
_INT64_MIN, _INT64_MAX, _UINT64_MAX = -(1 << 63), (1 << 63) - 1, (1 << 64) - 1


class ManifestError(ValueError):
    """Input that cannot be read: one line naming the source and, when known, where in it."""

    def __init__(self, source: str, problem: str, line: int | None = None, column: int | None = None) -> None:
        self.source, self.problem, self.line, self.column = source, problem, line, column
        where = f"line {line}, column {column}: " if line is not None and column is not None else ""
        self.detail = f"{where}{problem}"  # without the source
        super().__init__(f"{source}: {self.detail}")


def plain_scalar_tag(value: str) -> str:
    """The tag go-yaml v2 gives an unquoted scalar."""
    if value in _NULLS:
        return NULL
    if value in _TRUE or value in _FALSE:
        return BOOL
    if value in _NON_FINITE:
        return FLOAT
    if value == "<<":
        return MERGE
    first = value[0]
    if first == ".":
        return FLOAT if _GO_FLOAT.fullmatch(value) else STR
    if first in "+-0123456789":
        plain = value.replace("_", "")
        if _GO_INT.fullmatch(plain):
            return INT
        if _GO_FLOAT.fullmatch(plain):
            return FLOAT
    return STR


def _go_int(text: str) -> int | None:
    """The integer Go's ParseInt/ParseUint (base 0) read in `text` (underscores
    dropped), or None when it is not one; the range is not checked."""
    m = _GO_INT.fullmatch(text.replace("_", ""))
    if m is None:
        return None
    sign, hex_, oct_, bin_, old_oct, dec = m.groups()
    digits, base = next((d, b) for d, b in ((hex_, 16), (oct_, 8), (bin_, 2), (old_oct, 8), (dec, 10))
                        if d is not None)
    digits = digits.lstrip("0") or "0"
    if len(digits) > 64:  # beyond 64 bits in any base; int() is not asked (its digit limit)
        return _UINT64_MAX + 1
    n = int(digits, base)
    return -n if sign == "-" else n


class _GoResolver(BaseResolver):
    """go-yaml's implicit types for plain scalars; quoted scalars are strings."""

    def resolve(self, kind: type, value: Any, implicit: tuple[bool, bool]) -> str:
        if kind is ScalarNode:
            return plain_scalar_tag(value) if implicit[0] else STR
        return SEQ if kind is SequenceNode else MAP


class _GoConstructor(SafeConstructor):
    """Values as kubectl's YAML-to-JSON step produces them: str keys, no sets,
    no dates, no non-finite numbers, no key twice."""

    def construct_scalar(self, node: Node) -> Any:
        value = super().construct_scalar(node)
        if isinstance(value, str) and not value.isascii() and _SURROGATE.search(value):
            raise ConstructorError(None, None, "a lone surrogate (\\ud800-\\udfff) is not a character",
                                   node.start_mark)
        return value

    def construct_yaml_int(self, node: Node) -> int:
        text = self.construct_scalar(node)
        n = _go_int(text)
        if n is None:
            raise ConstructorError(None, None, f"cannot decode {text!r} as an integer", node.start_mark)
        if not _INT64_MIN <= n <= _UINT64_MAX or (n > _INT64_MAX and text.startswith("+")):
            raise ConstructorError(None, None, f"integer out of range ({len(text)} characters; 64 bits at most); "
                                   "quote it to make it a string", node.start_mark)
        return n

    def construct_yaml_float(self, node: Node) -> float:
        text = self.construct_scalar(node)
        if text in _NON_FINITE:
            raise ConstructorError(None, None, f"{text} is not a finite number (JSON has no NaN or Infinity)",
                                   node.start_mark)
        plain = text.replace("_", "")
        if not _GO_FLOAT.fullmatch(plain):
            n = _go_int(plain)  # !!float 12 is 12.0, as go-yaml converts it
            if n is None:
                raise ConstructorError(None, None, f"cannot decode {text!r} as a number", node.start_mark)
            plain = str(n) if abs(n) <= _UINT64_MAX else "inf"
        value = float(plain)
        if not math.isfinite(value):
            raise ConstructorError(None, None, f"number out of range: {text[:40]}", node.start_mark)
        return value

    def construct_yaml_bool(self, node: Node) -> bool:
        text = self.construct_scalar(node)
        if text in _TRUE or text.lower() in ("true", "yes", "on", "y"):
            return True
        if text in _FALSE or text.lower() in ("false", "no", "off", "n"):
            return False
        raise ConstructorError(None, None, f"cannot decode {text!r} as a bool", node.start_mark)

    def construct_as_text(self, node: Node) -> str:
        return self.construct_scalar(node)

    def construct_yaml_binary(self, node: Node) -> str:
        try:
            raw = base64.decodebytes(self.construct_scalar(node).encode("ascii"))
            return raw.decode("utf-8")
        except (binascii.Error, UnicodeError):
            raise ConstructorError(None, None, "!!binary: not base64 of UTF-8 text", node.start_mark) from None

    def construct_any(self, node: Node) -> Any:
        """A node with a tag of its own (or !!set, !!omap, !!pairs): its plain shape."""
        if isinstance(node, MappingNode):
            return self.construct_yaml_map(node)
        if isinstance(node, SequenceNode):
            return self.construct_yaml_seq(node)
        return self.construct_scalar(node)

    def construct_yaml_map(self, node: Node) -> Any:
        data: dict[str, Any] = {}
        yield data
        data.update(self.construct_mapping(node))

    def construct_mapping(self, node: Node, deep: bool = False) -> dict[str, Any]:
        if not isinstance(node, MappingNode):
            raise ConstructorError(None, None, f"expected a mapping, found {node.id}", node.start_mark)
        explicit = {id(key_node) for key_node, _ in node.value if key_node.tag != MERGE}
        self.flatten_mapping(node)  # merge keys (<<), as go-yaml supports them
        defined: dict[str, int] = {}
        out: dict[str, Any] = {}
        for key_node, value_node in node.value:
            key = self._json_key(key_node)
            if id(key_node) in explicit:
                if key in defined:
                    raise ConstructorError(None, None, f"mapping key {_go_quote(key)} already defined at line "
                                           f"{defined[key]}", key_node.start_mark)
                defined[key] = key_node.start_mark.line + 1
            out[key] = self.construct_object(value_node, deep=deep)
        return out

    def _json_key(self, key_node: Node) -> str:
        """A key as sigs.k8s.io/yaml writes it in JSON."""
        if not isinstance(key_node, ScalarNode):
            raise ConstructorError(None, None, f"a mapping key must be a scalar, found a {key_node.id}",
                                   key_node.start_mark)
        key = self.construct_object(key_node, deep=True)
        if isinstance(key, bool):
            return "true" if key else "false"
        if key is None:
            raise ConstructorError(None, None, "a mapping key must not be null", key_node.start_mark)
        return key if isinstance(key, str) else str(key)


def _go_quote(key: str) -> str:
    return '"' + key.replace("\\", "\\\\").replace('"', '\\"') + '"'


for _tag, _fn in ((INT, _GoConstructor.construct_yaml_int), (FLOAT, _GoConstructor.construct_yaml_float),
                  (BOOL, _GoConstructor.construct_yaml_bool), (_TAG + "timestamp", _GoConstructor.construct_as_text),
                  (_TAG + "binary", _GoConstructor.construct_yaml_binary), (MAP, _GoConstructor.construct_yaml_map),
                  (_TAG + "set", _GoConstructor.construct_any), (_TAG + "omap", _GoConstructor.construct_any),
                  (_TAG + "pairs", _GoConstructor.construct_any), (None, _GoConstructor.construct_any)):
    _GoConstructor.add_constructor(_tag, _fn)


class ManifestLoader(_CParser, _GoConstructor, _GoResolver):
    """libyaml's parser (when installed) with go-yaml's types; see the module doc."""

    def __init__(self, stream: str) -> None:
        _CParser.__init__(self, stream)
        _GoConstructor.__init__(self)
        _GoResolver.__init__(self)


class PureManifestLoader(_PyParser, _GoConstructor, _GoResolver):
    """The same without libyaml (what ManifestLoader is when libyaml is missing)."""

    def __init__(self, stream: str) -> None:
        _PyParser.__init__(self, stream)
        _GoConstructor.__init__(self)
        _GoResolver.__init__(self)


def decode_utf8(data: bytes, source: str) -> str:
    """The text of `data`, or ManifestError naming the line and column of the first
    byte that is not UTF-8."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise ManifestError(source, f"invalid UTF-8 (byte 0x{data[exc.start]:02x})", line, column) from None


def load_all(text: str, source: str, loader_class: type = ManifestLoader) -> list[Any]:
    """Every document in `text`, kubectl's way; ManifestError says what and where."""
    loader = loader_class(text)
    try:
        docs = []
        while loader.check_data():
            docs.append(loader.get_data())
        return docs
    except yaml.MarkedYAMLError as exc:
        raise _marked(exc, source) from None
    except yaml.YAMLError as exc:
        raise ManifestError(source, " ".join(str(exc).split())) from None
    except RecursionError:
        raise ManifestError(source, "nested too deeply") from None
    finally:
        loader.dispose()


def _marked(exc: yaml.MarkedYAMLError, source: str) -> ManifestError:
    mark = exc.problem_mark or exc.context_mark
    problem = exc.problem or exc.context or "not valid YAML"
    if exc.context and exc.problem:
        ctx = exc.context
        cm = exc.context_mark
        if cm is not None and (mark is None or (cm.line, cm.column) != (mark.line, mark.column)):
            ctx += f" at line {cm.line + 1}, column {cm.column + 1}"
        problem = f"{problem} ({ctx})"
    if mark is None:
        return ManifestError(source, problem)
    return ManifestError(source, problem, mark.line + 1, mark.column + 1)
