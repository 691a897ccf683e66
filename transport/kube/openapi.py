"""A minimal OpenAPI v3: the index and, per group-version, one PATCH operation per
kind tagged with x-kubernetes-group-version-kind and a `fieldValidation` query
parameter. That is what kubectl's default `--validate=strict` checks before
`create -f`/`apply -f` (cli-runtime query_param_verifier_v3.go): without it those
commands fail before sending anything. The server then validates the fields itself.

strategic-merge-patch+json is left out of the request body types on purpose: if
listed, kubectl's client-side apply tries to build the patch from the (empty)
schemas and warns before falling back to its compiled-in types.
"""
from __future__ import annotations

import hashlib
import json
from functools import lru_cache
from transport.kube import openapi_schemas
from framework.api.api_resources import Resource, group_versions

QUERY_PARAMS = (("fieldValidation", "string"), ("fieldManager", "string"), ("dryRun", "string"), ("force", "boolean"))
PATCH_TYPES = ("application/json-patch+json", "application/merge-patch+json", "application/apply-patch+yaml")
_PARAMS = [{"name": n, "in": "query", "schema": {"type": t}} for n, t in QUERY_PARAMS]
_BODY = {"content": {t: {"schema": {"type": "object"}} for t in PATCH_TYPES}, "required": True}


def _prefix(gv: str) -> str:
    return f"api/{gv}" if "/" not in gv else f"apis/{gv}"


def item_path(r: Resource) -> str:
    ns = "namespaces/{namespace}/" if r.namespaced else ""
    return f"/{_prefix(r.group_version)}/{ns}{r.plural}/{{name}}"


@lru_cache(maxsize=None)
def document(gv_name: str) -> bytes | None:
    for gv in group_versions():
        if gv.name != gv_name or not any(r.stored for r in gv.resources):
            continue  # a group of verbs only (authorization.k8s.io's reviews) has no kind to patch
        paths = {item_path(r): {"patch": {
            "operationId": f"patch{r.api_kind}", "x-kubernetes-action": "patch",
            "x-kubernetes-group-version-kind": {"group": r.group, "version": r.version, "kind": r.api_kind},
            "parameters": _PARAMS, "requestBody": _BODY, "responses": {"200": {"description": "OK"}}}}
            for r in gv.resources if r.stored}
        doc = {"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": "v1.32.0"}, "paths": paths,
               "components": {"schemas": openapi_schemas.components(gv.resources)}}
        return json.dumps(doc, sort_keys=True).encode()
    return None


@lru_cache(maxsize=1)
def index() -> bytes:
    paths = {}
    for gv in group_versions():
        doc = document(gv.name)
        if doc is None:
            continue
        digest = hashlib.sha256(doc).hexdigest()[:16].upper()  # kubectl caches each document by this hash
        paths[_prefix(gv.name)] = {"serverRelativeURL": f"/openapi/v3/{_prefix(gv.name)}?hash={digest}"}
    return json.dumps({"paths": paths}).encode()


def document_for_path(tail: str) -> bytes | None:
    """The document at /openapi/v3/<tail> (`api/v1`, `apis/<group>/<version>`)."""
    if tail.startswith("api/"):
        return document(tail[len("api/"):])
    if tail.startswith("apis/"):
        return document(tail[len("apis/"):])
    return None
