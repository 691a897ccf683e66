"""A gated pod whose gate still holds is left in the unschedulable pool by a cluster
event, instead of being taken out, run through PreEnqueue and put back: in
PreemptionBasic each victim's deletion was offered to every preemptor still held by
DefaultPreemption. The framework says when the gate holds
(Framework.pre_enqueue_gate_holds); the queue asks it (RequeueDecisions.regated_in_place)."""
from __future__ import annotations

from actors.pipeline import Pipeline
from actors.queue.scheduling_queue import SchedulingQueue
from actors.store.memory import InMemoryBackend
from framework.api.objects import Pod
from framework.interface import ActionType, ClusterEvent, ClusterEventWithHint, Code, QueueingHint, Status
from framework.plugins.queuesort.priority_sort import PrioritySort

POD_DELETE = ClusterEvent("Pod", ActionType.Delete, "AssignedPodDelete")
PREEMPTION = "DefaultPreemption"


def pod(name: str, claims: bool = False) -> Pod:
    spec: dict = {"priority": 10, "containers": [{"name": "c"}]}
    if claims:
        spec["resourceClaims"] = [{"name": "gpu", "resourceClaimName": "gpu-claim"}]
    return Pod({"kind": "Pod", "metadata": {"name": name, "namespace": "default", "uid": name}, "spec": spec})


def held_queue(held: set[str], runs: list[str], *, gate_holds: bool = True, **kw) -> SchedulingQueue:
    """Pods named in `held` are gated by DefaultPreemption, whose registered Pod/Delete
    reaches them (its own hint skips; NodeResourcesFit's says Queue, as upstream's)."""
    def pre_enqueue(p: Pod) -> Status:
        runs.append(p.name)
        if p.name in held:
            return Status(Code.UnschedulableAndUnresolvable, "waiting", plugin=PREEMPTION)
        return Status()

    hints = {"NodeResourcesFit": [ClusterEventWithHint(POD_DELETE)],
             PREEMPTION: [ClusterEventWithHint(POD_DELETE, lambda p, old, new: QueueingHint.QueueSkip)]}
    return SchedulingQueue(less=PrioritySort().less, pre_enqueue=pre_enqueue, hints_for=lambda p: hints,
                           hint_maps=[hints],
                           gate_holds=(lambda p, plugin: p.name in held) if gate_holds else None, **kw)


def preempting(q: SchedulingQueue, held: set[str], name: str) -> None:
    """`name` failed for NodeResourcesFit and preempted: held from then on."""
    q.add(pod(name), 0.0)
    qpi = q.pop()
    assert qpi is not None and qpi.pod.name == name
    qpi.unschedulable_plugins = {"NodeResourcesFit"}
    q.add_unschedulable_if_not_present(qpi, 0.0)
    held.add(name)
    q.activate([pod(name)], 0.0)
    assert q.where(f"default/{name}") == "gated"


def test_a_victims_deletion_leaves_every_preemptor_whose_gate_holds_in_place() -> None:
    held, runs = set(), []
    q = held_queue(held, runs)
    for name in ("a", "b", "c"):
        preempting(q, held, name)
    runs.clear()
    assert q.move_all_to_active_or_backoff(POD_DELETE, pod("victim"), None, 1.0) == 0
    assert runs == [] and [q.where(f"default/{n}") for n in "abc"] == ["gated"] * 3
    held.discard("b")  # b's last victim is gone: only b goes
    assert q.move_all_to_active_or_backoff(POD_DELETE, pod("victim-2"), None, 2.0) == 1
    assert runs == ["b"] and [q.where(f"default/{n}") for n in "abc"] == ["gated", "active", "gated"]


def test_without_the_frameworks_word_every_held_preemptor_runs_pre_enqueue_again() -> None:
    held, runs = set(), []
    q = held_queue(held, runs, gate_holds=False)
    for name in ("a", "b"):
        preempting(q, held, name)
    runs.clear()
    assert q.move_all_to_active_or_backoff(POD_DELETE, pod("victim"), None, 1.0) == 2
    assert runs == ["a", "b"] and q.where("default/a") == q.where("default/b") == "gated"


def test_a_held_pod_the_move_would_park_in_backoff_still_moves_there() -> None:
    """Without SchedulerPopFromBackoffQ a pod still backing off goes to backoffQ without
    PreEnqueue (upstream's moveToBackoffQ): not the same place, so it is moved."""
    held, runs = set(), []
    q = held_queue(held, runs, pop_from_backoff_q=False)
    preempting(q, held, "p")
    assert q.move_all_to_active_or_backoff(POD_DELETE, pod("victim"), None, 0.5) == 1
    assert q.where("default/p") == "backoff"


async def test_the_framework_knows_the_gate_holds_only_where_the_plugins_before_it_read_only_the_pod() -> None:
    async with Pipeline(None, backend=InMemoryBackend()) as p:
        fwk = p.frameworks["default-scheduler"]
        assert [pl.name for pl in fwk.pre_enqueue_plugins][:3] == ["SchedulingGates", "DynamicResources", PREEMPTION]
        plain, claiming = pod("plain"), pod("claiming", claims=True)
        p.handle.preemptions.begin("plain")
        p.handle.preemptions.begin("claiming")
        assert fwk.pre_enqueue_gate_holds(plain, PREEMPTION)
        # DynamicResources reads the pod's claims from the cluster: a claim's event could gate it there.
        assert not fwk.pre_enqueue_gate_holds(claiming, PREEMPTION)
        p.handle.preemptions.end("plain")
        assert not fwk.pre_enqueue_gate_holds(plain, PREEMPTION)
        assert not fwk.pre_enqueue_gate_holds(plain, "NoSuchPlugin")
