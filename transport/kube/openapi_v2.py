"""GET /openapi/v2: the Swagger 2.0 document of the served kinds, in JSON or, as
kubectl asks for it (`Accept: application/com.github.proto-openapi.spec.v2@v1.0+protobuf`),
as gnostic's openapi_v2.Document protobuf: client-go's OpenAPISchema() unmarshals the
body as protobuf whatever its Content-Type, so JSON would not do for kubectl.

kubectl reads v2 when v3 cannot answer for a manifest's kind (cli-runtime
fallback_query_param_verifier.go): a kind ksched does not serve (apps/v1 Deployment,
batch/v1 Job). Then no PATCH operation carries the kind's GVK, the kind is "param
unsupported", kubectl validates it against the v2 definitions, finds none and sends
it, and the server's 404 says what ksched serves (unserved.py). Served kinds carry the
same PATCH operation as in v3 (openapi.py), so kubectl leaves their validation to the
server under fieldValidation. No definitions on purpose: with a schema for a built-in
kind, client-side apply would compute its patch from that (empty) schema instead of
kubectl's compiled-in types.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any

import yaml

from transport.kube.openapi import PATCH_TYPES, QUERY_PARAMS, item_path
from framework.api.api_resources import RESOURCES

PROTOBUF_ACCEPT = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
PROTOBUF_TYPE = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"  # kube-openapi's reply type


@lru_cache(maxsize=1)
def document() -> dict[str, Any]:
    paths: dict[str, Any] = {}
    for r in RESOURCES:
        if not r.stored:
            continue
        paths[item_path(r)] = {"patch": {
            "operationId": f"patch{r.api_kind}", "consumes": list(PATCH_TYPES), "produces": ["application/json"],
            "parameters": [{"name": n, "in": "query", "type": t} for n, t in QUERY_PARAMS],
            "responses": {"200": {"description": "OK"}}, "x-kubernetes-action": "patch",
            "x-kubernetes-group-version-kind": {"group": r.group, "kind": r.api_kind, "version": r.version}}}
    return {"swagger": "2.0", "info": {"title": "Kubernetes", "version": "v1.32.0"}, "paths": paths,
            "definitions": {}}


# gnostic's openapiv2/OpenAPIv2.proto, the fields used here:
# Document {1 swagger, 2 info {1 title, 2 version}, 8 paths {2 path: NamedPathItem}}
# NamedPathItem {1 name, 2 value: PathItem {8 patch: Operation}}
# Operation {5 operation_id, 6 produces, 7 consumes, 8 parameters: ParametersItem, 9 responses, 13 vendor_extension}
# ParametersItem {1 parameter {2 non_body_parameter {3 query_parameter_sub_schema {2 in, 4 name, 6 type}}}}
# Responses {1 response_code: NamedResponseValue {1 name, 2 value: ResponseValue {1 response {1 description}}}}
# NamedAny {1 name, 2 value: Any {2 yaml}}

def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _field(number: int, payload: bytes | str) -> bytes:
    """One length-delimited field (a string or an embedded message)."""
    data = payload.encode() if isinstance(payload, str) else payload
    return _varint(number << 3 | 2) + _varint(len(data)) + data


def _extension(name: str, value: Any) -> bytes:
    return _field(1, name) + _field(2, _field(2, yaml.safe_dump(value, default_flow_style=False)))


def _operation(op: dict[str, Any]) -> bytes:
    out = _field(5, op["operationId"])
    out += b"".join(_field(6, t) for t in op["produces"]) + b"".join(_field(7, t) for t in op["consumes"])
    for p in op["parameters"]:
        query = _field(2, p["in"]) + _field(4, p["name"]) + _field(6, p["type"])
        out += _field(8, _field(1, _field(2, _field(3, query))))
    for code, resp in op["responses"].items():
        out += _field(9, _field(1, _field(1, code) + _field(2, _field(1, _field(1, resp["description"])))))
    for name, value in op.items():
        if name.startswith("x-"):
            out += _field(13, _extension(name, value))
    return out


@lru_cache(maxsize=1)
def protobuf() -> bytes:
    doc = document()
    info = _field(1, doc["info"]["title"]) + _field(2, doc["info"]["version"])
    paths = b"".join(_field(2, _field(1, path) + _field(2, _field(8, _operation(item["patch"]))))
                     for path, item in doc["paths"].items())
    return _field(1, doc["swagger"]) + _field(2, info) + _field(8, paths)


def wants_protobuf(accept: str) -> bool:
    return "protobuf" in accept and "proto-openapi" in accept
