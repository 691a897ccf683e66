"""kube-apiserver's Status objects for refusals on the REST port: 422 Invalid names the
kind ("Pod") and lists every refused field as a cause with field.ErrorType's reason
(apierrors.NewInvalid); 404/409 name the resource ("pods") and its group."""
from __future__ import annotations

from tests.transport.test_kube_api import api  # noqa: F401 - the fixture: a store behind the HTTP port


def _pod(name: str, requests: dict[str, str]) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "x", "resources": {"requests": requests}}]}}


async def test_an_invalid_pod_is_422_naming_the_kind_and_each_refused_field_as_a_cause(api):  # noqa: F811
    status, err = await api.call("POST", "/api/v1/namespaces/demo/pods", _pod("neg", {"cpu": "-1", "memory": "-3"}))
    assert (status, err["reason"], err["code"]) == (422, "Invalid", 422)
    assert err["message"] == (
        'Pod "neg" is invalid: [spec.containers[0].resources.requests[cpu]: Invalid value: "-1": must be greater '
        'than or equal to 0, spec.containers[0].resources.requests[memory]: Invalid value: "-3": must be greater '
        'than or equal to 0]')
    assert err["details"] == {"name": "neg", "kind": "Pod", "causes": [
        {"reason": "FieldValueInvalid", "message": 'Invalid value: "-1": must be greater than or equal to 0',
         "field": "spec.containers[0].resources.requests[cpu]"},
        {"reason": "FieldValueInvalid", "message": 'Invalid value: "-3": must be greater than or equal to 0',
         "field": "spec.containers[0].resources.requests[memory]"}]}


async def test_each_cause_carries_the_reason_its_error_type_words_say(api):  # noqa: F811
    two = _pod("dup", {})
    two["spec"]["containers"].append(dict(two["spec"]["containers"][0]))
    _, err = await api.call("POST", "/api/v1/namespaces/demo/pods", two)
    assert err["details"]["causes"] == [{"reason": "FieldValueDuplicate", "message": 'Duplicate value: "c"',
                                         "field": "spec.containers[1].name"}]
    _, err = await api.call("POST", "/api/v1/namespaces/demo/pods", {"apiVersion": "v1", "kind": "Pod",
                                                                     "metadata": {}, "spec": {"containers": []}})
    assert err["details"] == {"kind": "Pod", "causes": [{
        "reason": "FieldValueRequired", "message": "Required value: name or generateName is required",
        "field": "metadata.name"}]}


async def test_an_invalid_object_of_a_named_group_names_its_group(api):  # noqa: F811
    body = {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup", "metadata": {"name": "g"},
            "spec": {"minMember": -1}}
    status, err = await api.call("POST", "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/demo/podgroups", body)
    assert status == 422 and err["message"].startswith('PodGroup.scheduling.x-k8s.io "g" is invalid: spec.minMember')
    assert (err["details"]["kind"], err["details"]["group"]) == ("PodGroup", "scheduling.x-k8s.io")
    assert err["details"]["causes"][0]["field"] == "spec.minMember"
    # NotFound and AlreadyExists name the resource (apierrors.NewNotFound), not the kind
    status, err = await api.call("GET", "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/demo/podgroups/nope")
    assert (status, err["message"]) == (404, 'podgroups.scheduling.x-k8s.io "nope" not found')
    assert err["details"] == {"name": "nope", "group": "scheduling.x-k8s.io", "kind": "podgroups"}
    await api.call("POST", "/api/v1/namespaces/demo/pods", _pod("twice", {}))
    status, err = await api.call("POST", "/api/v1/namespaces/demo/pods", _pod("twice", {}))
    assert (status, err["reason"], err["details"]) == (409, "AlreadyExists", {"name": "twice", "kind": "pods"})
