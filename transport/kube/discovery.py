"""Discovery: GET /version, /api, /apis, /apis/{group}, /api/v1 and /apis/{group}/{version},
in the legacy (non-aggregated) form. client-go decides by the response's
Content-Type, so answering application/json to its aggregated Accept is correct;
it then fetches each group-version (kubectl caches the result for 6 hours).
"""
from __future__ import annotations

import platform
from typing import Any

from framework.api.api_resources import GroupVersion, Resource, group_versions

# The Kubernetes release whose API this one follows (the reference was recorded with 1.32).
KUBE_MAJOR, KUBE_MINOR = "1", "32"


def version_info() -> dict[str, Any]:
    from importlib.metadata import PackageNotFoundError, version

    try:
        ours = version("ksched")
    except PackageNotFoundError:
        ours = "0"
    return {"major": KUBE_MAJOR, "minor": KUBE_MINOR, "gitVersion": f"v{KUBE_MAJOR}.{KUBE_MINOR}.0+ksched-{ours}",
            "gitCommit": "", "gitTreeState": "clean", "buildDate": "1970-01-01T00:00:00Z",
            "goVersion": f"python{platform.python_version()}", "compiler": "cpython",
            "platform": f"{platform.system().lower()}/{platform.machine()}"}


def core_versions(server_address: str) -> dict[str, Any]:
    return {"kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}]}


def _group(gvs: list[GroupVersion]) -> dict[str, Any]:
    versions = [{"groupVersion": gv.name, "version": gv.version} for gv in gvs]
    return {"name": gvs[0].group, "versions": versions, "preferredVersion": versions[0]}


def _named_groups(hidden: frozenset[str]) -> dict[str, list[GroupVersion]]:
    out: dict[str, list[GroupVersion]] = {}
    for gv in group_versions(listed=True, hidden=hidden):
        if gv.group:
            out.setdefault(gv.group, []).append(gv)
    return out


def group_list(hidden: frozenset[str] = frozenset()) -> dict[str, Any]:
    return {"kind": "APIGroupList", "apiVersion": "v1",
            "groups": [_group(gvs) for gvs in _named_groups(hidden).values()]}


def group(name: str, hidden: frozenset[str] = frozenset()) -> dict[str, Any] | None:
    gvs = _named_groups(hidden).get(name)
    if gvs is None:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group(gvs)}


def _entries(r: Resource) -> list[dict[str, Any]]:
    verbs = sorted(r.verbs + (("deletecollection",) if "delete" in r.verbs else ()))
    main: dict[str, Any] = {"name": r.plural, "singularName": r.singular, "namespaced": r.namespaced,
                            "kind": r.api_kind, "verbs": verbs}
    if r.short_names:
        main["shortNames"] = list(r.short_names)
    if r.categories:
        main["categories"] = list(r.categories)
    out = [main]
    for sub in r.subresources:
        if sub == "binding":
            out.append({"name": f"{r.plural}/binding", "singularName": "", "namespaced": True, "kind": "Binding",
                        "verbs": ["create"]})
        else:
            out.append({"name": f"{r.plural}/{sub}", "singularName": "", "namespaced": r.namespaced,
                        "kind": r.api_kind, "verbs": ["get", "patch", "update"]})
    return out


def resource_list(group_version: str, hidden: frozenset[str] = frozenset()) -> dict[str, Any] | None:
    for gv in group_versions(listed=True, hidden=hidden):
        if gv.name == group_version:
            return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv.name,
                    "resources": [e for r in gv.resources for e in _entries(r)]}
    return None


def custom_resource_definitions() -> dict[str, Any]:
    """GET /apis/apiextensions.k8s.io/v1/customresourcedefinitions: none. Every kind
    ksched serves is built in. kubectl lists CRDs when neither OpenAPI document
    describes a manifest's kind (cli-runtime query_param_verifier.go HasCRD); a 404
    there fails `kubectl apply` before it sends anything, an empty list lets it go on
    to validate the manifest itself and reach the server (or say the kind is unknown)."""
    return {"kind": "CustomResourceDefinitionList", "apiVersion": "apiextensions.k8s.io/v1", "metadata": {},
            "items": []}
