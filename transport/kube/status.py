"""Errors as kube-apiserver's `Status` objects (reason, code, details), and the
mapping from the store's refusals (transport.protocol.wire.ApiError) to them.

kubectl prints `Error from server (<reason>): <message>`; the Python client raises
ApiException(status=code) with this JSON as its body.
"""
from __future__ import annotations

import json
from typing import Any

from aiohttp import web

from framework.api.api_resources import RESOURCES, Resource
from transport.protocol.wire import ApiError, Reason

# wire reason -> (kube reason, HTTP code)
_CODES: dict[str, tuple[str, int]] = {
    Reason.INVALID: ("Invalid", 422),
    Reason.BAD_REQUEST: ("BadRequest", 400),
    Reason.FORBIDDEN: ("Forbidden", 403),
    Reason.NOT_FOUND: ("NotFound", 404),
    Reason.ALREADY_EXISTS: ("AlreadyExists", 409),
    Reason.CONFLICT: ("Conflict", 409),
    Reason.UNAUTHORIZED: ("Unauthorized", 401),
    Reason.TOO_LARGE: ("RequestEntityTooLarge", 413),
    Reason.UNAVAILABLE: ("ServiceUnavailable", 503),
    Reason.INTERNAL: ("InternalError", 500),
    Reason.EXPIRED: ("Expired", 410),
    Reason.TOO_MANY_REQUESTS: ("TooManyRequests", 429),
}


class KubeError(Exception):
    """A request refused with a Status: `reason` and `code` as kube-apiserver's."""

    def __init__(self, code: int, reason: str, message: str, *, name: str = "", kind: str = "",
                 group: str = "", causes: list[dict[str, str]] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details: dict[str, Any] = {k: v for k, v in (("name", name), ("group", group), ("kind", kind)) if v}
        if causes:
            self.details["causes"] = causes

    def status(self) -> dict[str, Any]:
        return failure(self.code, self.reason, self.message, self.details)


def failure(code: int, reason: str, message: str, details: dict[str, Any] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                           "message": message, "reason": reason, "code": code}
    if details:
        out["details"] = details
    return out


def success(code: int = 200) -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": code}


def bad_request(message: str) -> KubeError:
    return KubeError(400, "BadRequest", message)


def from_api_error(err: ApiError, qualified: str = "", name: str = "", group: str = "") -> KubeError:
    """The store's refusal as kube-apiserver words it for `qualified` ("pods",
    "podgroups.scheduling.x-k8s.io") and the object's `name`. NotFound, AlreadyExists
    and Conflict name the resource (details.kind "pods", apierrors.NewNotFound);
    Invalid names the kind ("Pod") and lists the refused fields (apierrors.NewInvalid)."""
    reason, code = _CODES.get(err.reason, ("InternalError", 500))
    kind = qualified.split(".")[0]
    message = err.message
    if err.reason == Reason.NOT_FOUND and err.message.startswith('namespaces "'):
        # The object's namespace is missing (NamespaceLifecycle): the store's message names it.
        ns = err.message.split('"')[1]
        return KubeError(code, reason, err.message, name=ns, kind="namespaces")
    if err.reason == Reason.INVALID and qualified and err.causes:
        res = _by_qualified(qualified)
        return invalid(res.api_kind if res else kind, res.group if res else group, name, err.causes)
    if qualified and name:
        if err.reason == Reason.NOT_FOUND:
            message = f'{qualified} "{name}" not found'
        elif err.reason == Reason.ALREADY_EXISTS:
            message = f'{qualified} "{name}" already exists'
        elif err.reason == Reason.CONFLICT and "has been modified" in err.message:
            message = (f'Operation cannot be fulfilled on {qualified} "{name}": the object has been modified; '
                       "please apply your changes to the latest version and try again")
        elif err.reason == Reason.INVALID:
            message = f'{kind_title(qualified)} "{name}" is invalid: {err.message}'
    return KubeError(code, reason, message, name=name, group=group, kind=kind)


# field.ErrorType's words (ErrorBody starts with them) -> the StatusCause reason
_CAUSE_TYPES = (("Not found", "FieldValueNotFound"), ("Required value", "FieldValueRequired"),
                ("Duplicate value", "FieldValueDuplicate"), ("Invalid value", "FieldValueInvalid"),
                ("Unsupported value", "FieldValueNotSupported"), ("Forbidden", "FieldValueForbidden"),
                ("Too long", "FieldValueTooLong"), ("Too many", "FieldValueTooMany"),
                ("Internal error", "InternalError"))


def cause(field: str, detail: str) -> dict[str, str]:
    """One StatusCause: the field path, the error body, and its type read from the
    body's first words (our own wordings without them are FieldValueInvalid)."""
    kind = next((t for words, t in _CAUSE_TYPES if detail.startswith(words)), "FieldValueInvalid")
    out = {"reason": kind, "message": detail}
    if field:
        out["field"] = field
    return out


def invalid(kind: str, group: str, name: str, errors: tuple[tuple[str, str], ...]) -> KubeError:
    """422 Invalid as apierrors.NewInvalid: `Pod "neg" is invalid: <field>: <body>`
    (several errors as `[a, b]`), details {name, group, kind, causes}."""
    texts = list(dict.fromkeys(f"{f}: {d}" if f else d for f, d in errors))
    listed = texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"
    title = f"{kind}.{group}" if group else kind
    return KubeError(422, "Invalid", f'{title} "{name}" is invalid: {listed}', name=name, group=group, kind=kind,
                     causes=[cause(f, d) for f, d in errors])


def _by_qualified(qualified: str) -> Resource | None:
    return next((r for r in RESOURCES if r.qualified == qualified), None)


def kind_title(qualified: str) -> str:
    """`Pod`, `PodGroup.scheduling.x-k8s.io`: how kube-apiserver names the kind in an Invalid message."""
    r = _by_qualified(qualified)
    if r is None:
        return qualified
    return r.api_kind if not r.group else f"{r.api_kind}.{r.group}"


def json_response(body: Any, status: int = 200, headers: dict[str, str] | None = None,
                  warnings: list[str] | None = None) -> web.Response:
    """A JSON reply; each warning as a `Warning: 299 - "text"` header (kubectl prints
    them as `Warning: text` lines)."""
    resp = web.Response(body=json.dumps(body, separators=(",", ":")).encode(), status=status,
                        content_type="application/json", headers=headers)
    for text in dict.fromkeys(warnings or ()):
        resp.headers.add("Warning", '299 - "' + text.replace("\\", "\\\\").replace('"', '\\"') + '"')
    return resp


def error_response(err: KubeError) -> web.Response:
    return json_response(err.status(), status=err.code)
