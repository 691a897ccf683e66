"""kube-apiserver's decode stage, before validation: the manifest's apiVersion must
serve its kind, and fields its kind does not have are refused, reported or dropped
per the request's fieldValidation (Strict, Warn, Ignore), as upstream's strict
decoding does. No I/O; the store calls `decode` for every client write that says
how to treat unknown fields (framework.api.schema marks which objects are closed).
"""
from __future__ import annotations

import json
from typing import Any

from framework.api.schema import unknown_fields, without_nulls

FIELD_VALIDATION = ("Strict", "Warn", "Ignore")

# The group-version that serves each kind ksched stores (as kube-apiserver serves them).
GROUP_VERSIONS: dict[str, str] = {
    "Pod": "v1", "Node": "v1", "Namespace": "v1", "Service": "v1", "ReplicationController": "v1",
    "PersistentVolume": "v1", "PersistentVolumeClaim": "v1", "Event": "v1",
    "ReplicaSet": "apps/v1", "StatefulSet": "apps/v1",
    "PodDisruptionBudget": "policy/v1",
    "PriorityClass": "scheduling.k8s.io/v1",
    "PodGroup": "scheduling.x-k8s.io/v1alpha1",
    "StorageClass": "storage.k8s.io/v1", "CSINode": "storage.k8s.io/v1", "CSIDriver": "storage.k8s.io/v1",
    "VolumeAttachment": "storage.k8s.io/v1",
}


class DecodeError(Exception):
    """A manifest kube-apiserver would not decode: its BadRequest (400)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def check_field_validation(mode: str) -> str:
    if mode not in FIELD_VALIDATION:
        raise DecodeError(f'fieldValidation: Unsupported value: "{mode}": supported values: '
                          + ", ".join(f'"{m}"' for m in FIELD_VALIDATION))
    return mode


def decode(raw: Any, mode: str) -> tuple[Any, list[str]]:
    """`raw` as kube-apiserver decodes it under fieldValidation `mode`: (the manifest,
    with unknown fields dropped under Warn and Ignore, as a copy; warnings). Raises
    DecodeError for a missing apiVersion, one that does not serve the kind, and under
    Strict for unknown fields (every one named). A manifest that is not a map or
    has no kind is left to validation (which names what is wrong)."""
    check_field_validation(mode)
    if not isinstance(raw, dict) or not isinstance(raw.get("kind"), str) or raw["kind"] not in GROUP_VERSIONS:
        return raw, []
    kind, version = raw["kind"], raw.get("apiVersion")
    if version is None or version == "":
        raise DecodeError(f"Object 'apiVersion' is missing in '{_compact(raw)}'")
    if not isinstance(version, str):
        return raw, []  # the schema names the wrong type
    if version != GROUP_VERSIONS[kind]:
        raise DecodeError(f"the API version in the data ({version}) does not match the expected API version "
                          f"({GROUP_VERSIONS[kind]})")
    raw = without_nulls(raw)  # the store's own copy: dropping fields below changes no one else's map
    unknown = sorted(unknown_fields(raw), key=lambda u: u[0])
    if not unknown:
        return raw, []
    named = [f'unknown field "{path}"' for path, _, _ in unknown]
    if mode == "Strict":
        raise DecodeError(f'{kind} in version "{version.rsplit("/", 1)[-1]}" cannot be handled as a {kind}: '
                          f"strict decoding error: {', '.join(named)}")
    for _, holder, key in unknown:
        holder.pop(key, None)
    return raw, named if mode == "Warn" else []


def _compact(raw: Any) -> str:
    try:
        return json.dumps(raw, separators=(",", ":"), sort_keys=False)[:1024]
    except (TypeError, ValueError):
        return repr(raw)[:1024]
