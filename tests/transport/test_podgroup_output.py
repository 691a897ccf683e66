"""`ksched get podgroups` and `describe podgroup` show why a gang waits."""
from transport.cli.describe import describe_podgroup
from transport.cli.tables import REASON_WIDTH, podgroups_table

GROUP = {
    "kind": "PodGroup",
    "metadata": {"name": "train", "namespace": "default"},
    "spec": {"minMember": 4},
    "status": {"phase": "Scheduling", "scheduleStartTime": "2026-01-01T00:00:00Z", "conditions": [{
        "type": "GangScheduled", "status": "False", "reason": "WaitingForQuorum",
        "message": "3/4 members reserved, waiting for quorum, 41s left"}]},
}


def member(i, node=""):
    return {"metadata": {"name": f"train-{i}", "namespace": "default",
                         "labels": {"scheduling.x-k8s.io/pod-group": "train"}},
            "spec": {"nodeName": node}, "status": {}}


def test_get_podgroups_shows_the_reason_from_the_status_condition():
    out = podgroups_table([GROUP], [member(0, "n1"), member(1)], now=0, namespaces=False)
    header, row = out.splitlines()[:2]
    assert header.split()[-1] == "REASON"
    assert "3/4 members reserved, waiting for quorum, 41s left" in row
    assert row.split()[:6] == ["train", "Scheduling", "4", "2", "1", "0"]


def test_long_reasons_are_cut_unless_wide():
    long = dict(GROUP, status={"conditions": [{"message": "rejected: member p-2: " + "x" * 300}]})
    narrow = podgroups_table([long], [], now=0, namespaces=False)
    assert "..." in narrow and "x" * (REASON_WIDTH + 10) not in narrow
    assert "x" * 300 in podgroups_table([long], [], now=0, namespaces=False, wide=True)


def test_describe_podgroup_lists_conditions_and_schedule_start():
    out = describe_podgroup(GROUP, [member(0)], [], now=0)
    assert "Conditions:" in out
    assert "WaitingForQuorum" in out and "41s left" in out
    assert "2026-01-01T00:00:00Z" in out
