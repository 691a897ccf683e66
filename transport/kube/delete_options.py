"""DeleteOptions, from a DELETE's body or its query (gracePeriodSeconds,
propagationPolicy, orphanDependents), judged as kube-apiserver's
ValidateDeleteOptions judges them:

- preconditions.uid / preconditions.resourceVersion make the delete conditional: the
  store removes the object only if it still has them, else 409 Conflict
  ("Precondition failed: UID in precondition: ..., UID in object meta: ...");
- propagationPolicy other than Foreground, Background or Orphan, or given with
  orphanDependents, is 422 `DeleteOptions.meta.k8s.io "" is invalid: ...`;
- dryRun is refused as on every write (ksched runs no dry runs);
- gracePeriodSeconds and the propagation policy change nothing else: a deletion is
  immediate and ksched keeps no dependents (no garbage collector).
A body that is not a JSON object, or fields of the wrong type, are 400.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aiohttp import web

from transport.kube.status import KubeError, bad_request

POLICIES = ("Foreground", "Background", "Orphan")


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteOptions:
    uid: str = ""  # preconditions; "" for none
    resource_version: str = ""


def _invalid(field: str, text: str) -> KubeError:
    return KubeError(422, "Invalid", f'DeleteOptions.meta.k8s.io "" is invalid: {field}: {text}',
                     kind="DeleteOptions", group="meta.k8s.io",
                     causes=[{"reason": "FieldValueNotSupported" if "Unsupported" in text else "FieldValueInvalid",
                              "message": text, "field": field}])


def _typed(body: dict[str, Any], key: str, types: tuple[type, ...], what: str) -> Any:
    value = body.get(key)
    if value is not None and (not isinstance(value, types) or (bool not in types and isinstance(value, bool))):
        raise bad_request(f"the body of the request could not be decoded as DeleteOptions: {key} must be {what}")
    return value


def delete_options(request: web.Request, body: Any) -> DeleteOptions:
    """The request's DeleteOptions (body first, as kube-apiserver reads them, else the query)."""
    if body is None:
        q = request.query
        body = {k: q[k] for k in ("propagationPolicy",) if k in q}
        if "orphanDependents" in q:
            body["orphanDependents"] = q["orphanDependents"].lower() in ("1", "t", "true")
    if not isinstance(body, dict):
        raise bad_request("the body of the request could not be decoded as DeleteOptions: it must be a JSON object")
    _typed(body, "gracePeriodSeconds", (int,), "an integer")
    policy = _typed(body, "propagationPolicy", (str,), "a string")
    orphan = _typed(body, "orphanDependents", (bool,), "a boolean")
    dry_run = _typed(body, "dryRun", (list,), "a list of strings")
    pre = _typed(body, "preconditions", (dict,), "an object") or {}
    uid = _typed(pre, "uid", (str,), "a string") or ""
    rv = _typed(pre, "resourceVersion", (str,), "a string") or ""
    if policy is not None and policy not in POLICIES:
        raise _invalid("propagationPolicy", f'Unsupported value: "{policy}": supported values: '
                       + ", ".join(f'"{p}"' for p in (*POLICIES, "nil")))
    if policy is not None and orphan is not None:
        raise _invalid("propagationPolicy", f'Invalid value: "{policy}": orphanDependents and deletionPropagation '
                       "cannot be both set")
    if dry_run:
        raise bad_request("dryRun is not supported by ksched: the request was not run")
    return DeleteOptions(uid=uid, resource_version=rv)
