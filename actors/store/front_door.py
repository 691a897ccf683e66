"""The one admission of each object written to the store, for every front door
(msgpack, REST, CLI, in-process writers): `admission` copies it without its null
fields and walks its kind's schema once (framework.api.schema.admit_as, given the
kind key the write chain decided). For a write that says how to treat unknown fields
(messages.Create's field_validation), the same walk serves kube-apiserver's decode
stage (framework.api.decode.decode: apiVersion, unknown fields), followed by its
NamespaceLifecycle admission (a namespaced object
goes into a namespace that exists; `default`, `kube-system` and `kube-public`
always do). In-process writers (the bench, the conformance driver) send no
field_validation and skip the decode stage.

This is the write chain's decode stage (actors/store/write_chain.py: `decoded`);
defaulting and the pod's create-time status are each kind's strategy
(actors/store/strategies.py)."""
from __future__ import annotations

from typing import Any, Callable

from actors.store.messages import BadRequest, NotFound, refuse
from framework.api.decode import DecodeError, decode
from framework.api.objects import KINDS
from framework.api.schema import SchemaVerdict
from framework.kueue.versions import to_storage

BUILTIN_NAMESPACES = frozenset({"default", "kube-system", "kube-public"})
# NamespaceLifecycle's immortal namespaces: deleting one is Forbidden.
IMMORTAL_NAMESPACES = BUILTIN_NAMESPACES
# Kinds whose objects a controller would act on; ksched runs none.
WORKLOADS = frozenset({"ReplicaSet", "StatefulSet", "ReplicationController"})


def decode_stage(key: str | None, raw: Any, mode: str | None, strict: bool, namespace_exists: Callable[[str], bool],
                 warnings: list[str] | None, proven: Any = None) -> SchemaVerdict:
    """`raw`, of kind key `key` (the write chain's kind_key), admitted
    (framework.api.schema.admit_as; strict: name formats, as the store's
    WriteRules.name_formats). With fieldValidation `mode` it is decoded as well
    (framework.api.decode.decode): BadRequest when it cannot be (a wrong apiVersion;
    unknown fields under Strict), NotFound when its namespace does not exist; unknown
    fields are dropped from the copy, and what the client should be told is added to
    `warnings`. The schema's errors are the caller's to refuse (after the decode
    stage's, as upstream). An object of a kind served in several versions is checked
    in the version it is written in and kept in its storage version (Kueue's v1beta1
    as v1beta2). `proven`: a top-level value of `raw` already admitted (a pod's spec,
    actors/store/pod_specs.py), kept and not walked again."""
    try:
        checked, said = decode(key, raw, mode, strict, proven)
    except DecodeError as e:
        raise BadRequest(e.message) from None
    if mode is not None:
        cls = KINDS.get(key) if key is not None else None
        if cls is not None and cls.namespaced:
            meta = checked.raw.get("metadata")
            ns = meta.get("namespace") if isinstance(meta, dict) else None
            ns = ns if isinstance(ns, str) and ns else "default"
            if ns not in BUILTIN_NAMESPACES and not namespace_exists(ns):
                raise NotFound(f'namespaces "{ns}" not found')
        if key in WORKLOADS:
            said.append(f"ksched runs no controllers: no pods will be created from this {key}")
        if warnings is not None:
            warnings.extend(said)
    if not checked.errors:
        checked.raw = to_storage(checked.raw)
    return checked


def decoded(key: str | None, raw: Any, mode: str | None, strict: bool, namespace_exists: Callable[[str], bool],
            warnings: list[str]) -> Any:
    """The manifest as the API server would keep it (null fields dropped), or Invalid
    naming the first field its kind's schema (framework.api.schema) refuses."""
    checked = decode_stage(key, raw, mode, strict, namespace_exists, warnings)
    refuse(checked.errors)
    return checked.raw
