import pytest

from framework.api.objects import Pod
from framework.interface import ActionType, Code, QueueingHint, Status
from framework.plugins.schedulinggates.scheduling_gates import SchedulingGates


def _pod(gates: list[str], uid: str = "u1") -> Pod:
    return Pod({"metadata": {"name": "p", "uid": uid},
                "spec": {"containers": [], "schedulingGates": [{"name": g} for g in gates]}})


@pytest.mark.parametrize(
    ("gates", "expected"),
    [
        ([], None),
        (["foo"], Status(Code.UnschedulableAndUnresolvable, "waiting for scheduling gates: [foo]")),
        (["foo", "bar"], Status(Code.UnschedulableAndUnresolvable, "waiting for scheduling gates: [foo bar]")),
    ],
    ids=["no-gates-enqueues", "one-gate", "two-gates-in-order"],
)
def test_pre_enqueue_holds_pods_with_gates(gates, expected):
    assert SchedulingGates.new(None, None).pre_enqueue(_pod(gates)) == expected


def test_registers_for_the_pod_losing_its_gates():
    (ev,) = SchedulingGates.new(None, None).events_to_register()
    assert ev.event.resource == "Pod"
    assert ev.event.action == ActionType.UpdatePodSchedulingGatesEliminated


@pytest.mark.parametrize(
    ("new", "hint"),
    [
        (_pod([]), QueueingHint.Queue),
        (_pod([], uid="other"), QueueingHint.QueueSkip),
    ],
    ids=["all-gates-removed", "another-pod"],
)
def test_hint_queues_only_for_this_pod(new, hint):
    """Only the queue's UpdatePodSchedulingGatesEliminated event (every gate gone)
    reaches the hint (tests/actors/test_pod_update_events.py); it checks the pod."""
    pl = SchedulingGates.new(None, None)
    (ev,) = pl.events_to_register()
    assert ev.hint(_pod(["foo", "bar"]), _pod(["foo", "bar"]), new) == hint
