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

import json
from typing import Any

from aiohttp import web

from transport.kube import patch as p
from transport.kube.patch_fields import check_applied, checked_patch
from transport.kube.request import KUBE, Target, body_object, decorate, read_body
from transport.kube.status import KubeError, bad_request, json_response
from transport.kube.writes import (
    check_pod_spec_kept, current, field_validation, prepare, replace, store_error,
)
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
            out = _json_patched(have, body)
        elif ctype == p.STRATEGIC or target.resource.group not in CUSTOM_GROUPS:  # SMP, or apply on a built-in
            out = p.strategic_merge_for(target.resource.kind, have, body_object(body))
        else:  # apply on a PodGroup
            out = p.merge_patch(have, body_object(body))
    except p.PatchError as err:
        raise KubeError(422, "Invalid", f"the patch could not be applied: {err}") from None
    if not isinstance(out, dict):
        raise KubeError(422, "Invalid", "the patched object is not a JSON object")
    return out


# kube-apiserver answers every JSON patch that cannot be applied with this message and
# no details (NewGenericServerResponse(422, ...) with no resource): kubectl prints
# "The request is invalid: the server rejected our request due to an error in our request".
JSON_PATCH_REJECTED = "the server rejected our request due to an error in our request"


def _json_patched(have: dict[str, Any], body: Any) -> Any:
    """An RFC 6902 patch applied as kube-apiserver's patch handler applies it: not a
    patch at all is 400, too many operations 413, an operation that fails 422."""
    try:
        return p.json_patch(have, body)
    except p.PatchDecodeError as err:
        raise bad_request(str(err)) from None
    except p.TooManyOperations as err:
        raise KubeError(413, "RequestEntityTooLarge", f"Request entity too large: {err}") from None
    except p.PatchError:
        raise KubeError(422, "Invalid", JSON_PATCH_REJECTED) from None


async def patch(request: web.Request, target: Target) -> web.Response:
    if request.query.get("dryRun"):
        raise KubeError(400, "BadRequest", "dryRun is not supported by ksched: the request was not run")
    ctype = _content_type(request)
    if ctype not in p.PATCH_TYPES or (ctype == p.STRATEGIC and target.resource.group in CUSTOM_GROUPS):
        raise _unsupported(ctype, target)
    check_patch_options(request, ctype)
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
        check_name(new, target)
        meta = new.get("metadata") if isinstance(new.get("metadata"), dict) else {}
        have_rv = (have.get("metadata") or {}).get("resourceVersion", "")
        # a resourceVersion the patch set makes the write conditional on it (no retry)
        explicit = meta.get("resourceVersion") not in (None, "", have_rv)
        if not meta.get("resourceVersion"):
            new["metadata"] = {**meta, "resourceVersion": have_rv}
        new, warnings = checked_patch(ctype, mode, prepare(new, target), decorate(have, target.resource), body)
        check_pod_spec_kept(new, have, target)
        try:
            stored = await replace(request, target, new, have)
        except KubeError as err:
            if err.reason == "Conflict" and not explicit:
                continue  # someone wrote in between: patch the new version
            raise
        return json_response(decorate(stored, target.resource), warnings=warnings)
    raise KubeError(409, "Conflict", f'Operation cannot be fulfilled on {target.qualified} "{target.name}": '
                    "the object kept changing while the patch was applied; try again", name=target.name)


FIELD_MANAGER_MAX = 128  # bytes (apimachinery's FieldManagerMaxLength)


def check_patch_options(request: web.Request, ctype: str) -> None:
    """PatchOptions as ValidatePatchOptions judges them: server-side apply needs a
    fieldManager, force is for apply only, a fieldManager is printable and at most 128
    bytes; 422 `PatchOptions.meta.k8s.io "" is invalid: ...`."""
    q = request.query
    manager = q.get("fieldManager", "")
    errors = []
    if ctype == p.APPLY and not manager:
        errors.append("fieldManager: Required value: is required for apply patch")
    if ctype != p.APPLY and "force" in q:
        errors.append("force: Forbidden: may not be specified for non-apply patch")
    if len(manager.encode()) > FIELD_MANAGER_MAX:
        errors.append(f"fieldManager: Too long: may not be more than {FIELD_MANAGER_MAX} bytes")
    bad = next(((i, c) for i, c in enumerate(manager) if not c.isprintable()), None)
    if bad is not None:
        errors.append(f"fieldManager: Invalid value: {json.dumps(manager)}: invalid character "
                      f"U+{ord(bad[1]):04X} (at position {bad[0]})")
    if errors:
        text = errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"
        raise KubeError(422, "Invalid", f'PatchOptions.meta.k8s.io "" is invalid: {text}', kind="PatchOptions",
                        group="meta.k8s.io")


def check_name(obj: dict[str, Any], target: Target) -> None:
    """The patched object keeps the name and namespace of its URL (apiserver's checkName:
    400, in its words; a create or update body is judged by writes.prepare)."""
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    name = meta.get("name")
    if name != target.name:
        shown = name if isinstance(name, str) else ("" if name is None else json.dumps(name))
        raise bad_request(f"the name of the object ({shown}) does not match the name on the URL ({target.name})")
    ns = meta.get("namespace")
    if target.namespace and ns not in (None, "", target.namespace):
        shown = ns if isinstance(ns, str) else json.dumps(ns)
        raise bad_request(f"the namespace of the object ({shown}) does not match the namespace on the request "
                          f"({target.namespace})")


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
