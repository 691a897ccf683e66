"""Resource lists and the scheduler's Resource arithmetic (framework.Resource).

Requests are summed as exact Fractions per resource name and converted once:
CPU to milli-CPU with MilliValue (rounding up), every other resource with Value().
"""
from __future__ import annotations

from fractions import Fraction
from collections.abc import Mapping
from typing import Iterable

from framework.api.errors import ValidationError
from framework.api.quantity import milli_value, parse_quantity, value

CPU = "cpu"
MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"
PODS = "pods"

# Upstream's defaults for pods that request nothing (schedutil.DefaultMilliCPURequest,
# DefaultMemoryRequest): used for spreading scores, never for fitting.
DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024

ResourceList = dict[str, Fraction]


def parse_resource_list(raw: object, field: str) -> ResourceList:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise ValidationError(field, "must be a map of resource name to quantity")
    out: ResourceList = {}
    for name, q in raw.items():
        if not isinstance(name, str) or not name:
            raise ValidationError(field, f"resource name {name!r} is not valid")
        amount = parse_quantity(q, f"{field}.{name}")
        if amount < 0:
            raise ValidationError(f"{field}.{name}", "must be greater than or equal to 0")
        out[name] = amount
    return out


def quantity_in_units(name: str, amount: Fraction) -> int:
    """The integer the scheduler compares: milli-CPU for cpu, Value() otherwise."""
    return milli_value(amount) if name == CPU else value(amount)


def is_scalar_resource(name: str) -> bool:
    """Extended, hugepages-*, attachable-volumes-* and prefixed native (…kubernetes.io/…)
    resources (schedutil.IsScalarResourceName)."""
    if name in (CPU, MEMORY, EPHEMERAL_STORAGE, PODS):
        return False
    return (name.startswith("hugepages-") or name.startswith("attachable-volumes-")
            or _is_prefixed_native(name) or _is_extended(name))


def _is_prefixed_native(name: str) -> bool:
    # Upstream tests containment, not the domain, so "foo.kubernetes.io/x" is native too.
    return "kubernetes.io/" in name


def _is_extended(name: str) -> bool:
    # Fully qualified names outside kubernetes.io/ (and not requests.*) are extended resources.
    if "/" not in name or name.startswith("requests.") or _is_prefixed_native(name):
        return False
    domain = name.split("/", 1)[0]
    return not (domain == "kubernetes.io" or domain.endswith(".kubernetes.io"))


def is_extended_resource_name(name: str) -> bool:
    """v1helper.IsExtendedResourceName: a fully qualified name outside kubernetes.io/."""
    return _is_extended(name)


_new_resource = object.__new__


class Resource:
    """framework.Resource: integers in the scheduler's units."""

    __slots__ = ("milli_cpu", "memory", "ephemeral_storage", "allowed_pod_number", "scalar")

    def __init__(
        self,
        milli_cpu: int = 0,
        memory: int = 0,
        ephemeral_storage: int = 0,
        allowed_pod_number: int = 0,
        scalar: dict[str, int] | None = None,
    ) -> None:
        self.milli_cpu = milli_cpu
        self.memory = memory
        self.ephemeral_storage = ephemeral_storage
        self.allowed_pod_number = allowed_pod_number
        self.scalar = scalar if scalar is not None else {}

    @classmethod
    def from_list(cls, rl: Mapping[str, Fraction]) -> "Resource":
        r = cls()
        for name, amount in rl.items():
            r.set(name, quantity_in_units(name, amount))
        return r

    def set(self, name: str, amount: int) -> None:
        if name == CPU:
            self.milli_cpu = amount
        elif name == MEMORY:
            self.memory = amount
        elif name == EPHEMERAL_STORAGE:
            self.ephemeral_storage = amount
        elif name == PODS:
            self.allowed_pod_number = amount
        elif is_scalar_resource(name):
            self.scalar[name] = amount

    def get(self, name: str) -> int:
        if name == CPU:
            return self.milli_cpu
        if name == MEMORY:
            return self.memory
        if name == EPHEMERAL_STORAGE:
            return self.ephemeral_storage
        if name == PODS:
            return self.allowed_pod_number
        return self.scalar.get(name, 0)

    def add(self, other: "Resource") -> None:
        self.milli_cpu += other.milli_cpu
        self.memory += other.memory
        self.ephemeral_storage += other.ephemeral_storage
        self.allowed_pod_number += other.allowed_pod_number
        for k, v in other.scalar.items():
            self.scalar[k] = self.scalar.get(k, 0) + v

    def sub(self, other: "Resource") -> None:
        self.milli_cpu -= other.milli_cpu
        self.memory -= other.memory
        self.ephemeral_storage -= other.ephemeral_storage
        self.allowed_pod_number -= other.allowed_pod_number
        for k, v in other.scalar.items():
            self.scalar[k] = self.scalar.get(k, 0) - v

    def plus(self, other: "Resource", sign: int = 1) -> "Resource":
        """A new Resource: this one with `other` added (sign 1) or taken away (sign -1),
        as add and sub would leave it; this one is unchanged."""
        c = _new_resource(Resource)
        c.milli_cpu = self.milli_cpu + sign * other.milli_cpu
        c.memory = self.memory + sign * other.memory
        c.ephemeral_storage = self.ephemeral_storage + sign * other.ephemeral_storage
        c.allowed_pod_number = self.allowed_pod_number + sign * other.allowed_pod_number
        scalar = self.scalar
        c.scalar = scalar = dict(scalar) if scalar else {}
        for k, v in other.scalar.items():
            scalar[k] = scalar.get(k, 0) + sign * v
        return c

    def plus_cpu_memory(self, milli_cpu: int, memory: int) -> "Resource":
        """A new Resource: this one with these amounts added to its CPU and memory."""
        c = _new_resource(Resource)
        c.milli_cpu = self.milli_cpu + milli_cpu
        c.memory = self.memory + memory
        c.ephemeral_storage = self.ephemeral_storage
        c.allowed_pod_number = self.allowed_pod_number
        scalar = self.scalar
        c.scalar = dict(scalar) if scalar else {}
        return c

    def clone(self) -> "Resource":
        c = _new_resource(Resource)
        c.milli_cpu = self.milli_cpu
        c.memory = self.memory
        c.ephemeral_storage = self.ephemeral_storage
        c.allowed_pod_number = self.allowed_pod_number
        scalar = self.scalar
        c.scalar = dict(scalar) if scalar else {}
        return c

    def names(self) -> Iterable[str]:
        yield CPU
        yield MEMORY
        yield EPHEMERAL_STORAGE
        yield from self.scalar

    def as_dict(self) -> dict[str, int]:
        d = {CPU: self.milli_cpu, MEMORY: self.memory, EPHEMERAL_STORAGE: self.ephemeral_storage, PODS: self.allowed_pod_number}
        d.update(self.scalar)
        return d

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Resource) and self.as_dict() == other.as_dict()

    def __repr__(self) -> str:
        return f"Resource({self.as_dict()})"


def add_lists(into: ResourceList, other: Mapping[str, Fraction]) -> None:
    for k, v in other.items():
        into[k] = into.get(k, Fraction(0)) + v


def max_lists(into: ResourceList, other: Mapping[str, Fraction]) -> None:
    for k, v in other.items():
        if k not in into or v > into[k]:
            into[k] = v


SUPPORTED_POD_LEVEL_RESOURCES = (CPU, MEMORY)


def is_supported_pod_level_resource(name: str) -> bool:
    """cpu, memory and hugepages-* may be set at pod level (IsSupportedPodLevelResource)."""
    return name in SUPPORTED_POD_LEVEL_RESOURCES or name.startswith("hugepages-")


def pod_requests(
    containers: list[ResourceList],
    init_containers: list[tuple[ResourceList, bool]],
    overhead: ResourceList,
    pod_level: ResourceList | None = None,
    non_missing: Mapping[str, Fraction] | None = None,
) -> ResourceList:
    """resourcehelper.PodRequests: sum of containers, max with each init container
    (restartable sidecars add to everything after them), plus overhead. `non_missing`
    fills in requests a container does not state (NonMissingContainerRequests)."""

    def effective(req: ResourceList) -> ResourceList:
        if not non_missing:
            return req
        out = dict(req)
        for k, v in non_missing.items():
            if k not in out:
                out[k] = v
        return out

    if len(containers) == 1 and not init_containers and not pod_level and not overhead:
        # The usual pod: its one container's requests are the sum (no arithmetic).
        return dict(effective(containers[0]))
    reqs: ResourceList = {}
    for c in containers:
        add_lists(reqs, effective(c))
    restartable: ResourceList = {}
    init_max: ResourceList = {}
    for req, is_sidecar in init_containers:
        req = effective(req)
        if is_sidecar:
            add_lists(reqs, req)
            add_lists(restartable, req)
            current = dict(restartable)
        else:
            current = dict(req)
            add_lists(current, restartable)
        max_lists(init_max, current)
    max_lists(reqs, init_max)
    if pod_level:
        for name, amount in pod_level.items():
            if is_supported_pod_level_resource(name):
                reqs[name] = amount
    add_lists(reqs, overhead)
    return reqs
