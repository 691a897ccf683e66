"""A status-only write (kube-apiserver's status subresource, the client's UpdateStatus):
the stored object's spec and metadata are kept as stored and only the sent status is
judged and written. DynamicResources' PreBind writes a claim's allocation and
reservedFor this way (framework/bind_writes.StatusWrite), as upstream's bindClaim does.

For a ResourceClaim the stored claim is not walked again (its spec was admitted when it
was written; stored objects are never changed in place): the status alone is copied and
walked by the claim schema with the stored spec (claim_status_errors: upstream's
ValidateResourceClaimStatusUpdate, same paths and messages), the status strategy's
PrepareForUpdate (dropDeallocatedStatusDevices) and update rules (allocation immutable,
no new consumer while deleting) applied, and the claim restated from the stored one. Any
other kind takes the write chain's full update of the stored object with the sent status.

Preconditions as Update's: the sent resourceVersion, when given, must be the stored one
(Conflict), and a missing object is NotFound. A finalizer carried along (StatusWrite's,
the one metadata change allowed) is added as upstream's separate Update would add it,
refused while the object is being deleted."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from actors.store.claim_statuses import plain_status_copy
from actors.store.finalizers import check_no_new_finalizers
from actors.store.front_door import decode_stage
from actors.store.gates import gated
from actors.store.messages import Conflict, NotFound, refuse
from actors.store.write_chain import Admitted, WriteChain
from framework.api.dra_kinds import ResourceClaim
from framework.api.groups import kind_key
from framework.api.objects import KubeObject
from framework.api.schema.dra_claim import claim_status_errors
from framework.api.schema.dra_status import drop_deallocated_status_devices
from framework.api.schema.dra_update import claim_status_update_errors
from framework.api.schema.plain import NotFinite, plain_copy, too_deep
from framework.api.schema.types import MAX_DEPTH
from framework.bind_writes import StatusWrite


def status_written(write: StatusWrite, current: KubeObject | None, chain: WriteChain, fv: str | None = None
                   ) -> Admitted:
    """`write` over the stored `current` as the status subresource takes it, or the
    store's error (NotFound, Conflict, Invalid naming the status field; BadRequest from
    the decode stage). `fv`: a client's body (REST's PUT .../status), decoded with that
    fieldValidation as kube-apiserver decodes it (unknown fields dropped with a warning,
    or refused under Strict) before its status is judged; None: an in-process writer."""
    sent = write.obj
    if current is None:
        obj = chain.missing(sent, None)
        raise NotFound(f'{obj.kind} "{obj.key}" not found')
    meta = sent.get("metadata")
    meta = meta if type(meta) is dict or isinstance(meta, Mapping) else {}  # (a dict asked first: the ABC is slow)
    want = meta.get("resourceVersion")
    if want and str(want) != current.meta.resource_version:
        raise Conflict.stale(current.kind, current.key)
    raw = _with_status(current.raw, sent.get("status"), write.finalizer)
    own_meta = raw.get("metadata")  # the stored metadata, or it with the finalizer added
    if not isinstance(current, ResourceClaim):
        return chain.update(raw, current, fv)
    said: list[str] = []
    if fv is not None:
        # The decode stage alone: unknown fields and apiVersion; the schema's verdict on the
        # status is the status walk's below (spec and metadata are the stored ones, already
        # admitted; the object exists, so its namespace does).
        decoded = decode_stage(current.kind, raw, fv, chain.rules.name_formats, lambda _ns: True, said).raw
        raw = {k: v for k, v in raw.items() if k != "status"}  # the stored spec and metadata themselves
        if isinstance(decoded, Mapping) and decoded.get("status") is not None:
            raw["status"] = decoded["status"]
    check_no_new_finalizers(raw, current.raw)
    raw = gated(kind_key(raw), raw, current.raw, chain.features)
    status = raw.get("status")
    plain = plain_status_copy(status, current.raw.get("spec") or {}, chain.rules.name_formats)
    if plain is not None:  # the allocator's plain shape, every part valid: the walk would find nothing
        raw["status"] = plain
    elif isinstance(status, dict):  # as admission's one copy (nulls dropped), of the status alone
        copy, deep = plain_copy(status)
        if deep is not None:  # named from the object's root, the status one level down
            deep = too_deep(status, "status", MAX_DEPTH - 1)
            if deep is not None and not isinstance(deep, NotFinite):
                refuse([deep])
        errors = claim_status_errors(copy, current.raw.get("spec") or {}, chain.rules.name_formats)
        refuse(errors or ([deep] if deep is not None else []))
        raw["status"] = copy
    elif status is not None:
        refuse(claim_status_errors(status, {}, chain.rules.name_formats))  # its type, named
    raw = drop_deallocated_status_devices(raw, current.raw)
    refuse(claim_status_update_errors(raw, current.raw))
    return Admitted(raw=raw, obj=_restated(current, raw, own_meta), warnings=said)


def _restated(current: ResourceClaim, raw: dict[str, Any], own_meta: Any) -> ResourceClaim:
    """current.restated(raw): for `raw` with the stored spec and apiVersion themselves and
    `own_meta` (the stored metadata, maybe with the finalizer added: equal to it but for
    finalizers, which restated sets aside), with_own_status, which answers the same
    without comparing the metadata (restated's compare of two merged copies)."""
    stored = current.raw
    if type(raw) is dict and raw.get("metadata") is own_meta and raw.get("spec") is stored.get("spec") \
            and raw.get("apiVersion") is stored.get("apiVersion"):
        return current.with_own_status(raw)
    return current.restated(raw)


def _with_status(stored: Mapping[str, Any], status: Any, finalizer: str) -> dict[str, Any]:
    """The stored object with `status` (none: the status left out), its metadata as
    stored but for `finalizer` added."""
    raw = {k: v for k, v in stored.items() if k != "status"}
    if status is not None:
        raw["status"] = status
    meta = stored.get("metadata")
    meta = meta if type(meta) is dict or isinstance(meta, Mapping) else {}
    have = list(meta.get("finalizers") or [])
    if finalizer and finalizer not in have:
        raw["metadata"] = {**meta, "finalizers": have + [finalizer]}
    return raw

