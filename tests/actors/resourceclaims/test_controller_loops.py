"""The controller's loops read as the expressions they replaced (a claim's pod uids, a
bound pod's settled check): hypothesis over owners, reservations and bindings."""
from __future__ import annotations

from typing import Any

from hypothesis import given, settings, strategies as st

from actors.resourceclaims.controller import ResourceClaimController, _pod_uids, concerns_claims
from actors.store import WatchEvent
from framework.api.dra_kinds import ResourceClaim
from framework.api.objects import Pod
from framework.dra.pod_claims import claim_names, claim_statuses, is_pod_done, owning_pod
from tests import dra_manifests as m

_REF = st.fixed_dictionaries({"resource": st.sampled_from(["pods", "other", ""]),
                              "name": st.sampled_from(["p", "q"]), "uid": st.sampled_from(["", "p-uid", "q-uid"])})
_OWNER = st.sampled_from([None, "p-uid", "q-uid", ""])


def _claim(name: str, owner: str | None, reserved: list[dict[str, str]], allocated: bool) -> ResourceClaim:
    raw: dict[str, Any] = m.resource_claim(name)
    raw["metadata"]["uid"] = f"{name}-uid"
    if owner is not None:
        raw["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": owner,
                                               "controller": True}]
    status: dict[str, Any] = {}
    if allocated:
        status["allocation"] = m.allocation()
    if reserved:
        status["reservedFor"] = reserved
    return ResourceClaim({**raw, "status": status})


@settings(max_examples=200, deadline=None)
@given(owner=_OWNER, reserved=st.lists(_REF, max_size=3))
def test_a_claims_pod_uids_are_the_set_expressions(owner: str | None, reserved: list[dict[str, str]]) -> None:
    claim = _claim("c", owner, reserved, allocated=True)
    want = {owning_pod(claim)[1]} | {uid for resource, _, uid in claim.reserved_for if resource == "pods"}
    want.discard("")
    assert _pod_uids(claim) == want


@settings(max_examples=200, deadline=None)
@given(bound=st.booleans(), names=st.lists(st.sampled_from(["a", "b", "missing"]), min_size=1, max_size=3),
       claims=st.dictionaries(st.sampled_from(["a", "b"]), st.tuples(st.lists(_REF, max_size=2), st.booleans())))
def test_a_pods_settled_check_is_the_any_it_replaced(bound: bool, names: list[str],
                                                     claims: dict[str, tuple[list[dict[str, str]], bool]]) -> None:
    raw: dict[str, Any] = {"metadata": {"name": "p", "namespace": "default", "uid": "p-uid"},
                           "spec": {"containers": [{"name": "c", "image": "x"}],
                                    "resourceClaims": [{"name": f"r{i}", "resourceClaimName": n}
                                                       for i, n in enumerate(names)]}}
    if bound:
        raw["spec"]["nodeName"] = "node-1"
    pod = Pod(raw)
    ctl = ResourceClaimController(store=None)  # type: ignore[arg-type]  # (the check reads its state only)
    ctl.state.pods[pod.key] = pod
    for name, (reserved, allocated) in claims.items():
        claim = _claim(name, None, reserved, allocated)
        ctl.state.claims[claim.key] = claim
    recorded = claim_statuses(pod)
    want = not pod.node_name or not any(ctl._unreserved(pod, n) for n, _ in claim_names(pod, recorded))
    assert ctl._pod_settled(pod.key) is want


def _ending_pod(phase: str | None, deleting: bool, bound: bool, claims: bool) -> Pod:
    raw: dict[str, Any] = {"metadata": {"name": "p", "namespace": "default", "uid": "p-uid"},
                           "spec": {"containers": [{"name": "c", "image": "x"}]}}
    if deleting:
        raw["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    if bound:
        raw["spec"]["nodeName"] = "node-1"
    if claims:
        raw["spec"]["resourceClaims"] = [{"name": "r", "resourceClaimTemplateName": "t"}]  # not yet made
    if phase is not None:
        raw["status"] = {"phase": phase}
    return Pod(raw)


_PHASE = st.sampled_from([None, "Pending", "Running", "Succeeded", "Failed", "Unknown"])


@settings(max_examples=300, deadline=None)
@given(phase=_PHASE, deleting=st.booleans(), bound=st.booleans(), claims=st.booleans(),
       old=st.one_of(st.none(), st.tuples(_PHASE, st.booleans(), st.booleans(), st.booleans())),
       kind=st.sampled_from(["ADDED", "MODIFIED", "DELETED"]))
def test_the_ending_checks_read_inline_are_is_deleting_or_is_pod_done(
        phase: str | None, deleting: bool, bound: bool, claims: bool,
        old: tuple[str | None, bool, bool, bool] | None, kind: str) -> None:
    """concerns_claims and _pod_settled read a pod's end inline: the same answers as
    `pod.is_deleting or is_pod_done(pod)`, the expression they replaced."""
    pod = _ending_pod(phase, deleting, bound, claims)
    old_pod = None if old is None else _ending_pod(*old)
    ending = pod.is_deleting or is_pod_done(pod)
    want = (kind == "DELETED" or bool(pod.spec.get("resourceClaims"))
            or bool(old_pod is not None and old_pod.spec.get("resourceClaims")) or ending)
    ev = WatchEvent(type=kind, kind="Pod", obj=pod, old=old_pod, resource_version=1)
    assert concerns_claims(ev) is want
    ctl = ResourceClaimController(store=None)  # type: ignore[arg-type]  # (the check reads its state only)
    ctl.state.pods[pod.key] = pod
    assert ctl._pod_settled(pod.key) is (ending or not claims)  # (a claim to make: unsettled unless ending)
