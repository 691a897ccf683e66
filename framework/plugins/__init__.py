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
    "framework.plugins.queuesort.priority_sort",
    "framework.plugins.schedulinggates.scheduling_gates",
    "framework.plugins.nodeunschedulable.node_unschedulable",
    "framework.plugins.nodename.node_name",
    "framework.plugins.nodeports.node_ports",
    "framework.plugins.nodeaffinity.node_affinity",
    "framework.plugins.tainttoleration.taint_toleration",
    "framework.plugins.noderesources.fit",
    "framework.plugins.noderesources.balanced_allocation",
    "framework.plugins.imagelocality.image_locality",
    "framework.plugins.volumebinding.volume_binding",
    "framework.plugins.volumerestrictions.volume_restrictions",
    "framework.plugins.volumezone.volume_zone",
    "framework.plugins.dynamicresources.dynamic_resources",
    "framework.plugins.nodevolumelimits.node_volume_limits",
    "framework.plugins.selectorspread.selector_spread",
    "framework.plugins.interpodaffinity.plugin",
    "framework.plugins.podtopologyspread.plugin",
    "framework.plugins.defaultpreemption.default_preemption",
    "framework.plugins.defaultbinder.default_binder",
    "framework.plugins.coscheduling.coscheduling",
    "framework.plugins.gangscheduling.gangscheduling",
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
