"""What the resourceclaim controller (pkg/controller/resourceclaim) decides, as pure
functions over stored objects: which of a pod's claims still need a ResourceClaim made
from their template, the claim it makes (generateName `<pod>-<claim>-`, the pod as
controlling owner, the template's labels and annotations plus
resource.kubernetes.io/pod-claim-name, the template's claim spec), the pod's
status.resourceClaimStatuses, which reservations of a claim are stale, and whether a
generated claim is no longer needed. The actor that does it is
actors/resourceclaims/controller.py."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Iterable

from framework.api.dra_kinds import API_VERSION, POD_CLAIM_NAME_ANNOTATION, ResourceClaim, ResourceClaimTemplate
from framework.api.objects import Pod

MAX_BASE_LEN = 57  # room for the 5 random characters the API server adds, in a 63-character name


def _is_map(value: Any) -> bool:
    return type(value) is dict or isinstance(value, Mapping)  # (a dict asked first: the ABC's check costs more)


def generate_name(pod_name: str, claim_name: str) -> str:
    """`<pod>-<claim>-`, both parts cut in proportion to their length when too long."""
    base = f"{pod_name}-{claim_name}-"
    if len(base) > MAX_BASE_LEN:
        base = (pod_name[: len(pod_name) * MAX_BASE_LEN // len(base)] + "-"
                + claim_name[: len(claim_name) * MAX_BASE_LEN // len(base)])
    return base


_LISTS_KEPT = 4096
# id(spec.resourceClaims list) -> (the list, its template claims, its named claims)
_by_claims: dict[int, tuple[Any, tuple[tuple[str, str], ...], tuple[str, ...]]] = {}


def _claims_read(pod: Pod) -> tuple[Any, tuple[tuple[str, str], ...], tuple[str, ...]]:
    """spec.resourceClaims read once per stored list (never changed in place; the
    controller and the plugin ask about a pod several times)."""
    claims = pod.spec.get("resourceClaims") or ()
    known = _by_claims.get(id(claims))
    if known is not None and known[0] is claims:
        return known
    templates, named = [], []
    for claim in claims:
        if not _is_map(claim):
            continue
        if claim.get("resourceClaimTemplateName"):
            templates.append((str(claim.get("name", "")), str(claim["resourceClaimTemplateName"])))
        if claim.get("resourceClaimName"):
            named.append(str(claim["resourceClaimName"]))
    if len(_by_claims) >= _LISTS_KEPT:
        _by_claims.clear()
    known = _by_claims[id(claims)] = (claims, tuple(templates), tuple(named))
    return known


def template_claims(pod: Pod) -> tuple[tuple[str, str], ...]:
    """(pod claim name, template name) of each of the pod's claims made from a template."""
    return _claims_read(pod)[1]


def named_claims(pod: Pod) -> tuple[str, ...]:
    """The claims the pod names by resourceClaimName (claim_names with nothing recorded)."""
    return _claims_read(pod)[2]


_by_list: dict[int, tuple[Any, Mapping[str, str | None]]] = {}  # id(statuses list) -> (the list, its map)


def claim_statuses(pod: Pod) -> Mapping[str, str | None]:
    """pod claim name -> the generated claim's name, from status.resourceClaimStatuses
    (read only: worked out once per stored list, which is never changed in place, and
    shared; the plugin and the controller ask about a pod about nine times)."""
    statuses = (pod.raw.get("status") or {}).get("resourceClaimStatuses")
    if not statuses:
        return {}
    known = _by_list.get(id(statuses))
    if known is not None and known[0] is statuses:
        return known[1]
    out = {str(s.get("name", "")): s.get("resourceClaimName") for s in statuses if _is_map(s)}
    if len(_by_list) >= _LISTS_KEPT:
        _by_list.clear()
    _by_list[id(statuses)] = (statuses, out)
    return out


def claim_names(pod: Pod, recorded: Mapping[str, str | None]) -> list[tuple[str, bool]]:
    """The claims the pod uses, each with whether it was generated for the pod (then it
    must be owned by it): a `resourceClaimName` as given, a template's claim as recorded."""
    out = []
    for claim in pod.spec.get("resourceClaims") or []:
        if not _is_map(claim):
            continue
        if claim.get("resourceClaimName"):
            out.append((str(claim["resourceClaimName"]), False))
        elif recorded.get(str(claim.get("name", ""))):
            out.append((str(recorded[str(claim["name"])]), True))
    return out


# (name, uid) of the pod controlling the claim, ("", "") when none does (read once per
# parsed claim: the controller and the plugin ask about a claim many times). The method
# itself, not a function calling it: a frame fewer at each of the ~7 asks a DRA pod.
owning_pod = ResourceClaim.controlling_pod


def is_for_pod(claim: ResourceClaim, pod: Pod) -> bool:
    return claim.controlling_pod()[1] == pod.uid


def find_generated(claims: Iterable[ResourceClaim], pod: Pod, pod_claim: str) -> ResourceClaim | None:
    """A claim made earlier for this pod claim (owned by the pod, annotated with its name):
    after a crash between creating the claim and writing the pod's status, it is found
    again rather than made twice."""
    for claim in claims:
        if claim.namespace == pod.namespace and is_for_pod(claim, pod) and claim.pod_claim_name == pod_claim:
            return claim
    return None


def claim_from_template(pod: Pod, pod_claim: str, template: ResourceClaimTemplate) -> dict[str, Any]:
    """The ResourceClaim the controller creates for `pod_claim` of `pod`."""
    meta = template.claim_metadata
    annotations = {**(meta.get("annotations") or {}), POD_CLAIM_NAME_ANNOTATION: pod_claim}
    claim_meta: dict[str, Any] = {
        "generateName": generate_name(pod.name, pod_claim), "namespace": pod.namespace,
        "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": pod.name, "uid": pod.uid,
                             "controller": True, "blockOwnerDeletion": True}],
        "annotations": annotations}
    if meta.get("labels"):
        claim_meta["labels"] = dict(meta["labels"])
    return {"apiVersion": API_VERSION, "kind": "ResourceClaim", "metadata": claim_meta,
            "spec": template.claim_spec}  # the template's own (never changed in place): see Create.template


def merged_claim_statuses(entries: Any, made: Mapping[str, str]) -> list[dict[str, Any]]:
    """status.resourceClaimStatuses with `made` (pod claim name -> claim name) merged in by
    name, as a server-side apply of the list (a map keyed by name) does. (Loops, not
    comprehensions: the store merges twice a DRA pod.)"""
    out: list[dict[str, Any]] = []
    known = set()
    for e in entries or []:
        if isinstance(e, Mapping):
            entry = dict(e)
            name = entry.get("name")
            if name in made:
                entry["resourceClaimName"] = made[entry["name"]]
            known.add(name)
            out.append(entry)
    for n, c in made.items():
        if n not in known:
            out.append({"name": n, "resourceClaimName": c})
    return out


def is_pod_done(pod: Pod) -> bool:
    """No container of the pod runs or ever will: terminal, or deleted before it was bound."""
    return pod.phase in ("Succeeded", "Failed") or (pod.meta.deletion_timestamp is not None and not pod.node_name)


def reservation_stays(uid: str, pod: Pod | None) -> bool:
    """A `pods` entry of status.reservedFor stays while that very pod exists and is not done."""
    return pod is not None and pod.uid == uid and not is_pod_done(pod)
