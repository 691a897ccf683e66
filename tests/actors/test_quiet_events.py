"""Cluster events that move no pod are dropped where they arise (actors/quiet_events.py),
and the queue ends every step as if it had been sent every one: over random pods waiting
for claims (named, or made from a template and recorded in their status or not yet),
random rejectors, claim, pod and node events, and attempts in flight that fail after
events came, a queue told only the events QuietEvents lets through ends each step with
every pod in the same sub-queue as one told every event. An event no registration matches
(a PodGroup's status update under the default profile) is dropped, and a queue told it
ignores it."""
from __future__ import annotations

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from actors.quiet_events import QuietEvents
from actors.queue.scheduling_queue import SchedulingQueue
from framework.api.dra_kinds import ResourceClaim
from framework.cache import Snapshot
from framework.handle import FrameworkHandle, InMemoryObjects
from framework.interface import ActionType, ClusterEvent, ClusterEventWithHint, QueuedPodInfo
from framework.plugins.dynamicresources.dynamic_resources import DynamicResources
from framework.plugins.dynamicresources.tracker import DeviceTracker
from framework.plugins.queuesort.priority_sort import PrioritySort
from actors.events import event_for
from actors.pipeline import events_with_defaults
from framework.api.groups import POD_GROUP_KEY
from framework.config import build_frameworks, load_config
from tests.framework.test_node_local_columns import CONFIG, gang, member, Shape
from tests.actors.test_queue_hint_index import (
    CLAIM_ADD, CLAIM_UPDATE, DRA, NAMES, NODE_ADD, POD_CLAIM, REJECTORS, _claim, _pod, _recorded,
)


NAMESPACE_ADD = ClusterEvent("Namespace", ActionType.Add)
POD_GROUP_UPDATE = ClusterEvent(POD_GROUP_KEY, ActionType.Update)


def _hint_map(plugin: DynamicResources) -> dict[str, list[ClusterEventWithHint]]:
    return {
        DRA: plugin.events_to_register(),
        "NodeResourcesFit": [ClusterEventWithHint(ClusterEvent("Node", ActionType.Add)),
                             ClusterEventWithHint(ClusterEvent("Pod", ActionType.Delete))],
    }


def _plugin() -> tuple[DynamicResources, InMemoryObjects]:
    objects = InMemoryObjects()
    return DynamicResources(FrameworkHandle(snapshot=Snapshot.build([], []), objects=objects), DeviceTracker()), objects


ops_st = st.lists(st.one_of(
    st.tuples(st.just("claim"), st.sampled_from(NAMES), st.one_of(st.none(), st.integers(0, 2)), st.booleans()),
    st.tuples(st.just("record"), st.integers(0, 2), st.sampled_from(NAMES)),
    st.tuples(st.just("node"),),
    st.tuples(st.just("unregistered"), st.sampled_from([NAMESPACE_ADD, POD_GROUP_UPDATE])),
    st.tuples(st.just("fly"),),
    st.tuples(st.just("fail"),),
    st.tuples(st.just("bound"), st.integers(0, 2)),
), min_size=1, max_size=30)
pods_st = st.lists(st.tuples(st.sampled_from([None, None, *NAMES]), st.integers(0, len(REJECTORS) - 1)),
                   min_size=1, max_size=3)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pods_st, ops_st)
@example([(None, 0)], [("fly",), ("claim", "c0", 0, False), ("record", 0, "c0"), ("fail",)])
@example([("c1", 0)], [("fly",), ("claim", "c1", None, True), ("fail",)])  # its named claim allocated in flight
@example([(None, 0), ("c0", 0)], [("bound", 1), ("claim", "c0", None, False)])  # no pending pod names it
def test_a_queue_told_only_the_events_that_can_move_a_pod_ends_as_one_told_every_event(pods: list, ops: list
                                                                                        ) -> None:
    plugin, objects = _plugin()
    hint_map = _hint_map(plugin)
    told, quiet_q = (SchedulingQueue(less=PrioritySort().less, hints_for=lambda p: hint_map, hint_maps=[hint_map])
                     for _ in range(2))
    quiet = QuietEvents(lambda p: hint_map, [hint_map])
    current = {i: _pod(i, named) for i, (named, _) in enumerate(pods)}
    rejectors = {i: REJECTORS[r] for i, (_, r) in enumerate(pods)}
    claims: dict[str, ResourceClaim] = {}
    flying: dict[str, QueuedPodInfo] = {}
    now = 1.0
    for i, pod in current.items():
        quiet.pending(pod)
        for q in (told, quiet_q):
            q.add_unschedulable_if_not_present(QueuedPodInfo(pod=pod, attempts=1,
                                                             unschedulable_plugins=set(rejectors[i])), now)

    def offer(event: ClusterEvent, old: object, new: object) -> None:
        moved = told.move_all_to_active_or_backoff(event, old, new, now)
        if quiet.moves_none(event, old, new):
            assert moved == 0
        else:
            assert quiet_q.move_all_to_active_or_backoff(event, old, new, now) == moved

    for rv, op in enumerate(ops, start=10):
        now += 0.25
        match op:
            case ("claim", name, owner, allocated):
                known = owner is None or owner in current
                old, claims[name] = claims.get(name), _claim(name, owner if known else None, allocated, rv)
                objects.put(claims[name])
                offer(CLAIM_ADD if old is None else CLAIM_UPDATE, old, claims[name])
            case ("record", i, name) if i in current:
                old_pod, new_pod = current[i], _recorded(current[i], name)
                current[i] = new_pod
                quiet.pending(new_pod)
                for q in (told, quiet_q):
                    q.update(old_pod, new_pod, now)
                offer(POD_CLAIM, old_pod, new_pod)
            case ("node",):
                offer(NODE_ADD, None, object())
            case ("unregistered", event):  # no registration of the map matches it
                assert quiet.moves_none(event, object(), object())
                offer(event, object(), object())
            case ("fly",):
                popped = [told.pop(), quiet_q.pop()]
                assert (popped[0] is None) == (popped[1] is None)
                if popped[0] is not None:
                    assert popped[0].pod.key == popped[1].pod.key
                    flying[popped[0].pod.key] = popped[0]
            case ("fail",) if flying:
                key, qpi = flying.popitem()
                i = next(i for i, p in current.items() if p.key == key)
                for q in (told, quiet_q):
                    q.add_unschedulable_if_not_present(QueuedPodInfo(
                        pod=qpi.pod, attempts=qpi.attempts, unschedulable_plugins=set(rejectors[i])), now)
            case ("bound", i) if i in current and current[i].key not in flying:
                pod = current.pop(i)
                quiet.gone(pod.key)
                for q in (told, quiet_q):
                    q.delete(pod, now)
        assert {p.key: told.where(p.key) for p in current.values()} == \
            {p.key: quiet_q.where(p.key) for p in current.values()}


def test_a_claim_no_pending_pod_names_is_dropped_and_one_a_pending_pod_named_is_sent() -> None:
    plugin, _ = _plugin()
    hint_map = _hint_map(plugin)
    quiet = QuietEvents(lambda p: hint_map, [hint_map])
    waiting = _pod(0, None)  # its claim made from a template, not recorded yet
    quiet.pending(waiting)
    made = _claim("made-0", 0, False, 5)
    assert quiet.moves_none(CLAIM_ADD, None, made)  # upstream's hint would skip it for every pod
    quiet.pending(_recorded(waiting, "made-0"))
    assert not quiet.moves_none(CLAIM_UPDATE, made, _claim("made-0", 0, True, 6))
    quiet.pending(_recorded(waiting, "other"))  # an earlier version named it: an attempt may still ask
    assert not quiet.moves_none(CLAIM_UPDATE, made, _claim("made-0", 0, True, 6))
    # a deallocation may concern any pod; a node event has no keys
    assert not quiet.moves_none(CLAIM_UPDATE, _claim("gone", None, True, 5), _claim("gone", None, False, 6))
    assert not quiet.moves_none(NODE_ADD, None, object())
    quiet.gone(waiting.key)
    assert quiet.moves_none(CLAIM_UPDATE, made, _claim("made-0", 0, True, 6)) and quiet.dropped == 2


def test_an_event_another_registration_takes_without_keys_is_always_sent() -> None:
    plugin, _ = _plugin()
    hint_map = {**_hint_map(plugin), "Extender": [ClusterEventWithHint(ClusterEvent("*", ActionType.All, "WildCard"))]}
    quiet = QuietEvents(lambda p: hint_map, [hint_map])
    assert not quiet.moves_none(CLAIM_ADD, None, _claim("made-0", 0, False, 5))


class _CountedMap(dict):  # type: ignore[type-arg]
    """A hint map counting the walks over its registrations."""

    walks = 0

    def items(self):  # type: ignore[no-untyped-def]
        type(self).walks += 1
        return super().items()


def test_a_pending_pod_is_filed_without_walking_its_profiles_registrations_again() -> None:
    plugin, _ = _plugin()
    hint_map = _CountedMap(_hint_map(plugin))
    quiet = QuietEvents(lambda p: hint_map, [hint_map])
    walks = _CountedMap.walks
    for i in range(3):
        quiet.pending(_pod(i, "c0"))
    assert _CountedMap.walks == walks  # the registrations that give pod keys were listed once, at start
    assert not quiet.moves_none(CLAIM_ADD, None, _claim("c0", 0, False, 5))
    # a map it was not given (another profile's) is read as it comes, with the same keys
    other = QuietEvents(lambda p: _hint_map(plugin), [])
    other.pending(_pod(0, "c0"))
    assert other._filed == {_pod(0, "c0").key: quiet._filed[_pod(0, "c0").key]}


def test_an_event_no_registration_matches_is_dropped_whatever_else_holds() -> None:
    """The default profile registers PodGroup adds (GangScheduling) but no update: a group's
    status write moves no pod, and the queue would ignore it (EventInterest), so it is
    not sent, even while a pending pod's keys cannot be read; the PodGroup's add for a
    pending member's group is still sent, and so is anything under a wildcard."""
    objects = InMemoryObjects()
    fwk = build_frameworks(load_config(CONFIG), FrameworkHandle(snapshot=Snapshot.build([], []), objects=objects),
                           None)["default-scheduler"]
    hint_map = events_with_defaults(fwk)
    queue = SchedulingQueue(less=PrioritySort().less, hints_for=lambda p: hint_map, hint_maps=[hint_map])
    quiet = QuietEvents(lambda p: hint_map, [hint_map])
    quiet.pending(member("g0", 0, Shape(cpu=100)))
    pg = gang("g0", 2)
    written = event_for(POD_GROUP_KEY, "MODIFIED", pg, pg)
    assert written is not None and not queue.is_event_of_interest(written)
    assert quiet.moves_none(written, pg, pg) and quiet.dropped == 1
    added = event_for(POD_GROUP_KEY, "ADDED", None, pg)
    assert added is not None and not quiet.moves_none(added, None, pg)

    def unreadable(pod: object) -> frozenset:
        raise RuntimeError("no keys")

    broken = {"Broken": [ClusterEventWithHint(ClusterEvent("ResourceClaim", ActionType.Add), None,
                                              lambda old, new: frozenset(), unreadable)]}
    unread = QuietEvents(lambda p: broken, [broken])
    unread.pending(member("g0", 1, Shape(cpu=100)))
    assert unread.moves_none(POD_GROUP_UPDATE, pg, pg)  # no registration: whatever the pods' keys
    assert not unread.moves_none(CLAIM_ADD, None, _claim("c0", None, False, 5))  # keyed: sent while unread
    wildcard = {**hint_map, "Extender": [ClusterEventWithHint(ClusterEvent("*", ActionType.All, "WildCard"))]}
    assert not QuietEvents(lambda p: wildcard, [wildcard]).moves_none(written, pg, pg)
