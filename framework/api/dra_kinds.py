"""DRA's kinds (resource.k8s.io/v1) as stored objects: DeviceClass, ResourceSlice,
ResourceClaim and ResourceClaimTemplate. Validation is the schema's
(framework.api.schema.dra, .dra_devices; updates in .dra_update); these typed views hold
what the scheduler and the resourceclaim controller read, parsed once. Registered in
KINDS here, so the store keeps, serves and watches them like every other kind."""
from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Mapping
from typing import Any

from framework.api.errors import ValidationError
from framework.api.meta import KubeObject, _map, _str
from framework.api.objects import KINDS

API_VERSION = "resource.k8s.io/v1"
# The annotation the resourceclaim controller puts on a claim it made from a template:
# which of the pod's spec.resourceClaims the claim is for.
POD_CLAIM_NAME_ANNOTATION = "resource.kubernetes.io/pod-claim-name"
# metadata that ResourceClaim.restated may see change: set alike on both sides before comparing
_VERSIONING = {"resourceVersion": None, "finalizers": None}
# id(raw) -> (raw, the claim the store made of it): restated() hands a stored raw's own parse
# back (the scheduler restates the claim the bind's reply carries, the store's raw itself)
_STORED: dict[int, tuple[Mapping[str, Any], "ResourceClaim"]] = {}
_STORED_KEPT = 4096


def _check_version(raw: Mapping[str, Any]) -> None:
    version = raw.get("apiVersion")
    if version is not None and version != API_VERSION:
        raise ValidationError("apiVersion", f"must be {API_VERSION}, got {version!r}")


def _dicts(value: Any) -> list[Mapping[str, Any]]:
    # (a dict asked first: the ABC's isinstance costs several times a type check)
    return [v for v in value if type(v) is dict or isinstance(v, Mapping)] if isinstance(value, list) else []


class DeviceClass(KubeObject):
    __slots__ = ("spec", "selectors")
    kind = "DeviceClass"
    namespaced = False

    def __init__(self, raw: Mapping[str, Any]) -> None:
        super().__init__(raw)
        _check_version(raw)
        self.spec = _map(raw, "spec", "")
        self.selectors: tuple[str, ...] = tuple(
            str((s.get("cel") or {}).get("expression", "")) for s in _dicts(self.spec.get("selectors")))


@dataclass(frozen=True, slots=True)
class DeviceRef:
    """One allocated device: driver, pool and device name (upstream's DeviceID)."""

    driver: str
    pool: str
    device: str

    @property
    def id(self) -> str:
        return f"{self.driver}/{self.pool}/{self.device}"


_REFS: dict[tuple[Any, Any, Any], DeviceRef] = {}  # the cluster's devices, made once (DeviceRef is a value)


def _device_ref(result: Mapping[str, Any]) -> DeviceRef:
    """An allocation result's device."""
    key = (result.get("driver", ""), result.get("pool", ""), result.get("device", ""))
    ref = _REFS.get(key)
    if ref is None:
        if len(_REFS) >= 1 << 16:
            _REFS.clear()
        ref = _REFS[key] = DeviceRef(str(key[0]), str(key[1]), str(key[2]))
    return ref


class ResourceSlice(KubeObject):
    __slots__ = ("spec", "driver", "pool", "pool_generation", "slice_count", "node_name", "all_nodes", "devices")
    kind = "ResourceSlice"
    namespaced = False

    def __init__(self, raw: Mapping[str, Any]) -> None:
        super().__init__(raw)
        _check_version(raw)
        self.spec = _map(raw, "spec", "")
        self.driver = _str(self.spec, "driver", "spec")
        pool = _map(self.spec, "pool", "spec")
        self.pool = _str(pool, "name", "spec.pool")
        self.pool_generation = int(pool.get("generation") or 0)
        self.slice_count = int(pool.get("resourceSliceCount") or 0)
        self.node_name = _str(self.spec, "nodeName", "spec")
        self.all_nodes = self.spec.get("allNodes") is True
        self.devices: tuple[str, ...] = tuple(str(d.get("name", "")) for d in _dicts(self.spec.get("devices")))


# id(claim spec) -> (the spec, its request names): the claims made from one template share its spec
_REQUEST_NAMES: dict[int, tuple[Mapping[str, Any], tuple[str, ...]]] = {}


def _request_names(spec: Mapping[str, Any]) -> tuple[str, ...]:
    """The names of the spec's requests, read once per spec object (never changed in place)."""
    known = _REQUEST_NAMES.get(id(spec))
    if known is not None and known[0] is spec:
        return known[1]
    devices = spec.get("devices") if isinstance(spec.get("devices"), Mapping) else {}
    names = tuple(str(r.get("name", "")) for r in _dicts(devices.get("requests")))
    if len(_REQUEST_NAMES) >= _STORED_KEPT:
        _REQUEST_NAMES.clear()
    _REQUEST_NAMES[id(spec)] = (spec, names)
    return names


class ResourceClaim(KubeObject):
    __slots__ = ("spec", "status", "request_names", "allocated", "reserved_for", "_controller")
    kind = "ResourceClaim"

    def __init__(self, raw: Mapping[str, Any]) -> None:
        super().__init__(raw)
        _check_version(raw)
        spec = raw.get("spec")
        self.spec = spec if type(spec) is dict else _map(raw, "spec", "")  # (a dict asked first, as _dicts)
        self.request_names: tuple[str, ...] = _request_names(self.spec)
        self._controller: tuple[str, str] | None = None  # controlling_pod(), worked out on first use
        self._parse_status(raw)

    def restated(self, raw: Mapping[str, Any]) -> "ResourceClaim":
        """`raw` parsed, when it is this claim with another status (the scheduler's
        allocation and reservation, then the same as stored): the metadata and spec this
        claim parsed are kept when `raw`'s are equal to them (its resourceVersion and
        finalizers aside, which no parsed field but resource_version reads); anything
        else is parsed in full. A raw the store made a claim of (as_stored) is answered
        with that claim: the parse of that very object, which is never changed in place."""
        stored = _STORED.get(id(raw))
        if stored is not None and stored[0] is raw:
            return stored[1]
        meta, mine = raw.get("metadata"), self.raw.get("metadata")
        spec, my_spec = raw.get("spec"), self.raw.get("spec")
        if (type(raw) is not dict or raw.get("apiVersion") != self.raw.get("apiVersion")
                or (spec is not my_spec and spec != my_spec) or not isinstance(meta, dict) or not isinstance(mine, dict)
                or (meta is not mine and {**meta, **_VERSIONING} != {**mine, **_VERSIONING})):
            return ResourceClaim(raw)
        return self._restate(raw, meta)

    def with_own_status(self, raw: dict[str, Any]) -> "ResourceClaim":
        """What restated(raw) answers for `raw` that claims.with_status made of this
        claim (its own object, another status, maybe a finalizer added): the same claim,
        without comparing the metadata and spec with_status kept (Reserve's claim in
        flight, once a DRA pod)."""
        if type(self.raw) is not dict or type(self.raw.get("metadata")) is not dict:
            return self.restated(raw)  # (restated parses such a claim in full)
        return self._restate(raw, raw["metadata"])

    def _restate(self, raw: Mapping[str, Any], meta: Mapping[str, Any]) -> "ResourceClaim":
        claim = object.__new__(ResourceClaim)
        claim.raw = raw
        claim.meta = self.meta.with_resource_version(meta.get("resourceVersion"))
        claim.name, claim.namespace, claim.labels, claim.key, claim.uid = (
            self.name, self.namespace, self.labels, self.key, self.uid)
        claim.spec, claim.request_names, claim._controller = self.spec, self.request_names, self._controller
        claim._parse_status(raw)
        return claim

    def as_stored(self, raw: Mapping[str, Any]) -> "ResourceClaim":
        super().as_stored(raw)
        if len(_STORED) >= _STORED_KEPT:
            _STORED.clear()
        _STORED[id(raw)] = (raw, self)
        return self

    def _parse_status(self, raw: Mapping[str, Any]) -> None:
        """status, allocated and reserved_for. Loops, not comprehensions over _dicts: a
        claim is parsed about twice a DRA pod (made, written), and each
        comprehension is a frame (tests/framework/test_dra_objects.py holds it to the
        comprehensions' reading)."""
        status = raw.get("status")
        self.status = status = status if type(status) is dict else _map(raw, "status", "")
        allocation = status.get("allocation")
        # None: not allocated; else the devices the allocation holds
        self.allocated: tuple[DeviceRef, ...] | None = None if allocation is None else allocation_refs(allocation)
        # (resource, name, uid) of each consumer the claim is reserved for
        self.reserved_for: tuple[tuple[str, str, str], ...] = ()
        reserved = status.get("reservedFor")
        if reserved and isinstance(reserved, list):
            consumers = []
            for r in reserved:
                if type(r) is dict or isinstance(r, Mapping):
                    consumers.append((str(r.get("resource", "")), str(r.get("name", "")), str(r.get("uid", ""))))
            self.reserved_for = tuple(consumers)

    def controlling_pod(self) -> tuple[str, str]:
        """(name, uid) of the pod controlling the claim (its ownerReference with
        controller true, apiVersion v1, kind Pod), ("", "") when none does."""
        found = self._controller
        if found is None:
            found = self._controller = ("", "")
            for ref in self.meta.owner_references:
                if ((type(ref) is dict or isinstance(ref, Mapping)) and ref.get("controller") is True and ref.get("apiVersion") == "v1"
                        and ref.get("kind") == "Pod"):
                    found = self._controller = (str(ref.get("name", "")), str(ref.get("uid", "")))
                    break
        return found

    @property
    def pod_claim_name(self) -> str:
        """The pod claim this claim was made for from a template ("" for a claim made by hand)."""
        return self.meta.annotations.get(POD_CLAIM_NAME_ANNOTATION, "")


def allocation_refs(allocation: Any) -> tuple[DeviceRef, ...] | None:
    """The devices a claim's status.allocation holds, as ResourceClaim.allocated reads
    them (None: no allocation, or not a map)."""
    if type(allocation) is not dict and (allocation is None or not isinstance(allocation, Mapping)):
        return None
    results = ((allocation or {}).get("devices") or {}).get("results")
    refs: list[DeviceRef] = []
    if isinstance(results, list):
        for r in results:
            if type(r) is dict or isinstance(r, Mapping):
                ref = _REFS.get((r.get("driver", ""), r.get("pool", ""), r.get("device", "")))
                refs.append(_device_ref(r) if ref is None else ref)
    return tuple(refs)


class AllocationInFlight:
    """A claim's allocation in flight (DynamicResources' Reserve until PreBind wrote it),
    as the device tracker reads a claim: its uid, the devices held (`allocated`, as
    ResourceClaim.allocated) and a status holding the allocation (from_objects.
    allocated_devices reads its results' adminAccess). The same answers as the claim
    object with this allocation (claims.with_status) parsed, without making and parsing
    that object: nothing else of it was read (tests/framework/test_dra_in_flight.py)."""

    __slots__ = ("uid", "allocated", "status")

    def __init__(self, uid: str, allocation: Mapping[str, Any]) -> None:
        self.uid = uid
        copy = dict(allocation)  # (as with_status puts it in the status)
        self.status: Mapping[str, Any] = {"allocation": copy}
        self.allocated = allocation_refs(copy)


class ResourceClaimTemplate(KubeObject):
    __slots__ = ("spec", "claim_metadata", "claim_spec")
    kind = "ResourceClaimTemplate"

    def __init__(self, raw: Mapping[str, Any]) -> None:
        super().__init__(raw)
        _check_version(raw)
        self.spec = _map(raw, "spec", "")
        self.claim_metadata = _map(self.spec, "metadata", "spec")
        self.claim_spec = _map(self.spec, "spec", "spec")


DRA_KINDS: dict[str, type[KubeObject]] = {
    c.kind: c for c in (DeviceClass, ResourceSlice, ResourceClaim, ResourceClaimTemplate)}
KINDS.update(DRA_KINDS)
