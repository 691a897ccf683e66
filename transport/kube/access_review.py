"""authorization.k8s.io/v1 SelfSubjectAccessReview and SelfSubjectRulesReview, what
`kubectl auth can-i VERB RESOURCE` and `kubectl auth can-i --list` create (POST, 201,
the review back with its status; kubectl sends them as protobuf).

ksched has no RBAC: whoever reaches the API has passed its one check (the token
when one is configured, transport/http/app.py; anyone on a port without a token),
and may do everything. So every review is allowed and the rules are `*`. kubectl
itself warns when the resource is not in discovery."""
from __future__ import annotations

from typing import Any

from aiohttp import web

from transport.kube.request import Target, body_object, read_body
from transport.kube.status import bad_request, json_response

GROUP_VERSION = "authorization.k8s.io/v1"
REASON = "ksched has no RBAC: a client its API port admits (by its token, when one is set) may do everything"


def _review(body: dict[str, Any], kind: str) -> dict[str, Any]:
    if body.get("kind") not in (None, "", kind):
        raise bad_request(f"the kind of the provided object ({body.get('kind')}) does not match the resource ({kind})")
    spec = body.get("spec")
    if not isinstance(spec, dict):
        raise bad_request("spec: Required value: a review needs its spec")
    meta = body.get("metadata") if isinstance(body.get("metadata"), dict) else {}
    return {"kind": kind, "apiVersion": GROUP_VERSION, "metadata": {**meta, "creationTimestamp": None},
            "spec": spec}


async def access_review(request: web.Request, target: Target) -> web.Response:
    review = _review(body_object(await read_body(request)), "SelfSubjectAccessReview")
    spec = review["spec"]
    if not spec.get("resourceAttributes") and not spec.get("nonResourceAttributes"):
        raise bad_request("spec: Invalid value: exactly one of nonResourceAttributes or resourceAttributes "
                          "must be specified")
    review["status"] = {"allowed": True, "reason": REASON}
    return json_response(review, status=201)


async def rules_review(request: web.Request, target: Target) -> web.Response:
    review = _review(body_object(await read_body(request)), "SelfSubjectRulesReview")
    review["status"] = {"resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
                        "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}], "incomplete": False}
    return json_response(review, status=201)


HANDLERS = {"SelfSubjectAccessReview": access_review, "SelfSubjectRulesReview": rules_review}
