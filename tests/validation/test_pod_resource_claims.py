"""A pod's spec.resourceClaims and its containers' resources.claims are validated as the
API server does (framework/api/schema/pod_claims.py), naming the field."""
from framework.api.schema import validate_object


def pod(claims=None, container_claims=None):
    container = {"name": "c", "image": "i"}
    if container_claims is not None:
        container["resources"] = {"claims": container_claims}
    spec = {"containers": [container]}
    if claims is not None:
        spec["resourceClaims"] = claims
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"}, "spec": spec}


def errors(obj):
    return [str(e) for e in validate_object(obj)]


def test_a_pod_whose_containers_use_its_claims_by_name_and_request_is_valid():
    assert errors(pod([{"name": "gpu", "resourceClaimTemplateName": "single-gpu"},
                       {"name": "nic", "resourceClaimName": "shared-nic"}],
                      [{"name": "gpu"}, {"name": "gpu", "request": "big"}, {"name": "nic"}])) == []


def test_a_claim_without_a_source_is_refused_as_the_api_server_words_it():
    assert errors(pod([{"name": "gpu"}])) == [
        'spec.resourceClaims[0]: Invalid value: {"name": "gpu"}: must specify one of: '
        "`resourceClaimName`, `resourceClaimTemplateName`"]


def test_a_claim_with_both_sources_is_refused():
    assert errors(pod([{"name": "gpu", "resourceClaimName": "a", "resourceClaimTemplateName": "b"}])) == [
        'spec.resourceClaims[0]: Invalid value: {"name": "gpu", "resourceClaimName": "a", '
        '"resourceClaimTemplateName": "b"}: at most one of `resourceClaimName` or `resourceClaimTemplateName` '
        "may be specified"]


def test_claim_names_are_required_unique_dns_labels():
    found = errors(pod([{"resourceClaimName": "a"}, {"name": "Gpu", "resourceClaimName": "a"},
                        {"name": "x", "resourceClaimName": "a"}, {"name": "x", "resourceClaimName": "a"}]))
    assert found[0] == "spec.resourceClaims[0].name: Required value"
    assert found[1].startswith('spec.resourceClaims[1].name: Invalid value: "Gpu": a lowercase RFC 1123 label')
    assert found[2] == 'spec.resourceClaims[3].name: Duplicate value: "x"'
    assert len(found) == 3


def test_a_source_name_must_be_a_dns_subdomain():
    found = errors(pod([{"name": "gpu", "resourceClaimTemplateName": "Not_Valid"}]))
    assert len(found) == 1
    assert found[0].startswith('spec.resourceClaims[0].resourceClaimTemplateName: Invalid value: "Not_Valid": '
                               "a lowercase RFC 1123 subdomain")


def test_a_container_claim_must_name_one_of_the_pods_claims():
    assert errors(pod(None, [{"name": "gpu"}])) == [
        'spec.containers[0].resources.claims[0]: Not found: "gpu": must be one of the names in '
        "pod.spec.resourceClaims which is empty"]
    assert errors(pod([{"name": "b", "resourceClaimName": "x"}, {"name": "a", "resourceClaimName": "y"}],
                      [{"name": "gpu"}])) == [
        'spec.containers[0].resources.claims[0]: Not found: "gpu": must be one of the names in '
        "pod.spec.resourceClaims: a, b"]


def test_a_container_claim_is_required_and_used_once_per_request():
    found = errors(pod([{"name": "gpu", "resourceClaimName": "x"}],
                       [{"name": ""}, {"name": "gpu", "request": "r"}, {"name": "gpu", "request": "r"}]))
    assert found == ["spec.containers[0].resources.claims[0]: Required value",
                     'spec.containers[0].resources.claims[2]: Duplicate value: "gpu/r"']
