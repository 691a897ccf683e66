"""PATCH on an item or its /status: JSON merge, JSON patch, strategic merge (built-in
kinds only: 415 on PodGroups and Kueue's kinds, as kube-apiserver answers for custom
resources) and server-side apply.

A patch is applied to the stored object and written back with the stored
resourceVersion as precondition: a write in between is a Conflict, and the patch is
retried on the new object (kube-apiserver's GuaranteedUpdate). A patch that changes
nothing writes nothing.

Server-side apply (application/apply-patch+yaml) creates the object when it is
absent (201) and otherwise merges the applied fields (a strategic merge on built-in
kinds, a JSON merge on PodGroups and Kueue's kinds). Field ownership is not tracked:
there is no metadata.managedFields, no conflict between managers and
`--force-conflicts` has nothing to override; fields a manager stops applying are not
removed.

Unknown fields a patch brings in follow the request's fieldValidation, as
kube-apiserver's patch handler treats them (patch_fields.py).
"""
from __future__ import annotations

from typing import Any

from aiohttp import web

from transport.kube import patch as p
from transport.kube.patch_fields import check_applied, checked_patch
from transport.kube.request import KUBE, Target, body_object, decorate, read_body
from transport.kube.status import KubeError, json_response
from transport.kube.writes import current, field_validation, prepare, replace, store_error
from transport.protocol.wire import ApiError, Reason

RETRIES = 5
# groups served as CRDs are upstream (scheduler-plugins, Kueue): no strategic merge
CUSTOM_GROUPS = frozenset({"scheduling.x-k8s.io", "kueue.x-k8s.io"})


def _content_type(request: web.Request) -> str:
    return request.headers.get("Content-Type", "").split(";")[0].strip().lower()


def _unsupported(ctype: str, target: Target) -> KubeError:
    accepted = [t for t in p.PATCH_TYPES if not (t == p.STRATEGIC and target.resource.group in CUSTOM_GROUPS)]
    return KubeError(415, "UnsupportedMediaType", f"the body of the request was in an unknown format - "
                     f"accepted media types include: {', '.join(accepted)}")


def patched(ctype: str, have: dict[str, Any], body: Any, target: Target) -> dict[str, Any]:
    try:
        if ctype == p.MERGE_PATCH:
            out = p.merge_patch(have, body_object(body))
        elif ctype == p.JSON_PATCH:
            out = p.json_patch(have, body)
        elif ctype == p.STRATEGIC or target.resource.group not in CUSTOM_GROUPS:  # SMP, or apply on a built-in
            out = p.strategic_merge_for(target.resource.kind, have, body_object(body))
        else:  # apply on a PodGroup
            out = p.merge_patch(have, body_object(body))
    except p.PatchError as err:
        raise KubeError(422, "Invalid", f"the patch could not be applied: {err}") from None
    if not isinstance(out, dict):
        raise KubeError(422, "Invalid", "the patched object is not a JSON object")
    return out


async def patch(request: web.Request, target: Target) -> web.Response:
    if request.query.get("dryRun"):
        raise KubeError(400, "BadRequest", "dryRun is not supported by ksched: the request was not run")
    ctype = _content_type(request)
    if ctype not in p.PATCH_TYPES or (ctype == p.STRATEGIC and target.resource.group in CUSTOM_GROUPS):
        raise _unsupported(ctype, target)
    mode = field_validation(request)
    body = await read_body(request)
    if ctype == p.APPLY:
        check_applied(prepare(body_object(body), target))
        created = await _apply_create(request, target, body_object(body))
        if created is not None:
            return created
    for _ in range(RETRIES):
        have = await current(request, target)
        new = patched(ctype, have, body, target)
        meta = new.get("metadata") if isinstance(new.get("metadata"), dict) else {}
        if not meta.get("resourceVersion"):
            new["metadata"] = {**meta, "resourceVersion": (have.get("metadata") or {}).get("resourceVersion", "")}
        explicit = bool((_meta(body)).get("resourceVersion"))
        new, warnings = checked_patch(ctype, mode, prepare(new, target), decorate(have, target.resource), body)
        try:
            stored = await replace(request, target, new, have)
        except KubeError as err:
            if err.reason == "Conflict" and not explicit:
                continue  # someone wrote in between: patch the new version
            raise
        return json_response(decorate(stored, target.resource), warnings=warnings)
    raise KubeError(409, "Conflict", f'Operation cannot be fulfilled on {target.qualified} "{target.name}": '
                    "the object kept changing while the patch was applied; try again", name=target.name)


def _meta(body: Any) -> dict[str, Any]:
    meta = body.get("metadata") if isinstance(body, dict) else None
    return meta if isinstance(meta, dict) else {}


async def _apply_create(request: web.Request, target: Target, body: dict[str, Any]) -> web.Response | None:
    """Server-side apply of an absent object creates it (201); None when it exists."""
    if target.sub:
        return None
    deps = request.app[KUBE]
    try:
        await deps.service.get(target.resource.kind, target.namespace, target.name)
        return None
    except ApiError as err:
        if err.reason != Reason.NOT_FOUND:
            raise store_error(err, target, target.name) from None
    obj = prepare(body, target)
    warnings: list[str] = []
    try:
        # a client's manifest: the decode stage and the namespace's existence, as a create's
        # (its unknown fields were refused already, so none is left to judge)
        stored = await deps.service.create(obj, "Ignore", warnings)
    except ApiError as err:
        if err.reason == Reason.ALREADY_EXISTS:
            return None  # created in between: merge into it
        raise store_error(err, target, target.name) from None
    return json_response(decorate(stored, target.resource), status=201, warnings=warnings)
