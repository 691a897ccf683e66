"""Which plugins' registrations the queue consults, and so which events it acts on
(upstream's fillEnqueueExtensions, buildQueueingHintMap, isEventOfInterest)."""
from __future__ import annotations

from actors.pipeline import events_with_defaults
from actors.queue.interest import EventInterest
from framework.config import build_frameworks, full_registry, load_config
from framework.handle import FrameworkHandle
from framework.interface import ActionType, ClusterEvent
from framework.plugins import Registry
from tests.framework.fakes import FilterFake

SERVICE_ADD = ClusterEvent("Service", ActionType.Add, "ServiceAdd")
NODE_ADD = ClusterEvent("Node", ActionType.Add, "NodeAdd")


def _maps(cfg: dict | None = None, registry: Registry | None = None) -> dict:
    fwks = build_frameworks(load_config(cfg), FrameworkHandle(), registry)
    return events_with_defaults(next(iter(fwks.values())))


def test_only_plugins_that_can_reject_a_pod_register_events():
    maps = _maps()
    for name in ("PrioritySort", "ImageLocality", "NodeResourcesBalancedAllocation", "DefaultBinder"):
        assert name not in maps  # sort, score and bind plugins reject no pod
    assert "NodeResourcesFit" in maps and "SchedulingGates" in maps
    # DefaultPreemption's PreEnqueue holds a preemptor while its preemption runs: it
    # registers Pod/Delete, as upstream's (SchedulerAsyncPreemption).
    assert [(r.event.resource, r.event.action) for r in maps["DefaultPreemption"]] == [("Pod", ActionType.Delete)]
    interest = EventInterest([maps])
    assert interest(NODE_ADD)
    assert not interest(SERVICE_ADD)  # before, PrioritySort's default registration covered every event


def test_a_filter_without_registrations_cares_about_every_event():
    extra = Registry()
    extra.register("Picky", lambda args, handle: FilterFake("Picky"))
    maps = _maps({"profiles": [{"plugins": {"filter": {"enabled": [{"name": "Picky"}]}}}]}, full_registry(extra))
    assert [reg.event.resource for reg in maps["Picky"]] == ["*"]
    assert EventInterest([maps])(SERVICE_ADD)
