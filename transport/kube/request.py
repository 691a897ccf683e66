"""What every REST handler shares: the deps, the parsed path (which resource,
namespace, name, subresource), the request body decoded by its Content-Type, query
flags, and objects dressed with their apiVersion and kind.

Bodies are bounded before they cost anything: MAX_BODY bytes (a larger Content-Length
is refused before reading), MAX_BODY_DEPTH levels of nesting, no more maps and lists
than bytes (YAML aliases), numbers JSON can hold (docs/kubectl.md, "The API at its edges")."""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError

from framework.kueue.versions import SERVED_VERSIONS, to_version
from transport.kube import protobuf
from framework.api.api_resources import Resource
from transport.kube.status import KubeError, bad_request
from transport.protocol.manifests import ManifestError, decode_utf8, load_all

MAX_BODY = 3 * 1024 * 1024  # kube-apiserver's request size limit
# Nesting a body may have: above the store's 64 levels (transport.protocol.wire.MAX_DEPTH),
# so that the store's refusal names the field, and far below Python's recursion limit,
# which the handlers' recursive merges must never meet.
MAX_BODY_DEPTH = 100


@dataclass(frozen=True, slots=True)
class KubeDeps:
    service: Any  # transport.server.service.StoreService: the same store operations as the msgpack port
    profiles: frozenset[str] = frozenset()  # the schedulerNames ksched's profiles serve
    now: Callable[[], float] = field(default=time.time)  # wall time, for Age columns
    server_address: str = ""  # host:port clients reach (GET /api)
    # kinds (store keys) a feature gate turns off: neither discovered nor served (framework.api.workload_api.gate_of)
    hidden: frozenset[str] = frozenset()


KUBE = web.AppKey("kube", KubeDeps)


@dataclass(frozen=True, slots=True)
class Target:
    """One REST path: the resource, and for an item its name and subresource."""
    resource: Resource
    namespace: str = ""  # "" on a namespaced collection: every namespace
    name: str = ""
    sub: str = ""  # "status", "binding"

    @property
    def qualified(self) -> str:
        return self.resource.qualified


def flag(request: web.Request, name: str) -> bool:
    """A query flag as strconv.ParseBool reads it (`true`, `1`, `True`, `t`...)."""
    return request.query.get(name, "").lower() in ("1", "t", "true")


def decorate(raw: dict[str, Any], res: Resource) -> dict[str, Any]:
    """The stored object with the apiVersion and kind its resource serves it under, and
    a namespaced object's namespace ("default" when a msgpack or in-process writer left
    it out: kube-apiserver always sets it, and kubectl describe selects events by it).
    A kind served in several versions is converted to the resource's (Kueue's)."""
    if res.group_version in SERVED_VERSIONS:
        raw = to_version(raw, res.group_version)
    meta = raw.get("metadata")
    if res.namespaced and isinstance(meta, dict) and not meta.get("namespace"):
        raw = {**raw, "metadata": {**meta, "namespace": "default"}}
    if raw.get("apiVersion") == res.group_version and raw.get("kind") == res.api_kind:
        return raw
    return {**raw, "apiVersion": res.group_version, "kind": res.api_kind}


async def read_body(request: web.Request) -> Any:
    """The body as a JSON value: JSON (also when no Content-Type is sent, as the Python
    client does), YAML (application/yaml, apply-patch+yaml) or kubectl's protobuf."""
    if (request.content_length or 0) > MAX_BODY:  # refused before a byte of it is read
        raise _too_large()
    chunks, size = [], 0
    try:
        async for chunk in request.content.iter_chunked(1 << 16):
            size += len(chunk)
            if size > MAX_BODY:
                raise _too_large()
            chunks.append(chunk)
    except (ConnectionResetError, HttpProcessingError) as err:
        # the client went away mid-body, or framed it wrongly (a bad chunk size, a short
        # Content-Length): answered, if anyone still listens, and nothing is logged as a fault
        raise bad_request(f"the body of the request could not be read: {err}") from None
    data = b"".join(chunks)
    ctype = request.headers.get("Content-Type", "application/json").split(";")[0].strip().lower()
    if ctype == protobuf.PROTOBUF:
        try:
            return protobuf.decode(data)
        except protobuf.ProtobufError as err:
            raise KubeError(415, "UnsupportedMediaType", f"the body of the request could not be decoded: {err}")
    try:
        if ctype.endswith("yaml"):
            value = _yaml_document(data)
        else:
            value = json.loads(data, parse_int=_go_int, parse_float=_finite, parse_constant=_no_constant) \
                if data.strip() else None
    except ManifestError as err:
        raise bad_request(f"the body of the request could not be decoded: {err.detail}") from None
    except ValueError as err:
        raise bad_request(f"the body of the request could not be decoded: {err}") from None
    except RecursionError:
        raise _too_deep() from None
    check_bounded(value, len(data))
    return value


def _yaml_document(data: bytes) -> Any:
    """The one YAML document of a body, read as kubectl and kube-apiserver read YAML
    (go-yaml's types: timestamps stay text, no NaN, no integer beyond 64 bits)."""
    docs = load_all(decode_utf8(data, "body"), "body")
    if len(docs) > 1:
        raise ValueError(f"a body holds one YAML document, not {len(docs)}")
    return docs[0] if docs else None


def _go_int(text: str) -> int | float:
    """A JSON integer as Go's unstructured decoder keeps it: int64, else a float64
    (msgpack and SQLite hold no wider integer)."""
    value = int(text)
    return value if -(2**63) <= value < 2**63 else _finite(text)


def _finite(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"number {text[:40]} is out of range")
    return value


def _no_constant(text: str) -> float:
    raise ValueError(f"invalid character {text[0]!r} looking for beginning of value")  # JSON has no NaN


def _too_large() -> KubeError:
    return KubeError(413, "RequestEntityTooLarge", f"Request entity too large: limit is {MAX_BODY}")


def _too_deep() -> KubeError:
    return bad_request(f"the body of the request could not be decoded: nested deeper than {MAX_BODY_DEPTH} levels")


def check_bounded(value: Any, size: int) -> None:
    """Refuse (400) a decoded body nested deeper than MAX_BODY_DEPTH, or holding more
    maps and lists than its `size` in bytes can spell: only YAML aliases can do that,
    and expanding them would take memory and time without bound."""
    if not isinstance(value, (dict, list)):
        return
    stack: list[tuple[Any, int]] = [(value, 1)]
    seen = 0
    while stack:
        node, depth = stack.pop()
        if depth > MAX_BODY_DEPTH:
            raise _too_deep()
        seen += 1
        if seen > size:
            raise bad_request("the body of the request could not be decoded: yaml: document contains excessive "
                              "aliasing")
        for child in (node.values() if isinstance(node, dict) else node):
            if isinstance(child, (dict, list)):
                stack.append((child, depth + 1))


def body_object(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise bad_request("the body of the request must be a JSON object")
    return value
