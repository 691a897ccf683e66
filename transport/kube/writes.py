"""Writes: create (POST), update (PUT), delete (DELETE, also on a collection), the
status subresource and bindings. Patches are in patching.py. Every write goes
through the same store operations as the msgpack port (StoreService: create, update,
delete, bind), so both see the same validation, resourceVersions and events.

Writes to an object ignore its status and writes to /status change only the status
(kube-apiserver's strategies). The namespace comes from the URL; a body naming
another is refused as kube-apiserver refuses it.
"""
from __future__ import annotations

from typing import Any

from aiohttp import web

from actors.store.front_door import IMMORTAL_NAMESPACES
from framework.api.validation import is_dns1123_subdomain, show, validate_pod_update
from framework.kueue.versions import SERVED_VERSIONS

from transport.kube.delete_options import delete_options
from framework.api.api_resources import BY_KIND
from transport.kube.request import KUBE, Target, body_object, decorate, read_body
from transport.kube.status import KubeError, bad_request, from_api_error, invalid, json_response, success
from transport.protocol.wire import ApiError, Reason


def _refuse_dry_run(request: web.Request) -> None:
    if request.query.get("dryRun"):
        raise bad_request("dryRun is not supported by ksched: the request was not run")


def prepare(obj: dict[str, Any], target: Target, name_required: bool = False) -> dict[str, Any]:
    """The body with the kind, apiVersion and namespace its URL says; mismatches are 400."""
    res = target.resource
    kind = obj.get("kind")
    if kind not in (None, "", res.api_kind):
        raise bad_request(f"the kind of the provided object ({kind}) does not match the resource ({res.plural})")
    version = obj.get("apiVersion")
    if res.kind != res.api_kind and version not in (None, "", res.group_version):
        # a group-qualified kind (framework.api.groups): the body's group is the URL's
        raise bad_request(f"the API version in the data ({version}) does not match the expected API version "
                          f"({res.group_version})")
    meta = obj.get("metadata")
    meta = dict(meta) if isinstance(meta, dict) else {}
    if res.namespaced:
        given = meta.get("namespace")
        if given and target.namespace and given != target.namespace:
            raise bad_request("the namespace of the provided object does not match the namespace sent on the request")
        meta["namespace"] = target.namespace or given or "default"
    if target.name:
        if meta.get("name") and meta["name"] != target.name:
            raise bad_request(f"the name of the object ({meta['name']}) does not match the name on the URL "
                              f"({target.name})")
        meta["name"] = target.name
    elif name_required and not meta.get("name") and not meta.get("generateName"):
        raise invalid(res.api_kind, res.group, "",
                      (("metadata.name", "Required value: name or generateName is required"),))
    return {**obj, "kind": res.api_kind, "apiVersion": obj.get("apiVersion") or res.group_version, "metadata": meta}


FIELD_VALIDATION = ("Strict", "Warn", "Ignore")


def field_validation(request: web.Request) -> str:
    """The request's fieldValidation (kube-apiserver's default when absent: Warn)."""
    mode = request.query.get("fieldValidation") or "Warn"
    if mode not in FIELD_VALIDATION:
        raise bad_request(f'fieldValidation: Unsupported value: "{mode}": supported values: '
                          + ", ".join(f'"{m}"' for m in FIELD_VALIDATION))
    return mode


def store_error(err: ApiError, target: Target, name: str) -> KubeError:
    return from_api_error(err, target.qualified, name, target.resource.group)


async def create(request: web.Request, target: Target) -> web.Response:
    _refuse_dry_run(request)
    deps = request.app[KUBE]
    obj = prepare(body_object(await read_body(request)), target, name_required=True)
    name = obj["metadata"].get("name", "")
    warnings: list[str] = []
    try:
        stored = await deps.service.create(obj, field_validation(request), warnings)
    except ApiError as err:
        raise store_error(err, target, name) from None
    return json_response(decorate(stored, target.resource), status=201, warnings=warnings)


async def current(request: web.Request, target: Target) -> dict[str, Any]:
    """The stored object in the target's version (what a patch or update applies to)."""
    try:
        have = await request.app[KUBE].service.get(target.resource.kind, target.namespace, target.name)
    except ApiError as err:
        raise store_error(err, target, target.name) from None
    return decorate(have, target.resource) if target.resource.group_version in SERVED_VERSIONS else have


def with_sections(new: dict[str, Any], have: dict[str, Any], status_only: bool) -> dict[str, Any]:
    """`new` as a write to the object (status kept as stored) or to /status (all but
    the status kept as stored)."""
    if status_only:
        out = {k: v for k, v in have.items() if k != "status"}
        meta = dict(have.get("metadata") or {})
        rv = (new.get("metadata") or {}).get("resourceVersion")
        meta["resourceVersion"] = rv or meta.get("resourceVersion", "")
        out["metadata"] = meta
        if new.get("status") is not None:
            out["status"] = new["status"]
        return out
    out = {k: v for k, v in new.items() if k != "status"}
    if "status" in have:
        out["status"] = have["status"]
    return out


async def replace(request: web.Request, target: Target, new: dict[str, Any], have: dict[str, Any],
                  warnings: list[str] | None = None) -> dict[str, Any]:
    """Write `new` over `have` (both whole objects); an unchanged object is not written.
    With `warnings` (a PUT) the body is a client's manifest, decoded per its
    fieldValidation; patches merge into the stored object and keep the lenient decode."""
    obj = with_sections(new, have, target.sub == "status")
    want_rv = (obj.get("metadata") or {}).get("resourceVersion")
    if _same(obj, have) and want_rv in ("", None, (have.get("metadata") or {}).get("resourceVersion")):
        return have
    service = request.app[KUBE].service
    write = service.update_status if target.sub == "status" else service.update  # the status subresource's own write
    try:
        if warnings is None:
            return await write(obj)
        return await write(obj, field_validation(request), warnings)
    except ApiError as err:
        raise store_error(err, target, target.name) from None


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    def strip(o: dict[str, Any]) -> dict[str, Any]:
        meta = {k: v for k, v in (o.get("metadata") or {}).items() if k != "resourceVersion"}
        return {**{k: v for k, v in o.items() if k not in ("apiVersion", "kind")}, "metadata": meta}

    return strip(a) == strip(b)


# A pod's spec fields the server sets on create. A write that leaves out the first two
# changes the pod's spec (kube-apiserver: 422, ValidatePodUpdate), while the Priority
# admission plugin carries the other two over on update; the store carries all four over
# for its msgpack clients (a manifest applied again does not unbind its pod).
JUDGED_POD_FIELDS = ("nodeName", "priorityClassName")
CARRIED_POD_FIELDS = ("priority", "preemptionPolicy")


def check_pod_spec_kept(new: dict[str, Any], have: dict[str, Any], target: Target) -> None:
    """Refuse a PUT or patch that leaves out a pod's spec.nodeName or priorityClassName,
    in ValidatePodUpdate's words, where the store would keep the field and answer 200."""
    spec, was = new.get("spec"), have.get("spec")
    if target.resource.kind != "Pod" or target.sub or not isinstance(spec, dict) or not isinstance(was, dict):
        return  # a spec that is no object: the store's validation names the field
    if not any(spec.get(f) in (None, "") and was.get(f) not in (None, "") for f in JUDGED_POD_FIELDS):
        return
    carried = {f: was[f] for f in CARRIED_POD_FIELDS if spec.get(f) is None and f in was}
    errors = validate_pod_update({**new, "spec": {**spec, **carried}}, have)
    if errors:
        raise store_error(ApiError(Reason.INVALID, str(errors[0])), target, target.name)


async def update(request: web.Request, target: Target) -> web.Response:
    _refuse_dry_run(request)
    new = prepare(body_object(await read_body(request)), target)
    have = await current(request, target)
    check_pod_spec_kept(new, have, target)
    if not (new.get("metadata") or {}).get("resourceVersion"):
        new["metadata"]["resourceVersion"] = ""  # an unconditional update, as kube allows for these kinds
    warnings: list[str] = []
    stored = await replace(request, target, new, have, warnings)
    return json_response(decorate(stored, target.resource), warnings=warnings)


def _delete_error(err: ApiError, target: Target, name: str) -> KubeError:
    if err.reason == Reason.CONFLICT and err.message.startswith("Precondition failed"):
        return KubeError(409, "Conflict", f'Operation cannot be fulfilled on {target.qualified} "{name}": '
                         f"{err.message}", name=name, group=target.resource.group,
                         kind=target.qualified.split(".")[0])
    return store_error(err, target, name)


async def delete(request: web.Request, target: Target) -> web.Response:
    _refuse_dry_run(request)
    deps = request.app[KUBE]
    options = delete_options(request, await read_body(request))
    try:
        gone = await deps.service.delete(target.resource.kind, target.namespace, target.name, options.uid,
                                         options.resource_version)
    except ApiError as err:
        raise _delete_error(err, target, target.name) from None
    return json_response(decorate(gone, target.resource))


def _refused(item: dict[str, Any], kind: str, uid: str, resource_version: str) -> bool:
    """Whether the store will refuse to delete this item of a collection: a namespace
    that may not be deleted, or one that fails the request's preconditions. These are
    tried first, so a refused deletecollection has deleted nothing (kube-apiserver
    deletes item by item, and answers the first refusal after deleting the others)."""
    meta = item.get("metadata") or {}
    return ((kind == "Namespace" and meta.get("name") in IMMORTAL_NAMESPACES)
            or bool(uid and meta.get("uid") != uid)
            or bool(resource_version and meta.get("resourceVersion") != resource_version))


async def delete_collection(request: web.Request, target: Target) -> web.Response:
    _refuse_dry_run(request)
    deps = request.app[KUBE]
    q = request.query
    res = target.resource
    options = delete_options(request, await read_body(request))
    try:
        items, rv, _ = await deps.service.list(res.kind, target.namespace, q.get("labelSelector", ""),
                                               q.get("fieldSelector", ""))
    except ApiError as err:
        raise bad_request(err.message) from None
    gone = []
    for item in sorted(items, key=lambda i: not _refused(i, res.kind, options.uid, options.resource_version)):
        meta = item.get("metadata") or {}
        try:
            gone.append(decorate(await deps.service.delete(res.kind, meta.get("namespace", ""), meta["name"],
                                                           options.uid, options.resource_version), res))
        except ApiError as err:
            if err.reason != Reason.NOT_FOUND:
                raise _delete_error(err, target, meta["name"]) from None
    return json_response({"kind": f"{res.api_kind}List", "apiVersion": res.group_version,
                          "metadata": {"resourceVersion": str(rv)}, "items": gone})


def _binding_target(body: dict[str, Any]) -> str:
    """The Binding's target.name ("" when missing); a target or name of another JSON
    type is refused as kube-apiserver's decoder refuses it."""
    ref = body.get("target")
    if ref is None:
        return ""
    if not isinstance(ref, dict):
        raise bad_request(f"json: cannot unmarshal {_json_type(ref)} into Go struct field Binding.target of type "
                          "v1.ObjectReference")
    name = ref.get("name")
    if name is not None and not isinstance(name, str):
        raise bad_request(f"json: cannot unmarshal {_json_type(name)} into Go struct field ObjectReference.target.name "
                          "of type string")
    return name or ""


def _json_type(value: Any) -> str:
    return {bool: "bool", int: "number", float: "number", str: "string", list: "array", dict: "object"}.get(
        type(value), "value")


async def bind(request: web.Request, target: Target) -> web.Response:
    """pods/{name}/binding and namespaces/{ns}/bindings (the pod is the Binding's
    metadata.name). Only pods that no ksched profile schedules may be bound by a
    client, as another scheduler binds through kube-apiserver."""
    _refuse_dry_run(request)
    deps = request.app[KUBE]
    body = body_object(await read_body(request))
    meta = body.get("metadata") if isinstance(body.get("metadata"), dict) else {}
    name = target.name or str(meta.get("name") or "")
    node = _binding_target(body)
    pods = BY_KIND["Pod"]
    pod_target = Target(pods, target.namespace, name, "binding")
    if not name:
        raise invalid("Binding", "", "", (("metadata.name", "Required value: name is required"),))
    if not node:
        raise invalid("Binding", "", name, (("target.name", "Required value"),))
    if meta.get("namespace") and meta["namespace"] != target.namespace:
        raise bad_request("the namespace of the provided object does not match the namespace sent on the request")
    problems = is_dns1123_subdomain(node)
    if problems:  # (kube-apiserver checks only that it is there; ksched stores no pod its validation refuses)
        raise invalid("Binding", "", name, (("target.name", f"Invalid value: {show(node)}: {'; '.join(problems)}"),))
    pod = await current(request, Target(pods, target.namespace, name))
    scheduler = (pod.get("spec") or {}).get("schedulerName") or "default-scheduler"
    if scheduler in deps.profiles:
        raise KubeError(403, "Forbidden", f'pods "{name}" is forbidden: ksched\'s profile "{scheduler}" schedules '
                        "this pod; a client may bind only pods whose spec.schedulerName no ksched profile serves",
                        name=name, kind="pods")
    try:
        await deps.service.bind(target.namespace, name, node, str(meta.get("uid") or ""))
    except ApiError as err:
        if err.reason == Reason.CONFLICT:
            bound = (pod.get("spec") or {}).get("nodeName") or node
            raise KubeError(409, "Conflict", f'Operation cannot be fulfilled on pods/binding "{name}": pod {name} is '
                            f'already assigned to node "{bound}"', name=name, kind="pods/binding") from None
        raise store_error(err, pod_target, name) from None
    return json_response(success(201), status=201)
