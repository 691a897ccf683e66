"""Kubernetes' protobuf request bodies, decoded as far as the typed client-go calls
kubectl makes need: `kubectl create namespace` sends a protobuf Namespace and has no
JSON fallback (client-go falls back on 415 only for CBOR).

The envelope (apimachinery runtime/serializer/protobuf): the magic `k8s\\x00`, then a
runtime.Unknown {1 typeMeta {1 apiVersion, 2 kind}, 2 raw, 3 contentEncoding,
4 contentType}; `raw` is the object, whose field 1 is its ObjectMeta {1 name,
2 generateName, 3 namespace, 11 labels, 12 annotations (map entries {1 key, 2 value})}.
A Namespace's spec {1 finalizers} is decoded too, and the specs of the access reviews
`kubectl auth can-i` sends: SelfSubjectAccessReview {2 spec {1 resourceAttributes,
2 nonResourceAttributes}}, SelfSubjectRulesReview {2 spec {1 namespace}}. Other kinds
are refused (415) naming the kind: their specs would need the generated code of k8s.io/api.
"""
from __future__ import annotations

from typing import Any, Iterator

MAGIC = b"k8s\x00"
PROTOBUF = "application/vnd.kubernetes.protobuf"
DECODED_KINDS = frozenset({"Namespace", "SelfSubjectAccessReview", "SelfSubjectRulesReview"})
# authorization/v1 generated.proto: ResourceAttributes and NonResourceAttributes fields (strings)
_RESOURCE_ATTRIBUTES = {1: "namespace", 2: "verb", 3: "group", 4: "version", 5: "resource", 6: "subresource",
                        7: "name"}
_NON_RESOURCE_ATTRIBUTES = {1: "path", 2: "verb"}


class ProtobufError(Exception):
    pass


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        if pos >= len(buf) or shift > 63:
            raise ProtobufError("truncated varint")
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7


def fields(buf: bytes) -> Iterator[tuple[int, int | bytes]]:
    """(field number, value) for each field: an int for varints and fixed widths, bytes for
    length-delimited ones (strings, messages, packed lists)."""
    pos = 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(buf, pos)
            yield number, value
        elif wire == 2:
            size, pos = _varint(buf, pos)
            if pos + size > len(buf):
                raise ProtobufError("truncated field")
            yield number, buf[pos:pos + size]
            pos += size
        elif wire in (1, 5):
            width = 8 if wire == 1 else 4
            if pos + width > len(buf):
                raise ProtobufError("truncated field")
            yield number, int.from_bytes(buf[pos:pos + width], "little")
            pos += width
        else:
            raise ProtobufError(f"unsupported wire type {wire}")


def _text(value: int | bytes) -> str:
    if not isinstance(value, bytes):
        raise ProtobufError("expected a string")
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ProtobufError(f"a string is not UTF-8 (byte 0x{value[err.start]:02x} at {err.start})") from None


def _map_entry(value: int | bytes) -> tuple[str, str]:
    if not isinstance(value, bytes):
        raise ProtobufError("expected a map entry")
    entry = {n: _text(v) for n, v in fields(value)}
    return entry.get(1, ""), entry.get(2, "")


def object_meta(buf: bytes) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    names = {1: "name", 2: "generateName", 3: "namespace", 5: "uid", 6: "resourceVersion"}
    for number, value in fields(buf):
        if number in names and _text(value):  # proto3: an empty string is an unset field
            meta[names[number]] = _text(value)
        elif number in (11, 12):
            k, v = _map_entry(value)
            meta.setdefault("labels" if number == 11 else "annotations", {})[k] = v
    return meta


def decode(body: bytes) -> dict[str, Any]:
    """The JSON form of a protobuf-encoded object kubectl's typed calls send."""
    if not body.startswith(MAGIC):
        raise ProtobufError("missing the k8s protobuf magic prefix")
    api_version = kind = ""
    raw = b""
    for number, value in fields(body[len(MAGIC):]):
        if number == 1 and isinstance(value, bytes):
            for n, v in fields(value):
                if n == 1:
                    api_version = _text(v)
                elif n == 2:
                    kind = _text(v)
        elif number == 2 and isinstance(value, bytes):
            raw = value
    if kind not in DECODED_KINDS:
        raise ProtobufError(f"protobuf bodies are decoded for {', '.join(sorted(DECODED_KINDS))} only, "
                            f"not {kind or 'an unnamed kind'}; send JSON")
    obj: dict[str, Any] = {"apiVersion": api_version, "kind": kind}
    for number, value in fields(raw):
        if number == 1 and isinstance(value, bytes):
            obj["metadata"] = object_meta(value)
        elif number == 2 and isinstance(value, bytes):
            obj["spec"] = _SPECS[kind](value)
    return obj


def _strings(buf: bytes, names: dict[int, str]) -> dict[str, str]:
    return {names[n]: _text(v) for n, v in fields(buf) if n in names and _text(v)}


def _namespace_spec(buf: bytes) -> dict[str, Any]:
    finalizers = [_text(v) for n, v in fields(buf) if n == 1]
    return {"finalizers": finalizers} if finalizers else {}


def _access_review_spec(buf: bytes) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    for n, v in fields(buf):
        if n == 1 and isinstance(v, bytes):
            spec["resourceAttributes"] = _strings(v, _RESOURCE_ATTRIBUTES)
        elif n == 2 and isinstance(v, bytes):
            spec["nonResourceAttributes"] = _strings(v, _NON_RESOURCE_ATTRIBUTES)
    return spec


def _rules_review_spec(buf: bytes) -> dict[str, Any]:
    return _strings(buf, {1: "namespace"})


_SPECS = {"Namespace": _namespace_spec, "SelfSubjectAccessReview": _access_review_spec,
          "SelfSubjectRulesReview": _rules_review_spec}
