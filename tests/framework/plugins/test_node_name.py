import pytest

from framework.api.objects import Node, Pod
from framework.cache import NodeInfo
from framework.interface import ActionType, Code, CycleState, Status
from framework.plugins.nodename.node_name import NodeName


@pytest.mark.parametrize(
    ("node_name", "expected"),
    [
        ("", None),
        ("node1", None),
        ("node2", Status(Code.UnschedulableAndUnresolvable, "node(s) didn't match the requested node name")),
    ],
    ids=["no-name-fits-anywhere", "named-node-fits", "other-node-rejected"],
)
def test_filter_keeps_only_the_named_node(node_name, expected):
    pod = Pod({"metadata": {"name": "p"}, "spec": {"containers": [], "nodeName": node_name}})
    node_info = NodeInfo(Node({"metadata": {"name": "node1"}}))
    assert NodeName.new(None, None).filter(CycleState(), pod, node_info) == expected


def test_registers_for_node_add_and_update():
    (ev,) = NodeName.new(None, None).events_to_register()
    assert ev.event.resource == "Node" and ev.event.action == ActionType.Add | ActionType.Update


@pytest.mark.parametrize("node_name", ["", "node1", "node3"], ids=["no-name", "named-node-listed", "named-node-absent"])
def test_the_columnar_form_answers_as_filter_does_node_by_node(node_name):
    pod = Pod({"metadata": {"name": "p"}, "spec": {"containers": [], "nodeName": node_name}})
    nodes = [NodeInfo(Node({"metadata": {"name": f"node{i}"}})) for i in range(3)]
    plugin = NodeName.new(None, None)
    state = CycleState()
    assert plugin.filter_nodes(state, pod, nodes) == [plugin.filter(state, pod, ni) for ni in nodes]
