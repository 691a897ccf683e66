"""The write chain leaves Kueue's pod defaults out for a pod they cannot change
(kueue_may_default, kept beside the defaults it answers for): whenever it says so, kueue_pod_defaults returns the
pod itself, over label sets with and without a LocalQueue and a ksched PodGroup
(whose group names a queue, or not, or is not stored)."""
from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from framework.api.objects import parse_as
from framework.kueue.pods import GROUP_NAME, KSCHED_POD_GROUP, QUEUE_LABEL, kueue_may_default, kueue_pod_defaults


def _group(name: str, labels: dict[str, str]) -> Any:
    return parse_as("PodGroup", {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
                                 "metadata": {"name": name, "namespace": "default", "labels": labels},
                                 "spec": {"minMember": 1}})


GROUPS = {"default/queued": _group("queued", {QUEUE_LABEL: "team"}), "default/plain": _group("plain", {})}
KEYS = [QUEUE_LABEL, KSCHED_POD_GROUP, GROUP_NAME, "app"]
VALUES = ["", "team", "queued", "plain", "absent"]


def _pod(labels: dict[str, str] | None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "p", "namespace": "default"}
    if labels is not None:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {"containers": [{"name": "c", "image": "pause"}]}}


@settings(max_examples=300, deadline=None)
@given(st.none() | st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES)))
def test_a_pod_kueue_may_not_default_is_returned_by_kueues_defaults_as_it_is(labels: dict[str, str] | None) -> None:
    pod = _pod(labels)
    if not kueue_may_default(pod):
        assert kueue_pod_defaults(pod, GROUPS) is pod


def test_a_pod_of_a_queued_group_or_naming_a_queue_is_left_to_kueues_defaults() -> None:
    for labels in ({KSCHED_POD_GROUP: "queued"}, {QUEUE_LABEL: "team"}):
        pod = _pod(labels)
        assert kueue_may_default(pod) and kueue_pod_defaults(pod, GROUPS) is not pod
    assert not kueue_may_default(_pod(None)) and not kueue_may_default(_pod({})) \
        and not kueue_may_default(_pod({"app": "web", QUEUE_LABEL: ""}))
