"""kube-apiserver's decode stage, before validation: the manifest's apiVersion must
serve its kind, and fields its kind does not have are refused, reported or dropped
per the request's fieldValidation (Strict, Warn, Ignore), as upstream's strict
decoding does. No I/O. `decode` is the stage, given the kind key the write chain
decided once: the checks that need no walk (`decodable`), then the object's one
admission (framework.api.schema.admit_as, which finds the unknown fields in the same
walk as its errors: the schema marks which objects are closed), then what
fieldValidation makes of the unknown fields. A write that names no fieldValidation
(an in-process writer) is admitted without the decode checks.
"""
from __future__ import annotations

import json
from typing import Any

from framework.api.groups import POD_GROUP_KEY, WORKLOAD_KEY
from framework.api.schema import SchemaVerdict, admit_as


FIELD_VALIDATION = ("Strict", "Warn", "Ignore")

# The group-version that serves each kind ksched stores (as kube-apiserver serves them).
GROUP_VERSIONS: dict[str, str] = {
    "Pod": "v1", "Node": "v1", "Namespace": "v1", "Service": "v1", "ReplicationController": "v1",
    "PersistentVolume": "v1", "PersistentVolumeClaim": "v1", "Event": "v1",
    "ReplicaSet": "apps/v1", "StatefulSet": "apps/v1",
    "PodDisruptionBudget": "policy/v1",
    "PriorityClass": "scheduling.k8s.io/v1",
    "PodGroup": "scheduling.x-k8s.io/v1alpha1",
    # Kubernetes' own gang API, keyed by group (framework.api.groups)
    WORKLOAD_KEY: "scheduling.k8s.io/v1alpha2", POD_GROUP_KEY: "scheduling.k8s.io/v1alpha2",
    "StorageClass": "storage.k8s.io/v1", "CSINode": "storage.k8s.io/v1", "CSIDriver": "storage.k8s.io/v1",
    "VolumeAttachment": "storage.k8s.io/v1",
    **{k: "resource.k8s.io/v1" for k in ("DeviceClass", "ResourceSlice", "ResourceClaim", "ResourceClaimTemplate")},
    # Kueue's kinds: the storage version here, the other served ones in ALSO_SERVED
    **{k: "kueue.x-k8s.io/v1beta2" for k in ("ResourceFlavor", "ClusterQueue", "Cohort", "LocalQueue", "Workload",
                                              "WorkloadPriorityClass")},
}
# Kinds served in more than one version (kube-apiserver converts; framework.kueue.versions).
ALSO_SERVED: dict[str, tuple[str, ...]] = {
    k: ("kueue.x-k8s.io/v1beta1",) for k, gv in GROUP_VERSIONS.items() if gv == "kueue.x-k8s.io/v1beta2"}


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


def decode(key: str | None, raw: Any, mode: str | None, strict: bool,
           proven: Any = None) -> tuple[SchemaVerdict, list[str]]:
    """`raw` (of kind key `key`) decoded under fieldValidation `mode` and admitted:
    the admission and what the client should be told of its unknown fields (under
    Warn a warning each; under Ignore nothing: they are dropped from the copy).
    Raises DecodeError for what kube-apiserver would not decode (`decodable`; under
    Strict, unknown fields, every one named). With `mode` None: admitted only.
    `proven`: a top-level value already admitted (admit_as)."""
    known = decodable(key, raw, mode) if mode is not None else False
    checked = admit_as(key, raw, strict, unknown=known, proven=proven)
    if not known or not checked.unknown:
        return checked, []
    named = [f'unknown field "{path}"' for path in checked.unknown]
    if mode == "Strict":
        kind, version = raw["kind"], raw["apiVersion"]
        raise DecodeError(f'{kind} in version "{version.rsplit("/", 1)[-1]}" cannot be handled as a {kind}: '
                          f"strict decoding error: {', '.join(named)}")
    return checked, named if mode == "Warn" else []


def decodable(key: str | None, raw: Any, mode: str) -> bool:
    """The checks of kube-apiserver's decode that need no walk of the object: False
    for a manifest that is not a map or has no kind this stage knows (validation
    names what is wrong), or a non-string apiVersion (the schema names its type).
    Raises DecodeError for a fieldValidation that is none of FIELD_VALIDATION, a
    missing apiVersion and one that does not serve the kind."""
    check_field_validation(mode)
    if not isinstance(raw, dict) or key is None or key not in GROUP_VERSIONS:
        return False
    version = raw.get("apiVersion")
    if version is None or version == "":
        raise DecodeError(f"Object 'apiVersion' is missing in '{_compact(raw)}'")
    if not isinstance(version, str):
        return False
    if version != GROUP_VERSIONS[key] and version not in ALSO_SERVED.get(key, ()):
        raise DecodeError(f"the API version in the data ({version}) does not match the expected API version "
                          f"({GROUP_VERSIONS[key]})")
    return True


def _compact(raw: Any) -> str:
    try:
        return json.dumps(raw, separators=(",", ":"), sort_keys=False)[:1024]
    except (TypeError, ValueError):
        return repr(raw)[:1024]
