"""The hint index files an entry when an event first asks, not at `add`
(actors/queue/hint_index.py): over random adds (pods waiting for claims, their status
recording a claim or not, random rejectors, the entry's rejector sets changed in place
after the add), discards and events, its candidates are those of an index that files
at once (the code it replaces, kept here as the reference); and an entry added and
discarded before any event asks never has its pod's keys read."""
from __future__ import annotations

from typing import Any, Hashable

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from actors.queue.hint_index import HintIndex, _drop
from framework.api.objects import Pod
from framework.interface import ActionType, ClusterEvent, ClusterEventWithHint, QueuedPodInfo
from framework.plugins.dynamicresources.hint_keys import claim_event_keys
from tests.actors.test_queue_hint_index import CLAIM_ADD, CLAIM_UPDATE, NODE_ADD, POD_CLAIM, POD_DELETE, _claim, \
    _pod, _recorded

DRA = "DynamicResources"
REJECTORS = [frozenset({DRA}), frozenset({"NodeResourcesFit"}), frozenset({DRA, "ClaimWatcher"}), frozenset(),
             frozenset({DRA, "Broken"})]


def _broken_keys(pod: Pod) -> frozenset[Hashable]:
    if pod.name.endswith("3"):
        raise ValueError("no keys for this pod")
    return frozenset({("pod", pod.uid)})


calls: list[str] = []


def _claim_keys(pod: Pod) -> frozenset[Hashable]:
    calls.append(pod.key)
    names = [s.get("resourceClaimName") for s in (pod.raw.get("status") or {}).get("resourceClaimStatuses") or []]
    named = [e.get("resourceClaimName") for e in pod.spec.get("resourceClaims") or []]
    return frozenset(("claim", pod.namespace, n) for n in names + named if n)


HINTS = {
    DRA: [ClusterEventWithHint(ClusterEvent("ResourceClaim", ActionType.Add | ActionType.Update), None,
                               claim_event_keys, _claim_keys)],
    "NodeResourcesFit": [ClusterEventWithHint(ClusterEvent("Node", ActionType.Add)),
                         ClusterEventWithHint(ClusterEvent("Pod", ActionType.Delete))],
    "ClaimWatcher": [ClusterEventWithHint(CLAIM_UPDATE)],
    "Broken": [ClusterEventWithHint(ClusterEvent("ResourceClaim", ActionType.Update), None, claim_event_keys,
                                    _broken_keys)],
}


class EagerIndex(HintIndex):
    """The index as it filed before: at `add`, from the entry as it is then."""

    def add(self, key: str, qpi: QueuedPodInfo) -> None:
        self.discard(key)
        self._file(key, qpi.pod, qpi.unschedulable_plugins | qpi.pending_plugins)


def _filing(index: HintIndex) -> tuple[Any, ...]:
    index._file_all()
    by_key = {k: frozenset(v) for k, v in index._by_key.items()}
    by_plugin = {k: frozenset(v) for k, v in index._by_plugin.items()}
    return frozenset(index._always), by_key, by_plugin, len(index)


ops_st = st.lists(st.one_of(
    st.tuples(st.just("add"), st.integers(0, 5), st.sampled_from([None, "c0", "c1"]), st.integers(0, 4),
              st.booleans()),
    st.tuples(st.just("discard"), st.integers(0, 5)),
    st.tuples(st.just("event"), st.integers(0, 4), st.sampled_from(["c0", "c1"])),
), min_size=1, max_size=40)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops_st)
def test_filing_when_an_event_asks_gives_the_candidates_of_filing_at_add(ops: list) -> None:
    lazy, eager = HintIndex(lambda p: HINTS, [HINTS]), EagerIndex(lambda p: HINTS, [HINTS])
    for rv, op in enumerate(ops, start=10):
        match op:
            case ("add", i, recorded, r, changed_after):
                pod = _pod(i, None) if recorded is None else _recorded(_pod(i, None), recorded)
                qpi = QueuedPodInfo(pod=pod, attempts=1, unschedulable_plugins=set(REJECTORS[r]))
                lazy.add(pod.key, qpi)
                eager.add(pod.key, QueuedPodInfo(pod=pod, attempts=1, unschedulable_plugins=set(REJECTORS[r])))
                if changed_after:  # the queue's entry moves on; the index keeps what it was given
                    qpi.unschedulable_plugins.add("NodeResourcesFit")
                    qpi.pending_plugins.add(DRA)
            case ("discard", i):
                lazy.discard(f"default/p{i}")
                eager.discard(f"default/p{i}")
            case ("event", kind, name):
                event, old, new = [
                    (CLAIM_ADD, None, _claim(name, None, False, rv)),
                    (CLAIM_UPDATE, _claim(name, None, False, rv - 1), _claim(name, None, True, rv)),
                    (CLAIM_UPDATE, _claim(name, None, True, rv - 1), _claim(name, None, False, rv)),  # deallocated
                    (NODE_ADD, None, object()), (POD_DELETE, object(), None)][kind]
                assert lazy.candidates(event, old, new) == eager.candidates(event, old, new)
                assert lazy.candidates(POD_CLAIM, None, None) == eager.candidates(POD_CLAIM, None, None)
        assert len(lazy) == len(eager)
    assert _filing(lazy) == _filing(eager)


def test_an_entry_gone_before_any_event_asks_is_never_filed() -> None:
    index = HintIndex(lambda p: HINTS, [HINTS])
    pod = _pod(1, None)
    calls.clear()
    index.add(pod.key, QueuedPodInfo(pod=pod, attempts=1, pending_plugins={DRA}))  # gated, its claim not made
    recorded = _recorded(pod, "p1-gpu-x")
    index.add(pod.key, QueuedPodInfo(pod=recorded, attempts=1, pending_plugins={DRA}))  # its status names it
    index.discard(pod.key)  # to activeQ
    assert calls == [] and len(index) == 0
    assert index.candidates(CLAIM_ADD, None, _claim("p1-gpu-x", 1, False, 3)) == set()
    assert index._by_key == {} and index._by_plugin == {} and index._filed == {}
    index.add(pod.key, QueuedPodInfo(pod=recorded, attempts=1, unschedulable_plugins={DRA}))
    assert index.candidates(CLAIM_ADD, None, _claim("p1-gpu-x", 1, False, 3)) == {pod.key}
    assert calls == [pod.key]


def test_drop_empties_the_bucket() -> None:
    index: dict[str, set[str]] = {"a": {"k"}}
    _drop(index, "a", "k")
    assert index == {}
