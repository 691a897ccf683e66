"""A group cycle's node-local columns kept across gangs (framework/runtime/node_local.py,
CachePlacer.start_group's world): a gang of a template seen before (other labels, another
spec.schedulingGroup) reads the verdicts and raw scores the gangs before it computed,
and only the nodes whose generation moved since are filtered and scored again; a change
to an object a node-local plugin could read starts the columns afresh. Every gang lands
where the member-by-member path puts it (assert_same)."""
from __future__ import annotations

from framework.api.dra_kinds import DeviceClass
from framework.api.workload_api import SchedulingPodGroup
from framework.handle import InMemoryObjects
from framework.workload.member_placer import columns_world
from tests.framework.test_node_local_columns import NodeSpec, Shape, assert_same

# 1,000 nodes: a gang of two filters and scores (3 scorers) 2 x 420 nodes ahead from its
# rotating start; the next gang starts where it stopped, 160 nodes before the wrap.
ROWS = 4 * 840
EVERY_NODE = 4 * 1000


def nodes() -> list[NodeSpec]:
    return [NodeSpec(cpu=4000, used=0, prefer_taints=i % 3 == 0) for i in range(1000)]


def test_a_second_gang_of_the_same_template_computes_only_the_nodes_the_first_one_took() -> None:
    run = assert_same(nodes(), [(2, [Shape(cpu=100)] * 2)] * 3, seed=7)
    counts = run.placer.columns.counts
    # The first gang computes 840 nodes ahead, the second the 160 others; after that a
    # gang's window is fresh but for the nodes the gangs before were assumed on, which
    # it computes again (4 rows each) when they fall in its window. Without the columns
    # kept, each gang would compute its 840 afresh (3 x ROWS).
    assert EVERY_NODE <= counts.rows_computed <= EVERY_NODE + 2 * 2 * 4
    assert counts.rows_read == 3 * 2 * 420 * 4


def test_a_gang_api_object_written_between_gangs_keeps_the_columns() -> None:
    def status_written(objects: InMemoryObjects, k: int) -> None:
        # the group cycle writes a PodGroup's status; the next gang's PodGroup is created
        objects.put(SchedulingPodGroup({
            "apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup",
            "metadata": {"name": f"other-{k}", "namespace": "default"},
            "spec": {"schedulingPolicy": {"gang": {"minCount": 1}}}}))

    run = assert_same(nodes(), [(2, [Shape(cpu=100)] * 2)] * 2, seed=7, between=status_written)
    assert run.placer.columns.counts.rows_computed <= EVERY_NODE + 2 * 4


def test_another_object_written_between_gangs_starts_the_columns_afresh() -> None:
    def device_class(objects: InMemoryObjects, k: int) -> None:
        # NodeResourcesFit reads DeviceClasses (extended resources backed by devices)
        objects.put(DeviceClass({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
                                 "metadata": {"name": f"dc-{k}"}, "spec": {}}))

    run = assert_same(nodes(), [(2, [Shape(cpu=100)] * 2)] * 2, seed=7, between=device_class)
    assert run.placer.columns.counts.rows_computed == 2 * ROWS


def test_the_revision_beside_the_gang_kinds_moves_only_with_the_other_kinds() -> None:
    objects = InMemoryObjects()
    assert columns_world(objects) == 0
    objects.put(DeviceClass({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
                             "metadata": {"name": "gpu"}, "spec": {}}))
    seen = columns_world(objects)
    assert seen == objects.revision == 1
    objects.put(SchedulingPodGroup({"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup",
                                    "metadata": {"name": "g", "namespace": "default"},
                                    "spec": {"schedulingPolicy": {"gang": {"minCount": 1}}}}))
    assert objects.revision == 2 and columns_world(objects) == seen
    objects.delete("DeviceClass", "gpu")
    assert columns_world(objects) == 3
    assert columns_world(object()) is None  # a lister that cannot tell: every gang afresh
