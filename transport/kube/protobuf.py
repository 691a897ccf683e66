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

from typing import Any

from framework.protowire import ProtobufError, fields

MAGIC = b"k8s\x00"
PROTOBUF = "application/vnd.kubernetes.protobuf"
DECODED_KINDS = frozenset({"Namespace", "SelfSubjectAccessReview", "SelfSubjectRulesReview"})
# authorization/v1 generated.proto: ResourceAttributes and NonResourceAttributes fields (strings)
_RESOURCE_ATTRIBUTES = {1: "namespace", 2: "verb", 3: "group", 4: "version", 5: "resource", 6: "subresource",
                        7: "name"}
_NON_RESOURCE_ATTRIBUTES = {1: "path", 2: "verb"}


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
