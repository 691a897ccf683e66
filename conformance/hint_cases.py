"""Queueing hint cases (SCHEMA-ADDITIONS.md section 6): one plugin built from the
case's args and gates, one of its registered hints called with (pod, oldObj,
newObj), as upstream's Test_isSchedulableAfter* tables do.

Upstream's hint names map to ours by spelling (isSchedulableAfterNodeChange ->
is_schedulable_after_node_change); the runner calls a hint only if the plugin
registers it (events_to_register), so a hint the queue never calls cannot pass."""
from __future__ import annotations

import re
from typing import Any, Mapping

from framework.api.groups import kind_key
from framework.api.objects import KINDS, KubeObject
from framework.cache import Snapshot
from framework.config import full_registry
from framework.features import FeatureGates
from framework.handle import FrameworkHandle, InMemoryObjects
from framework.plugins.helper.hints import HintError
from conformance.plugin_cases import CaseError
from conformance.queue_cases import parse_event

# The lister contents a case may give (`cluster`), by key.
_CLUSTER_KINDS = {"pvcs": "PersistentVolumeClaim", "pvs": "PersistentVolume", "nodes": "Node", "pods": "Pod",
                  "storageClasses": "StorageClass", "csiNodes": "CSINode", "csiDrivers": "CSIDriver"}
_UNNAMED = "unnamed"


def snake_case(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def case_object(raw: Any, what: str) -> Any:
    """A typed object for a dict with a known `kind`; anything else (a plain string
    standing for an object of the wrong kind, or null) as it is. Objects carry only
    what upstream's builders set: a missing name gets a placeholder (the Go test
    needs none), and a missing uid stays empty, as Go's zero value, so two pods
    without uids have equal uids there as here."""
    if not isinstance(raw, Mapping):
        return raw
    cls = KINDS.get(kind_key(raw) or "")
    if cls is None:
        raise CaseError(f"{what}: unknown kind {raw.get('kind')!r}")
    meta = dict(raw.get("metadata") or {})
    meta.setdefault("name", _UNNAMED)
    obj: KubeObject = cls({**raw, "metadata": meta})
    obj.uid = str(meta.get("uid") or "")
    return obj


def _hint(plugin: Any, upstream_name: str, event: str | None) -> Any:
    """The plugin's hint for upstream's name, registered (for the case's event when
    it names one)."""
    fn = getattr(plugin, snake_case(upstream_name), None)
    if fn is None:
        raise CaseError(f"{type(plugin).__name__} has no hint for upstream's {upstream_name}")
    registered = [reg for reg in plugin.events_to_register() if reg.hint == fn] \
        if hasattr(plugin, "events_to_register") else []
    if not registered:
        raise CaseError(f"{type(plugin).__name__}.{snake_case(upstream_name)} is not registered in events_to_register")
    if event is not None and not any(reg.event.matches(parse_event(event)) for reg in registered):
        raise CaseError(f"{type(plugin).__name__}.{snake_case(upstream_name)} is not registered for {event}")
    return fn


def run_hint_case(case: dict[str, Any]) -> dict[str, Any]:
    objects = InMemoryObjects()
    for key, items in (case.get("cluster") or {}).items():
        kind = _CLUSTER_KINDS.get(key)
        if kind is None:
            raise CaseError(f"cluster.{key}: unknown lister")
        for i, raw in enumerate(items):
            objects.put(case_object({"kind": kind, **raw}, f"cluster.{key}[{i}]"))
    handle = FrameworkHandle(snapshot=Snapshot(), objects=objects, features=FeatureGates(case.get("featureGates")))
    factory = full_registry().get(case["plugin"])
    if factory is None:
        raise CaseError(f"plugin {case['plugin']!r} is not implemented")
    plugin = factory(case.get("pluginArgs"), handle)
    fn = _hint(plugin, case["hint"], case.get("event"))
    pod = case_object(case.get("pod"), "pod")
    old, new = case_object(case.get("oldObj"), "oldObj"), case_object(case.get("newObj"), "newObj")
    try:
        out = {"hint": fn(pod, old, new).name, "error": False}
    except HintError:
        out = {"hint": "Queue", "error": True}  # upstream returns Queue with its error
    if not out["error"] and "error" not in (case.get("expect") or {}):
        del out["error"]  # `error` beside a result the case does not ask about reads as a failure to run
    return out
