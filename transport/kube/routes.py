"""The Kubernetes REST API on the HTTP port: mount_kube(app, deps) adds

    GET /version, /api, /apis, /apis/{group}, /api/v1, /apis/{group}/{version}   discovery.py
    GET /openapi/v2 (JSON or protobuf), /openapi/v3[/...]                         openapi_v2.py, openapi.py
    /api/v1/..., /apis/{group}/{version}/...                                      the resources:
        [namespaces/{ns}/]{plural}[/{name}[/{status|binding}]], namespaces/{ns}/bindings

and dispatches each path and method to reads.py (get, list), watch.py, writes.py
(create, update, delete, binding, status) and patching.py. Errors leave as Status
objects (status.py).
"""
from __future__ import annotations

from typing import Awaitable, Callable

from aiohttp import web

from transport.kube import access_review, discovery, openapi, openapi_v2, patching, reads, unserved, watch, writes
from transport.kube.request import KUBE, KubeDeps, Target, flag
from framework.api.api_resources import BY_PATH, Resource
from transport.kube.status import KubeError, error_response, json_response

Handler = Callable[[web.Request, Target], Awaitable[web.StreamResponse]]


def _not_found(path: str) -> KubeError:
    return KubeError(404, "NotFound", "the server could not find the requested resource", name=path)


def _resource(gv: str, plural: str, path: str) -> Resource:
    res = BY_PATH.get((gv, plural))
    if res is None:
        raise _not_found(path)
    return res


def parse_target(gv: str, rest: list[str], path: str) -> Target:
    """The Target of the path segments after the group-version."""
    if len(rest) >= 3 and rest[0] == "namespaces" and (gv, rest[2]) in BY_PATH:
        ns, res = rest[1], _resource(gv, rest[2], path)
        if not res.namespaced:
            raise _not_found(path)
        tail = rest[3:]
    else:
        ns, res, tail = "", _resource(gv, rest[0], path), rest[1:]
        if res.namespaced and tail:  # a namespaced item needs its namespace
            raise _not_found(path)
    if len(tail) > 2:
        raise _not_found(path)
    if not res.served:
        raise unserved.kind_not_served(res, tail[0] if tail else "")
    if len(tail) == 2 and tail[1] not in res.subresources:
        raise unserved.subresource_not_served(res, tail[0], tail[1])
    return Target(res, ns, tail[0] if tail else "", tail[1] if len(tail) == 2 else "")


def _handler(request: web.Request, target: Target) -> Handler:
    method, res = request.method, target.resource
    if res.kind in access_review.HANDLERS:
        if target.name or method != "POST":
            raise KubeError(405, "MethodNotAllowed", f"the server does not allow this method on {res.plural}")
        return access_review.HANDLERS[res.kind]
    if res.kind == "Binding":
        if target.name or method != "POST":
            raise KubeError(405, "MethodNotAllowed", f"the server does not allow this method on {res.plural}")
        return writes.bind
    verbs = {"GET": "get" if target.name else ("watch" if flag(request, "watch") else "list"),
             "POST": "create", "PUT": "update", "PATCH": "patch",
             "DELETE": "delete" if target.name else "deletecollection"}
    verb = verbs.get(method)
    if target.sub == "binding":
        if method != "POST":
            raise KubeError(405, "MethodNotAllowed", "pods/binding allows create (POST) only")
        return writes.bind
    if target.sub == "status":
        table = {"GET": reads.read, "PUT": writes.update, "PATCH": patching.patch}
    else:
        allowed = set(res.verbs) | ({"deletecollection"} if "delete" in res.verbs else set())
        if verb not in allowed or (verb == "create" and target.name):
            raise KubeError(405, "MethodNotAllowed", f"the server does not allow this method on the requested "
                            f"resource ({res.qualified})")
        table = {"get": reads.read, "list": reads.read, "watch": watch.watch, "create": writes.create,
                 "update": writes.update, "patch": patching.patch, "delete": writes.delete,
                 "deletecollection": writes.delete_collection}
        return table[verb]  # type: ignore[index]
    h = table.get(method)
    if h is None:
        raise KubeError(405, "MethodNotAllowed", f"the server does not allow this method on {res.plural}/status")
    return h


async def _resources(request: web.Request) -> web.StreamResponse:
    parts = [p for p in request.path.split("/") if p]
    try:
        if parts[0] == "api":
            gv, rest = "/".join(parts[1:2]), parts[2:]
        else:
            gv, rest = "/".join(parts[1:3]), parts[3:]
        if not rest:
            hidden = request.app[KUBE].hidden
            body = discovery.resource_list(gv, hidden) if gv and (parts[0] == "apis") == ("/" in gv) else None
            if body is None:
                group = discovery.group(parts[1], hidden) if parts[0] == "apis" and len(parts) == 2 else None
                if group is None:
                    raise _not_found(request.path)
                return json_response(group)
            return json_response(body)
        target = parse_target(gv, rest, request.path)
        if target.resource.kind in request.app[KUBE].hidden:  # its feature gate is off: not served
            raise _not_found(request.path)
        return await _handler(request, target)(request, target)
    except KubeError as err:
        return error_response(err)


async def _version(request: web.Request) -> web.Response:
    return json_response(discovery.version_info())


async def _api(request: web.Request) -> web.Response:
    deps = request.app[KUBE]
    return json_response(discovery.core_versions(deps.server_address or request.host))


async def _apis(request: web.Request) -> web.Response:
    return json_response(discovery.group_list(request.app[KUBE].hidden))


async def _openapi_index(request: web.Request) -> web.Response:
    return web.Response(body=openapi.index(), content_type="application/json")


async def _openapi_doc(request: web.Request) -> web.Response:
    doc = openapi.document_for_path(request.match_info["tail"])
    if doc is None:
        return error_response(_not_found(request.path))
    return web.Response(body=doc, content_type="application/json")


async def _no_crds(request: web.Request) -> web.Response:
    return json_response(discovery.custom_resource_definitions())


async def _openapi_v2(request: web.Request) -> web.Response:
    if openapi_v2.wants_protobuf(request.headers.get("Accept", "")):
        return web.Response(body=openapi_v2.protobuf(), headers={"Content-Type": openapi_v2.PROTOBUF_TYPE})
    return json_response(openapi_v2.document())


def mount_kube(app: web.Application, deps: KubeDeps) -> None:
    app[KUBE] = deps
    app[watch.WATCHES] = set()
    app.on_shutdown.append(watch.end_watches)
    app.router.add_get("/version", _version)
    app.router.add_get("/api", _api)
    app.router.add_get("/apis", _apis)
    app.router.add_get("/openapi/v2", _openapi_v2)
    app.router.add_get("/openapi/v3", _openapi_index)
    app.router.add_get("/openapi/v3/{tail:.+}", _openapi_doc)
    app.router.add_get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", _no_crds)
    app.router.add_route("*", "/api/{tail:.+}", _resources)
    app.router.add_route("*", "/apis/{tail:.+}", _resources)
