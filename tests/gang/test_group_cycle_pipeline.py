"""The whole-group cycle through the real actor pipeline (store, queue, scheduler,
waiting room, binding cycles) with a fake clock: a scheduling.k8s.io gang is popped
as one unit, placed in one cycle, bound with no Permit wait, or rejected whole with
its reason on the PodGroup (PodGroupScheduled) and on every member (PodScheduled)."""
from __future__ import annotations

from typing import Any

from actors.clock import FakeClock
from actors.queue.actor import Assumed, DeletePod, Done, Move, Requeue
from actors.pipeline import Pipeline
from actors.scheduler_messages import BindingDone
from framework.interface import Code, Status
from tests.gang.harness import node

START = 1767225600.0  # 2026-01-01T00:00:00Z
NS = "default"


def gang(name: str, min_count: int, disruption: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {"schedulingPolicy": {"gang": {"minCount": min_count}},
                            "podGroupTemplateRef": {"workload": {"workloadName": "w", "podGroupTemplateName": name}}}
    if disruption:
        spec["disruptionMode"] = disruption
    return {"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup", "metadata": {"name": name, "namespace": NS},
            "spec": spec}


def member(name: str, cpu: int, group: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS},
            "spec": {"schedulingGroup": {"podGroupName": group},
                     "containers": [{"name": "c", "image": "pause", "resources": {"requests": {"cpu": str(cpu)}}}]}}


def nodes(*cpus: int) -> list[dict[str, Any]]:
    return [{"apiVersion": "v1", "kind": "Node", **node(f"n{i}", c)} for i, c in enumerate(cpus)]


async def placed(p: Pipeline) -> dict[str, str | None]:
    items, _ = await p.client.list("Pod")
    return {i["metadata"]["name"]: i["spec"].get("nodeName") for i in items}


def condition(raw: dict[str, Any], kind: str) -> dict[str, Any] | None:
    return next((c for c in (raw.get("status") or {}).get("conditions") or [] if c.get("type") == kind), None)


async def test_a_gang_that_fits_is_placed_in_one_group_cycle_and_bound_with_no_permit_wait() -> None:
    async with Pipeline(clock=FakeClock(START)) as p:
        parked: list[str] = []
        park = p.scheduler.park_at_permit
        p.scheduler.park_at_permit = lambda fwk, pod, host, t: (parked.append(pod.name), park(fwk, pod, host, t))[1]
        await p.client.apply(nodes(4, 4))
        await p.client.apply([gang("train", 4)])
        await p.client.apply([member(f"t{i}", 2, "train") for i in range(4)])
        await p.run_until_quiescent(max_seconds=5)
        assert all((await placed(p)).values())
        assert p.scheduler.group_cycle.cycles == 1 and parked == []
        pg = await p.client.get("PodGroup.scheduling.k8s.io", NS, "train")
        got = condition(pg, "PodGroupScheduled")
        assert got is not None and (got["status"], got["reason"], got["message"]) == ("True", "Scheduled", "")


class RecordingRef:
    """The scheduler's queue ref, recording what is told to the queue."""

    def __init__(self, ref: Any) -> None:
        self.ref, self.told = ref, []

    def try_tell(self, msg: Any) -> bool:
        self.told.append(msg)
        return self.ref.try_tell(msg)

    def tell(self, msg: Any) -> None:
        self.told.append(msg)
        self.ref.tell(msg)

    async def ask(self, msg: Any) -> Any:
        self.told.append(msg)
        return await self.ref.ask(msg)

    @property
    def stopped(self) -> bool:
        return self.ref.stopped


async def test_a_group_cycle_tells_the_queue_its_assumed_members_in_one_message() -> None:
    async with Pipeline(clock=FakeClock(START)) as p:
        recording = p.scheduler.queue = RecordingRef(p.scheduler.queue)
        await p.client.apply(nodes(4, 4))
        await p.client.apply([gang("train", 4)])
        await p.client.apply([member(f"t{i}", 2, "train") for i in range(4)])
        await p.run_until_quiescent(max_seconds=5)
        assert all((await placed(p)).values())
        assumed = [m for m in recording.told if isinstance(m, Assumed)]
        assert [sorted(m.pod_keys) for m in assumed] == [[f"{NS}/t{i}" for i in range(4)]]


async def _submit_a_gang_of_four(p: Pipeline) -> None:
    """Four 2-cpu members of gang "train" on four 4-cpu nodes, run until nothing moves."""
    await p.client.apply(nodes(4, 4))
    await p.client.apply([gang("train", 4)])
    await p.client.apply([member(f"t{i}", 2, "train") for i in range(4)])
    await p.run_until_quiescent(max_seconds=5)


async def _bind_a_gang_of_four(p: Pipeline) -> list[str]:
    """_submit_a_gang_of_four, every member placed: their keys, sorted."""
    await _submit_a_gang_of_four(p)
    assert all((await placed(p)).values())
    return sorted(f"{NS}/t{i}" for i in range(4))


async def test_a_groups_bindings_reach_the_scheduler_in_one_message_and_the_queue_only_as_their_deletepods() -> None:
    async with Pipeline(clock=FakeClock(START)) as p:
        recording = p.scheduler.queue = p.scheduler.outcomes.queue = p.scheduler.events.queue = \
            RecordingRef(p.scheduler.queue)
        inbox, put = p.scheduler.inbox, p.scheduler.inbox.put
        bindings: list[BindingDone] = []
        inbox.put = lambda msg: (bindings.append(msg) if isinstance(msg, BindingDone) else None, put(msg))[1]
        members = await _bind_a_gang_of_four(p)
        assert [sorted(a.pod.key for a, status in m.outcomes if status.is_success()) for m in bindings] == [members]
        # the store's events of the binds reached the scheduler first: each member's DeletePod
        # ended its attempt in the queue, and no Done follows them
        assert not [m for m in recording.told if isinstance(m, Done)]
        assert sorted(m.pod.key for m in recording.told if isinstance(m, DeletePod)) == members


async def test_a_failed_binding_among_a_groups_outcomes_ends_with_its_own_done_the_bound_members_by_their_deletepods() -> None:
    async with Pipeline(clock=FakeClock(START)) as p:
        recording = p.scheduler.queue = p.scheduler.outcomes.queue = RecordingRef(p.scheduler.queue)
        done = p.scheduler.binding_done
        # t1's binding cycle reports an error; its Bind went through, so the store's event
        # already took it out of the pending pods and the failure path ends it with a Done
        p.scheduler.binding_done = lambda a, status: done(a, Status(Code.Error, "lost") if a.pod.name == "t1"
                                                           else status)
        await _submit_a_gang_of_four(p)
        told = [(type(m).__name__, sorted(m.pod_keys) if isinstance(m, Done) else m.qpi.pod.key)
                for m in recording.told if isinstance(m, (Done, Requeue))]
        # the pods bound around the failure left the queue by their DeletePods (no Done
        # needed); the failure's own attempt ends with its Done
        assert told == [("Done", [f"{NS}/t1"])]


async def test_a_bound_member_leaves_the_queue_and_moves_its_waiters_in_one_message() -> None:
    async with Pipeline(clock=FakeClock(START)) as p:
        inbox, put = p.queue.inbox, p.queue.inbox.put
        told: list[Any] = []
        inbox.put = lambda msg: (told.append(msg), put(msg))[1]
        members = await _bind_a_gang_of_four(p)
        deleted = [m for m in told if isinstance(m, DeletePod)]
        assert sorted(m.pod.key for m in deleted) == members
        assert all(m.then is not None and m.then.new is m.pod and m.then.old is None and m.then.cross_topology_only
                   for m in deleted)
        assert not [m for m in told if isinstance(m, Move) and getattr(m.new, "key", None) in members]


async def big_gang_on_two_small_nodes(p: Pipeline) -> None:
    """Four members of 2 CPUs, minCount 4, on two 3-CPU nodes: two fit, two do not."""
    await p.client.apply(nodes(3, 3))
    await p.client.apply([gang("big", 4)])
    await p.client.apply([member(f"b{i}", 2, "big") for i in range(4)])
    await p.run_until_quiescent(max_seconds=5)


async def test_a_gang_short_of_min_count_is_rejected_whole_with_its_reason_on_the_group_and_each_pod() -> None:
    async with Pipeline(clock=FakeClock(START)) as p:
        await big_gang_on_two_small_nodes(p)
        assert set((await placed(p)).values()) == {None}
        assert p.scheduler.cache.assumed == set()
        pg = await p.client.get("PodGroup.scheduling.k8s.io", NS, "big")
        got = condition(pg, "PodGroupScheduled")
        reason = "minCount (4) cannot be satisfied: 2 scheduled, 1 remaining"
        assert got is not None and (got["status"], got["reason"], got["message"]) == ("False", "Unschedulable", reason)
        pods, _ = await p.client.list("Pod")
        conds = {i["metadata"]["name"]: condition(i, "PodScheduled") for i in pods}
        assert all(c is not None and c["status"] == "False" and c["reason"] == "Unschedulable" for c in conds.values())
        assert sum(c["message"] == reason for c in conds.values()) == 3  # two undone, one never tried
        assert sum("Insufficient cpu" in c["message"] for c in conds.values()) == 1  # the member no node took


async def test_a_rejected_gang_binds_whole_once_a_node_makes_room() -> None:
    async with Pipeline(clock=FakeClock(START)) as p:
        await big_gang_on_two_small_nodes(p)
        await p.client.apply(nodes(3, 3, 4)[2:])
        await p.run_until_quiescent(max_seconds=60)
        assert all((await placed(p)).values())
        pg = await p.client.get("PodGroup.scheduling.k8s.io", NS, "big")
        assert condition(pg, "PodGroupScheduled")["status"] == "True"


async def test_members_already_bound_count_toward_min_count_as_after_a_restart_mid_binding() -> None:
    # The store as a daemon killed between two members' bindings leaves it: two of the
    # four members bound, two pending. The group cycle places the two with the quorum
    # made up by the bound ones.
    async with Pipeline(clock=FakeClock(START)) as p:
        await p.client.apply(nodes(4, 4))
        await p.client.apply([gang("half", 4)])
        bound = [member(f"h{i}", 2, "half") for i in range(2)]
        for raw in bound:
            raw["spec"]["nodeName"] = "n0"
        await p.client.apply([*bound, *(member(f"h{i}", 2, "half") for i in range(2, 4))])
        await p.run_until_quiescent(max_seconds=5)
        assert await placed(p) == {"h0": "n0", "h1": "n0", "h2": "n1", "h3": "n1"}
        pg = await p.client.get("PodGroup.scheduling.k8s.io", NS, "half")
        assert condition(pg, "PodGroupScheduled")["status"] == "True"
