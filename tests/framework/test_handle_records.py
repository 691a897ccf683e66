"""The handle keeps what plugins asked for (bindings, activations, evictions,
cleared nominations) only where no owner takes it: a running scheduler must not
hold every pod it ever bound."""
from __future__ import annotations

from framework.api.objects import Pod
from framework.handle import FrameworkHandle

POD = Pod({"metadata": {"name": "p", "namespace": "ns"}, "spec": {"containers": []}})


async def test_a_handle_with_owner_callbacks_hands_everything_on_and_keeps_nothing() -> None:
    seen: list[str] = []

    async def binder(pod: Pod, node: str) -> None:
        seen.append(f"bind:{pod.name}:{node}")

    handle = FrameworkHandle(binder=binder, activate=lambda pods: seen.append(f"activate:{len(pods)}"),
                             evict=lambda v, p, m: seen.append(f"evict:{v.name}"),
                             clear_nominations=lambda pods: seen.append(f"clear:{len(pods)}"))
    await handle.bind_pod(POD, "n1")
    handle.activate_pods([POD])
    handle.evict_pod(POD, POD, "preempted")
    handle.clear_nominated_node_names([POD])
    assert seen == ["bind:p:n1", "activate:1", "evict:p", "clear:1"]
    assert (handle.bound, handle.activated, handle.evicted, handle.cleared_nominations) == ([], [], [], [])


async def test_a_handle_without_an_owner_records_what_plugins_asked_for() -> None:
    handle = FrameworkHandle()
    await handle.bind_pod(POD, "n1")
    handle.activate_pods([POD])
    handle.evict_pod(POD, POD, "preempted")
    handle.clear_nominated_node_names([POD])
    assert handle.bound == [(POD, "n1")] and handle.activated == [POD]
    assert handle.evicted == [(POD, POD, "preempted")] and handle.cleared_nominations == [POD]
