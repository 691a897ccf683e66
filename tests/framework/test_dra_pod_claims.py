"""The resourceclaim controller's decisions (framework.dra.pod_claims), pure."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hypothesis import given, settings, strategies as st

from framework.api.objects import Pod
from framework.dra.pod_claims import (MAX_BASE_LEN, claim_statuses, generate_name, is_pod_done,
                                      merged_claim_statuses, reservation_stays)
from framework.plugins.dynamicresources.claims import pod_claim_entries
from framework.plugins.dynamicresources.hint_keys import claim_names_used
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


_NAME = st.sampled_from(["a", "b", "c"])
_ENTRY = st.one_of(st.none(), st.just("x"), st.fixed_dictionaries({}, optional={
    "name": st.one_of(_NAME, st.none()), "resourceClaimName": st.one_of(_NAME, st.none(), st.just(""))}))


@settings(max_examples=300, deadline=None)
@given(entries=st.one_of(st.none(), st.lists(_ENTRY, max_size=4)), made=st.dictionaries(_NAME, _NAME, max_size=3))
def test_merged_claim_statuses_are_the_comprehensions(entries: Any, made: dict[str, str]) -> None:
    out = [dict(e) for e in entries or [] if isinstance(e, Mapping)]
    for entry in out:
        if entry.get("name") in made:
            entry["resourceClaimName"] = made[entry["name"]]
    known = {e.get("name") for e in out}
    want = out + [{"name": n, "resourceClaimName": c} for n, c in made.items() if n not in known]
    got = merged_claim_statuses(entries, made)
    assert got == want and [list(e) for e in got] == [list(e) for e in want]  # (the keys' order too)


@settings(max_examples=300, deadline=None)
@given(claims=st.lists(_ENTRY, max_size=4), statuses=st.lists(_ENTRY, max_size=3))
def test_the_claim_names_a_pod_may_use_are_the_set_comprehensions(claims: list[Any], statuses: list[Any]) -> None:
    pod = Pod({"metadata": {"name": "p", "namespace": "default", "uid": "u"},
               "spec": {"containers": [{"name": "c", "image": "x"}], "resourceClaims": claims},
               "status": {"resourceClaimStatuses": statuses}})
    named = {str(e["resourceClaimName"]) for e in pod_claim_entries(pod) if e.get("resourceClaimName")}
    assert claim_names_used(pod) == frozenset(named | {str(n) for n in claim_statuses(pod).values() if n})
