"""The resourceclaim controller's decisions (framework.dra.pod_claims), pure."""
from __future__ import annotations

from framework.api.objects import Pod
from framework.dra.pod_claims import MAX_BASE_LEN, claim_statuses, generate_name, is_pod_done, reservation_stays
from tests import dra_manifests as m


def test_generated_names_are_pod_then_claim_and_long_ones_are_cut_in_proportion() -> None:
    assert generate_name("trainer", "gpu") == "trainer-gpu-"
    long = generate_name("p" * 60, "c" * 30)
    assert long == "p" * 37 + "-" + "c" * 18 and len(long) <= MAX_BASE_LEN


def test_a_pod_is_done_when_terminal_or_deleted_before_binding() -> None:
    pod = m.pod_with_template()
    pod["metadata"]["uid"] = "u1"
    assert not is_pod_done(Pod(pod))
    assert is_pod_done(Pod({**pod, "status": {"phase": "Failed"}}))
    deleting = {**pod, "metadata": {**pod["metadata"], "deletionTimestamp": "2026-01-01T00:00:00Z"}}
    assert is_pod_done(Pod(deleting))
    assert not is_pod_done(Pod({**deleting, "spec": {**pod["spec"], "nodeName": "node-1"}}))
    assert reservation_stays("u1", Pod(pod)) and not reservation_stays("u2", Pod(pod))
    assert not reservation_stays("u1", None)


def test_a_pods_recorded_claim_names_are_read_once_per_status_list_and_again_for_another_list() -> None:
    def pod(statuses: list[dict[str, str]]) -> Pod:
        return Pod({"metadata": {"name": "p", "namespace": "default", "uid": "u"},
                    "spec": {"containers": [{"name": "c", "image": "x"}],
                             "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "t"}]},
                    "status": {"resourceClaimStatuses": statuses}})

    first = pod([{"name": "gpu", "resourceClaimName": "p-gpu-abcde"}])
    assert claim_statuses(first) == {"gpu": "p-gpu-abcde"}
    assert claim_statuses(first) is claim_statuses(first)
    again = pod([{"name": "gpu", "resourceClaimName": "p-gpu-fghij"}])  # a new status list: read again
    assert claim_statuses(again) == {"gpu": "p-gpu-fghij"}
    assert claim_statuses(pod([])) == {} and claim_statuses(first) == {"gpu": "p-gpu-abcde"}
