"""Out-of-tree plugins import the plugin contract from framework.interface and the
typed objects from framework.api.objects. Both modules were split by duty; every
name a plugin could import from them before the split must still import from
there, as the same object its new home defines."""
from __future__ import annotations

import importlib

import pytest

# Every public name each module defined before the split (framework/interface.py and
# framework/api/objects.py as of the split), with the module that now defines it.
INTERFACE_NAMES = {
    "framework.types": [
        "Code", "Status", "is_success", "MAX_NODE_SCORE", "MIN_NODE_SCORE", "MAX_TOTAL_SCORE",
        "MAX_PERMIT_TIMEOUT_SECONDS", "CycleState", "PreFilterResult", "PostFilterResult", "NodeScore",
        "NodePluginScores", "NodeToStatus", "QueuedPodInfo",
    ],
    "framework.events": ["ActionType", "QueueingHint", "ClusterEvent", "QueueingHintFn", "ClusterEventWithHint"],
    "framework.interface": [
        "WaitingPod", "Handle", "Plugin", "QueueSortPlugin", "PreEnqueuePlugin", "PreFilterExtensions",
        "PreFilterPlugin", "FilterPlugin", "PostFilterPlugin", "PreScorePlugin", "ScoreExtensions", "ScorePlugin",
        "ColumnarFilterPlugin", "ColumnarScorePlugin", "ColumnarScoreExtensions", "ReservePlugin", "PermitPlugin",
        "PreBindPlugin", "BindPlugin", "PostBindPlugin", "EnqueueExtensions", "Binder", "PluginFactory",
    ],
}
OBJECTS_NAMES = {
    "framework.api.meta": ["DEFAULT_NAMESPACE", "ObjectMeta", "KubeObject"],
    "framework.api.pod": ["DEFAULT_SCHEDULER_NAME", "POD_GROUP_LABEL", "ContainerPort", "PodResources", "Container",
                          "Pod"],
    "framework.api.storage": ["BETA_STORAGE_CLASS_ANNOTATION", "PersistentVolumeClaim", "PersistentVolume",
                              "StorageObject", "StorageClass", "CSINode", "CSIDriver", "VolumeAttachment"],
    "framework.api.objects": ["Node", "PodGroup", "PriorityClass", "SelectorObject", "Service",
                              "ReplicationController", "ReplicaSet", "StatefulSet", "PodDisruptionBudget",
                              "Namespace", "KINDS", "parse_object"],
}


def _cases(face: str, homes: dict[str, list[str]]) -> list[tuple[str, str, str]]:
    return [(face, home, name) for home, names in homes.items() for name in names]


@pytest.mark.parametrize("face, home, name",
                         _cases("framework.interface", INTERFACE_NAMES) + _cases("framework.api.objects", OBJECTS_NAMES),
                         ids=lambda v: v)
def test_a_name_plugins_imported_before_the_split_still_imports_from_the_same_module(face, home, name):
    assert getattr(importlib.import_module(face), name) is getattr(importlib.import_module(home), name)


@pytest.mark.parametrize("face, homes", [("framework.interface", INTERFACE_NAMES),
                                         ("framework.api.objects", OBJECTS_NAMES)])
def test_a_star_import_of_a_plugin_facing_module_gives_every_name_it_gave_before(face, homes):
    namespace: dict[str, object] = {}
    exec(f"from {face} import *", namespace)  # noqa: S102 - what a plugin's star import sees
    assert {n for names in homes.values() for n in names} <= namespace.keys()


def test_the_runtime_keeps_its_import_path():
    runtime = importlib.import_module("framework.runtime")
    from framework.runtime.framework import Framework
    from framework.runtime.post_filter import PostFilterRun
    from framework.runtime.scoring import NodeScoreList

    assert (runtime.Framework, runtime.PostFilterRun, runtime.NodeScoreList) == (Framework, PostFilterRun, NodeScoreList)
    assert runtime.EXTENSION_POINTS[0] == "preEnqueue" and runtime.POINT_METHODS["postBind"] == "post_bind"
    assert callable(runtime.run_unsuspended)
