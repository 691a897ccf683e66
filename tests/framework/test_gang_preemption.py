"""Preemption never takes a bound gang below minMember (beyond upstream's DefaultPreemption)."""
from framework.api.objects import PodGroup
from tests.framework.preemption_builders import Cluster, node, pod
from tests.framework.test_preemption_plugin import _post_filter

GROUP = "scheduling.x-k8s.io/pod-group"


def pod_group(name: str, min_member: int) -> PodGroup:
    return PodGroup({"metadata": {"name": name, "namespace": "default"}, "spec": {"minMember": min_member}})


def members(group: str, spread: dict[str, int]) -> list:
    out = []
    for node_name, count in spread.items():
        for i in range(count):
            out.append(pod(f"{group}-{node_name}-{i}", cpu="200m", node_name=node_name, labels={GROUP: group}))
    return out


def test_a_gang_at_its_quorum_loses_no_member_to_preemption():
    # 4 members on 2 nodes, minMember 4: any eviction would leave a partial gang.
    c = Cluster([node("n1"), node("n2")], members("job", {"n1": 2, "n2": 2}), objects=[pod_group("job", 4)])
    result, status = _post_filter(c, pod("urgent", cpu="300m", priority=1000))
    assert c.evicted() == []
    assert not status.is_success()
    assert (result is None or not result.nominated_node_name)


def test_members_above_the_quorum_may_be_preempted():
    # 6 bound, minMember 4: the two on n3 can go and the gang keeps 4.
    gang = members("job", {"n1": 2, "n2": 2, "n3": 2})
    c = Cluster([node("n1"), node("n2"), node("n3")], gang, objects=[pod_group("job", 4)])
    result, status = _post_filter(c, pod("urgent", cpu="300m", priority=1000))
    assert status.is_success()
    assert len(c.evicted()) >= 1
    assert all(name.startswith("job-") for name in c.evicted())
    evicted_nodes = {p.node_name for p in gang if p.name in c.evicted()}
    assert len(evicted_nodes) == 1
    assert 6 - len(c.evicted()) >= 4


def test_pods_outside_any_gang_are_preempted_as_upstream_does():
    c = Cluster([node("n1")], [pod("low", cpu="400m", node_name="n1")])
    result, status = _post_filter(c, pod("urgent", cpu="300m", priority=1000))
    assert status.is_success() and result.nominated_node_name == "n1"
    assert c.evicted() == ["low"]
