from framework.api.objects import Pod
from framework.handle import FrameworkHandle
from framework.interface import Code, CycleState
from framework.plugins.defaultbinder.default_binder import DefaultBinder

POD = Pod({"metadata": {"name": "p", "namespace": "ns"}, "spec": {"containers": []}})


async def test_bind_writes_the_binding_through_the_handle():
    written: list[tuple[str, str]] = []

    async def binder(pod: Pod, node_name: str) -> None:
        written.append((pod.key, node_name))

    handle = FrameworkHandle(binder=binder)
    status = await DefaultBinder.new(None, handle).bind(CycleState(), POD, "node1")
    assert status is None
    assert written == [("ns/p", "node1")]


async def test_a_failed_write_becomes_an_error_status():
    async def binder(pod: Pod, node_name: str) -> None:
        raise RuntimeError("conflict: pod already bound")

    status = await DefaultBinder.new(None, FrameworkHandle(binder=binder)).bind(CycleState(), POD, "node1")
    assert status is not None and status.code == Code.Error
    assert status.reasons == ["conflict: pod already bound"]
    assert isinstance(status.error, RuntimeError)
