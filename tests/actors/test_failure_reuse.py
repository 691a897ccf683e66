"""Failure reuse through the real pipeline: with failures reused, the same pods are
attempted, fail with the same messages and conditions, and bind to the same nodes as
with every attempt run in full; the reuses are counted."""
from __future__ import annotations

import random
from typing import Any

from actors.clock import FakeClock
from actors.failure_reuse import FailureReuse
from actors.pipeline import Pipeline
from framework.api.objects import Pod
from framework.attempt_outcome import Diagnosis, FitError
from framework.config import build_frameworks, load_config
from framework.failure_memo import ProfileSigner
from framework.handle import FrameworkHandle
from tests.actors.helpers import node, pod
from tests.actors.test_metrics import RecordingSink


async def _churn(reuse: bool) -> tuple[dict[str, Any], int, RecordingSink]:
    """3 nodes x 2 CPU full of 1-CPU pods, 4 more queued (two of them 2-CPU, with
    a priority: DefaultPreemption runs and finds no victim), then the running pods
    complete one at a time."""
    sink = RecordingSink()
    async with Pipeline(None, clock=FakeClock(0.0), rand=random.Random(7), reuse_failures=reuse, metrics=sink) as p:
        await p.client.apply([node(f"n{i}", cpu="2") for i in range(3)])
        await p.client.apply([pod(f"run{i}", cpu="1", memory="10Mi") for i in range(6)])
        await p.settle()
        await p.client.apply([pod(f"small{i}", cpu="1", memory="10Mi") for i in range(2)]
                             + [pod(f"big{i}", cpu="2", memory="10Mi", priority=0) for i in range(2)])
        await p.settle()
        for i in range(6):
            await p.client.delete("Pod", "default", f"run{i}")
            await p.settle()
        seen: dict[str, Any] = {}
        for name in ("small0", "small1", "big0", "big1"):
            stored = Pod(await p.client.get("Pod", "default", name))
            events = [(e.reason, e.message) for e in await p.client.events("Pod", f"default/{name}")]
            seen[name] = (stored.node_name, events, stored.raw.get("status", {}).get("conditions"))
        return seen, (await p.scheduler_stats()).failures_reused, sink


async def test_reused_failures_look_exactly_like_attempts_run_in_full() -> None:
    with_reuse, reused, sink = await _churn(True)
    in_full, none_reused, plain_sink = await _churn(False)
    assert with_reuse == in_full
    assert reused > 0 and none_reused == 0
    assert len(sink.of("failure_reused")) == reused
    # Upstream counts a preemption attempt for every PostFilter run: a reused one too.
    assert len(sink.of("preemption_attempt")) == len(plain_sink.of("preemption_attempt"))
    assert len(sink.of("schedule_attempt")) == len(plain_sink.of("schedule_attempt"))


def _signer(cfg: dict | None = None, extenders: bool = False) -> ProfileSigner:
    fwks = build_frameworks(load_config(cfg), FrameworkHandle())
    return ProfileSigner(next(iter(fwks.values())), extenders)


def _pod(**spec: Any) -> Pod:
    return Pod({"kind": "Pod", "metadata": {"name": "p", "uid": "p"},
                "spec": {"containers": [{"name": "c"}], **spec}})


def test_the_default_profile_signs_and_identity_does_not_count():
    s = _signer()
    assert s.enabled
    a = Pod({"kind": "Pod", "metadata": {"name": "a", "uid": "1", "creationTimestamp": "2025-01-01T00:00:00Z"},
             "spec": {"containers": [{"name": "c"}]}})
    b = Pod({"kind": "Pod", "metadata": {"name": "b", "uid": "2"}, "spec": {"containers": [{"name": "c"}]}})
    assert s.sign(a, nominated=False) == s.sign(b, nominated=False) is not None
    assert s.sign(_pod(priority=1), nominated=False) != s.sign(_pod(priority=2), nominated=False)


def test_pods_preemption_treats_apart_or_whose_claims_follow_their_name_are_not_signed():
    s = _signer()
    assert s.sign(_pod(), nominated=True) is None
    with_nomination = Pod({**_pod().raw, "status": {"nominatedNodeName": "n1"}})
    assert s.sign(with_nomination, nominated=False) is None
    assert s.sign(_pod(volumes=[{"name": "v", "ephemeral": {"volumeClaimTemplate": {}}}]), nominated=False) is None


def test_a_plugin_that_cannot_sign_or_an_extender_turns_reuse_off_for_the_profile():
    assert not _signer(extenders=True).enabled
    coscheduling = _signer({"profiles": [{"schedulerName": "gangs", "plugins": {
        "multiPoint": {"enabled": [{"name": "Coscheduling"}], "disabled": [{"name": "PrioritySort"}]}}}]})
    assert not coscheduling.enabled and coscheduling.unsigned == ["Coscheduling"]
    assert coscheduling.sign(_pod(), nominated=False) is None


def test_the_world_moves_with_nominations_and_with_objects_other_than_pods():
    from actors.queue.nominator import Nominator
    from framework.api.objects import Namespace
    from framework.handle import InMemoryObjects

    n = Nominator()
    before = n.version
    n.add(_pod(), "n1")
    assert n.version != before
    before = n.version
    n.delete(_pod())
    assert n.version != before
    before = n.version
    n.delete(_pod())  # nothing to delete: the same world
    assert n.version == before
    objects = InMemoryObjects()
    before = objects.revision
    objects.put(_pod())  # plugins read pods from the snapshot, not the lister
    assert objects.revision == before
    objects.put(Namespace({"kind": "Namespace", "metadata": {"name": "team", "labels": {"a": "b"}}}))
    assert objects.revision != before


def test_a_failure_that_changes_nothing_writes_no_status():
    """As upstream's updatePod: the same condition and no nomination to change is no write."""
    from actors.failure_reuse import status_write_needed

    cond = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "0/1 nodes"}
    stored = Pod({**_pod().raw, "status": {"conditions": [dict(cond)]}})
    assert not status_write_needed(stored, cond, None)
    assert not status_write_needed(stored, cond, "")  # nothing nominated, nothing to clear
    assert status_write_needed(stored, cond, "n1")
    assert status_write_needed(stored, {**cond, "message": "0/2 nodes"}, None)
    assert status_write_needed(_pod(), cond, None)
    nominated = Pod({**stored.raw, "status": {"conditions": [dict(cond)], "nominatedNodeName": "n1"}})
    assert status_write_needed(nominated, cond, "")


async def test_repeated_identical_failures_leave_the_stored_pod_alone() -> None:
    async with Pipeline(None, clock=FakeClock(0.0)) as p:
        await p.client.apply([node("n0", cpu="1")])
        await p.client.apply([pod("small", cpu="100m", memory="10Mi")])
        await p.settle()
        await p.client.apply([pod("big", cpu="2", memory="10Mi")])
        await p.settle()
        first = await p.client.get("Pod", "default", "big")
        await p.client.delete("Pod", "default", "small")  # big is tried again and fails the same way
        await p.settle()
        same = await p.client.get("Pod", "default", "big")
        tainted = node("t", cpu="4")
        tainted["spec"] = {"taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}]}
        await p.client.apply([tainted])  # room enough, but a taint: another message
        await p.settle()
        changed = await p.client.get("Pod", "default", "big")
        events = [(e.message, e.count) for e in await p.client.events("Pod", "default/big")
                  if e.reason == "FailedScheduling"]
    assert same["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
    assert changed["metadata"]["resourceVersion"] != first["metadata"]["resourceVersion"]
    # the same failure twice is one stored event seen twice (client-go's correlator)
    assert [count for _, count in events] == [2, 1]
    assert events[0][0] != events[1][0] == changed["status"]["conditions"][-1]["message"]


def test_a_pod_is_signed_before_its_cycle_only_once_some_failure_is_kept() -> None:
    fwks = build_frameworks(load_config(None), FrameworkHandle())
    reuse = FailureReuse(fwks, lambda: (1, 0, 0), has_extenders=False)
    assert not reuse.may_know()  # nothing to find: successful cycles skip signing
    key = reuse.key(_pod(), False, (1, 0, 0))
    assert key is not None and key.world == (1, 0, 0)
    reuse.remember(key, FitError(_pod(), 3, Diagnosis()), "0/3 nodes are available.", None, False, False)
    assert reuse.may_know() and reuse.lookup(key) is not None
    off = FailureReuse(fwks, lambda: (1, 0, 0), has_extenders=False, enabled=False)
    assert not off.may_know()
