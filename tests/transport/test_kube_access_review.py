"""SelfSubjectAccessReview and SelfSubjectRulesReview (`kubectl auth can-i`): in
discovery, decoded from the protobuf kubectl sends, answered allowed with `*` rules."""
from __future__ import annotations

from transport.kube import protobuf

from tests.transport.test_kube_api import api  # noqa: F401 - the fixture: a store behind the HTTP port

# `kubectl auth can-i create pods/status -n team --subresource=status`, as kubectl 1.32 sent it
CAN_I = bytes.fromhex(
    "6b387300" "0a32" "0a17" + b"authorization.k8s.io/v1".hex() + "1217" + b"SelfSubjectAccessReview".hex()
    + "1248" "0a100a0012001a0022002a00320038004200"
    + "122a0a28" "0a047465616d" "1206637265617465" "1a00" "2200" "2a04706f6473" "3206737461747573"
    + "3a06737461747573" "1a0808001200" "1a00" "20001a002200")


def test_the_access_review_kubectl_sends_as_protobuf_is_decoded():
    assert protobuf.decode(CAN_I) == {
        "apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview", "metadata": {},
        "spec": {"resourceAttributes": {"namespace": "team", "verb": "create", "resource": "pods",
                                        "subresource": "status", "name": "status"}}}


async def test_an_access_review_is_created_allowed_and_a_rules_review_lists_every_rule(api):  # noqa: F811
    _, group = await api.call("GET", "/apis/authorization.k8s.io/v1")
    assert {(r["name"], tuple(r["verbs"])) for r in group["resources"]} == {
        ("selfsubjectaccessreviews", ("create",)), ("selfsubjectrulesreviews", ("create",))}
    status, review = await api.call("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", CAN_I,
                                    ctype=protobuf.PROTOBUF)
    assert status == 201 and review["kind"] == "SelfSubjectAccessReview" and review["status"]["allowed"] is True
    assert review["spec"]["resourceAttributes"]["verb"] == "create"
    status, rules = await api.call("POST", "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
                                   {"kind": "SelfSubjectRulesReview", "spec": {"namespace": "demo"}})
    assert status == 201 and rules["status"]["resourceRules"] == [{"verbs": ["*"], "apiGroups": ["*"],
                                                                   "resources": ["*"]}]
    status, err = await api.call("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", {"spec": {}})
    assert status == 400 and "exactly one of nonResourceAttributes or resourceAttributes" in err["message"]
    status, _ = await api.call("GET", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews")
    assert status == 405
