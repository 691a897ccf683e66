"""Which schema checks which kind, and the walk of one: `SCHEMAS` keyed by the
store's kind key (framework.api.groups), Kueue's kinds by the version they are
written in (framework.api.schema.kueue). `schema_errors` is the checking walk of
framework.api.schema.admit and validate_object, given the kind key the caller
decided once (`kind_key` of the manifest). No I/O.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any

from framework.api.errors import ValidationError
from framework.api.groups import POD_GROUP_KEY, WORKLOAD_KEY
from framework.api.schema import kinds, workload
from framework.api.schema.common import TYPE_META
from framework.api.schema.dra_claim import RESOURCE_CLAIM, RESOURCE_CLAIM_TEMPLATE
from framework.api.schema.dra_devices import DEVICE_CLASS, RESOURCE_SLICE
from framework.api.schema.event import EVENT
from framework.api.schema.kueue import kueue_schema
from framework.api.schema.pod import POD
from framework.api.schema.types import Ctx, Obj, type_error

_SCHEMAS: dict[str, Obj] = {
    "Pod": POD,
    "Node": kinds.NODE,
    "PodGroup": kinds.POD_GROUP,
    "PriorityClass": kinds.PRIORITY_CLASS,
    "Namespace": kinds.NAMESPACE,
    "Service": kinds.SERVICE,
    "ReplicationController": kinds.REPLICATION_CONTROLLER,
    "ReplicaSet": kinds.REPLICA_SET,
    "StatefulSet": kinds.STATEFUL_SET,
    "PodDisruptionBudget": kinds.POD_DISRUPTION_BUDGET,
    "PersistentVolume": kinds.PERSISTENT_VOLUME,
    "PersistentVolumeClaim": kinds.PERSISTENT_VOLUME_CLAIM,
    "StorageClass": kinds.STORAGE_CLASS,
    "CSINode": kinds.CSI_NODE,
    "CSIDriver": kinds.CSI_DRIVER,
    "VolumeAttachment": kinds.VOLUME_ATTACHMENT,
    "Event": EVENT,
    # DRA (resource.k8s.io/v1)
    "DeviceClass": DEVICE_CLASS,
    "ResourceSlice": RESOURCE_SLICE,
    "ResourceClaim": RESOURCE_CLAIM,
    "ResourceClaimTemplate": RESOURCE_CLAIM_TEMPLATE,
    WORKLOAD_KEY: workload.WORKLOAD,
    POD_GROUP_KEY: workload.POD_GROUP,
}
# Kinds whose schema lists every top-level field upstream's type has (metadata, spec,
# status; a PriorityClass's value...): their top level is closed, so a misspelled
# `spec` or `metdata` is an unknown field. StorageClass keeps an open top level.
_CLOSED_TOP = frozenset(_SCHEMAS) - {"StorageClass"}
SCHEMAS: dict[str, Obj] = {
    kind: replace(obj, more=(obj.more or frozenset()) | TYPE_META) if kind in _CLOSED_TOP else obj
    for kind, obj in _SCHEMAS.items()
}


Unknown = list[tuple[str, dict[str, Any], str]]


def schema_errors(raw: dict[str, Any], key: str | None, strict: bool, semantic: bool = True,
                  unknown: Unknown | None = None, proven: Any = None) -> list[ValidationError]:
    """What `raw`'s kind's schema (`key`: its kind key) finds wrong with it, after its
    TypeMeta (apiVersion and kind, when given, are strings, whatever the kind); with
    `unknown` a list, the fields its closed objects do not know are added to it;
    `proven` is a value known clean (Ctx.proven)."""
    wrong = [type_error(f, raw[f], "string") for f in ("apiVersion", "kind")
             if raw.get(f) is not None and not isinstance(raw[f], str)]
    if wrong:
        return wrong
    schema = schema_of(key, raw.get("apiVersion"))
    if schema is None:
        return []
    ctx = Ctx(strict=strict, semantic=semantic, unknown=unknown, proven=proven)
    schema.check(raw, "", ctx)
    return ctx.errors


def schema_of(key: str | None, api_version: Any) -> Obj | None:
    """The schema of kind `key` (Kueue's: of the version it is written in)."""
    if key is None:
        return None
    return SCHEMAS.get(key) or kueue_schema(key, api_version)
