"""The controller's loops read as the expressions they replaced (a claim's pod uids, a
bound pod's settled check): hypothesis over owners, reservations and bindings."""
from __future__ import annotations

from typing import Any

from hypothesis import given, settings, strategies as st

from actors.resourceclaims.controller import ResourceClaimController, _pod_uids
from framework.api.dra_kinds import ResourceClaim
from framework.api.objects import Pod
from framework.dra.pod_claims import claim_names, claim_statuses, owning_pod
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
