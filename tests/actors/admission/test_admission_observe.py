"""The admission actor's watch sink tells a pod apart by its parsed labels: for any
pod (no labels, other labels, the queue label empty or set) and any old pod, it
forwards exactly the events queue_name's rule on the raws would."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from actors.admission.actor import AdmissionActor
from actors.clock import FakeClock
from actors.store import WatchEvent
from framework.api.objects import Pod
from framework.kueue.pods import QUEUE_LABEL, queue_name

_LABELS = st.one_of(
    st.none(),
    st.dictionaries(st.sampled_from(["app", QUEUE_LABEL, "kueue.x-k8s.io/managed", "x"]),
                    st.sampled_from(["", "q", "team-a", "0"]), max_size=3))


def _pod(labels: dict | None) -> Pod:
    meta: dict = {"name": "p", "namespace": "default"}
    if labels is not None:
        meta["labels"] = labels
    return Pod({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": {"containers": [{"name": "c"}]}})


class _Told(AdmissionActor):
    def __init__(self) -> None:
        super().__init__(store=None, clock=FakeClock())  # type: ignore[arg-type]
        self.told: list = []

    def tell(self, msg) -> None:  # type: ignore[override]
        self.told.append(msg)


@settings(max_examples=300, deadline=None)
@given(new=_LABELS, old=st.one_of(st.just("none"), _LABELS), kind=st.sampled_from(["ADDED", "MODIFIED", "DELETED"]))
def test_a_pod_is_forwarded_as_queue_names_rule_says(new, old, kind) -> None:
    actor = _Told()
    obj = _pod(new)
    prev = None if old == "none" else _pod(old)
    actor.observe(WatchEvent(type=kind, kind="Pod", obj=obj, old=prev, resource_version=1))
    expected = bool(queue_name(obj.raw)) or (prev is not None and bool(queue_name(prev.raw)))
    assert bool(actor.told) == expected


def test_other_kinds_are_always_forwarded() -> None:
    actor = _Told()
    obj = _pod(None)
    ev = WatchEvent(type="ADDED", kind="Workload", obj=obj, old=None, resource_version=1)
    actor.observe(ev)
    assert len(actor.told) == 1
