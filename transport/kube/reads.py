"""GET on items and collections: get, list (label/field selectors, limit/continue,
one namespace or all), Table output when asked. Watches are in watch.py."""
from __future__ import annotations

from typing import Any

from aiohttp import web

from transport.kube import table
from transport.kube.request import KUBE, Target, decorate
from transport.kube.status import KubeError, bad_request, from_api_error, json_response
from transport.protocol.wire import ApiError, Reason


def _store_error(err: ApiError, target: Target, name: str = "") -> KubeError:
    if err.reason == Reason.INVALID and ("Selector" in err.message or "selector" in err.message):
        return bad_request(err.message.split(": ", 1)[-1] if "field label" in err.message else err.message)
    if err.reason == Reason.INVALID and err.message.startswith("continue: "):  # etcd3 store's DecodeContinue: 400
        return bad_request(f"invalid continue token: {err.message.removeprefix('continue: ')}")
    if err.reason == Reason.EXPIRED:
        return KubeError(410, "Expired", "The provided continue parameter is too old to display a consistent "
                         "list result. You can start a new list without the continue parameter.")
    return from_api_error(err, target.qualified, name, target.resource.group)


async def get_item(request: web.Request, target: Target) -> web.Response:
    deps = request.app[KUBE]
    res = target.resource
    try:
        raw = await deps.service.get(res.kind, target.namespace, target.name)
    except ApiError as err:
        raise _store_error(err, target, target.name) from None
    return await _respond(request, target, decorate(raw, res), single=True)


async def list_items(request: web.Request, target: Target) -> web.Response:
    deps = request.app[KUBE]
    res = target.resource
    q = request.query
    try:
        limit = int(q.get("limit") or 0)
    except ValueError:
        raise bad_request(f"limit: must be an integer, not {q.get('limit')!r}") from None
    try:
        items, rv, token = await deps.service.list(res.kind, target.namespace, q.get("labelSelector", ""),
                                                   q.get("fieldSelector", ""), max(limit, 0), q.get("continue", ""))
    except ApiError as err:
        raise _store_error(err, target) from None
    meta: dict[str, Any] = {"resourceVersion": str(rv)}
    if token:
        meta["continue"] = token
    return await _respond(request, target, [decorate(i, res) for i in items], list_meta=meta)


async def related_objects(request: web.Request, kind: str, items: list[dict[str, Any]]
                          ) -> dict[str, list[dict[str, Any]]]:
    """The objects `kind`'s Table columns count (table.related_kinds): a PodGroup's
    namespace's pods, every Workload and LocalQueue for Kueue's queues."""
    deps = request.app[KUBE]
    kinds, per_namespace = table.related_kinds(kind)
    namespaces = sorted({(i.get("metadata") or {}).get("namespace", "default") for i in items}) \
        if per_namespace else [""]
    out: dict[str, list[dict[str, Any]]] = {}
    for k in kinds:
        for ns in namespaces:
            found, _, _ = await deps.service.list(k, ns, "", "")
            out.setdefault(k, []).extend(found)
    return out


async def _respond(request: web.Request, target: Target, body: Any, *, single: bool = False,
                   list_meta: dict[str, Any] | None = None) -> web.Response:
    res = target.resource
    if table.wants_table(request.headers.get("Accept", "")):
        items = [body] if single else body
        related = await related_objects(request, res.kind, items)
        return json_response(table.to_table(res.kind, items, request.app[KUBE].now(), list_meta=list_meta or {},
                                            include_object=request.query.get("includeObject", "Metadata"),
                                            related=related))
    if single:
        return json_response(body)
    return json_response({"kind": f"{res.api_kind}List", "apiVersion": res.group_version, "metadata": list_meta,
                          "items": body})


async def read(request: web.Request, target: Target) -> web.Response:
    """GET: an item or a collection, as JSON or as a Table."""
    if target.name:
        return await get_item(request, target)
    return await list_items(request, target)
