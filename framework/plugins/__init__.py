"""The in-tree plugin registry: upstream plugin name -> factory.

Each module here defines plugin classes with a `name` and a classmethod
`new(args, handle)`, and lists them in a module-level `PLUGINS`. Out-of-tree
plugins come from config ("package.module:Class") or the `ksched.plugins`
entry-point group (framework.config loads those).
"""
from __future__ import annotations

import importlib
from typing import Any

from framework.interface import PluginFactory

# Modules of in-tree plugins, in the order upstream's registry lists them.
IN_TREE_MODULES = [
    "framework.plugins.queue_sort",
    "framework.plugins.scheduling_gates",
    "framework.plugins.node_unschedulable",
    "framework.plugins.node_name",
    "framework.plugins.node_ports",
    "framework.plugins.node_affinity",
    "framework.plugins.taint_toleration",
    "framework.plugins.node_resources_fit",
    "framework.plugins.node_resources_balanced_allocation",
    "framework.plugins.image_locality",
    "framework.plugins.volume_binding",
    "framework.plugins.volume_restrictions",
    "framework.plugins.volume_zone",
    "framework.plugins.node_volume_limits",
    "framework.plugins.selector_spread",
    "framework.plugins.inter_pod_affinity",
    "framework.plugins.pod_topology_spread",
    "framework.plugins.default_preemption",
    "framework.plugins.default_binder",
    "framework.plugins.coscheduling",
]


class Registry(dict[str, PluginFactory]):
    """name -> factory; registering a name twice is an error."""

    def register(self, name: str, factory: PluginFactory) -> None:
        if name in self:
            raise ValueError(f"a plugin named {name!r} is already registered")
        self[name] = factory

    def register_class(self, cls: Any) -> None:
        self.register(cls.name, cls.new)

    def merged(self, other: "Registry") -> "Registry":
        out = Registry(self)
        for name, factory in other.items():
            out.register(name, factory)
        return out


def in_tree_registry() -> Registry:
    reg = Registry()
    for module_name in IN_TREE_MODULES:
        module = importlib.import_module(module_name)
        for cls in module.PLUGINS:
            reg.register_class(cls)
    return reg
