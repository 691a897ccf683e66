"""What the Store actor speaks: its messages, the events it publishes and the errors it answers with.

StoreClient (actors/store/client.py) is the typed way to send them."""
from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Union

from framework.api.errors import ValidationError
from framework.api.objects import KubeObject
from framework.bind_writes import StatusWrite



Reply = asyncio.Future


class StoreError(Exception):
    """A request the store refused; `reason` is the wire reason."""

    reason = "Internal"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class NotFound(StoreError):
    reason = "NotFound"


class AlreadyExists(StoreError):
    reason = "AlreadyExists"


class Conflict(StoreError):
    reason = "Conflict"

    @classmethod
    def stale(cls, kind: str, key: str) -> "Conflict":
        """kube-apiserver's answer to a write naming a resourceVersion that is not the stored one."""
        return cls(f'Operation cannot be fulfilled on {kind} "{key}": the object has been '
                   "modified; please apply your changes to the latest version and try again")


class Invalid(StoreError):
    """`causes`: every refused field as (field path, what is wrong with it), the
    first being `field`; kube-apiserver's 422 Status lists them all. When not given,
    a message of the form "<field>: <detail>" is its one cause."""

    reason = "Invalid"

    def __init__(self, message: str, field: str = "", causes: tuple[tuple[str, str], ...] = ()) -> None:
        super().__init__(message)
        self.field = field
        if not causes and field and message.startswith(f"{field}: "):
            causes = ((field, message[len(field) + 2:]),)
        self.causes = causes


class Forbidden(StoreError):
    """A request admission refuses whatever its content (deleting a system namespace)."""

    reason = "Forbidden"


class BadRequest(StoreError):
    """A manifest kube-apiserver would not decode (400): a missing or wrong
    apiVersion, unknown fields under fieldValidation Strict."""

    reason = "BadRequest"


class Gone(StoreError):
    reason = "Expired"


class TooLarge(StoreError):
    """An object above the store's size limit (etcd's request size limit)."""

    reason = "TooLarge"


class Unavailable(StoreError):
    """The backend cannot commit now (disk full, I/O error); a retry may succeed."""

    reason = "Unavailable"


@dataclass(frozen=True, slots=True)
class WatchEvent:
    type: str  # ADDED | MODIFIED | DELETED
    kind: str
    obj: KubeObject  # the object after the change (the last state for DELETED)
    old: KubeObject | None
    resource_version: int


@dataclass(slots=True)
class EventRecord:
    """A stored core/v1 Event about one object (Scheduled, FailedScheduling, Preempted),
    as GetEvents answers it."""

    type: str  # Normal | Warning
    reason: str
    message: str
    time: float  # when it was last seen (lastTimestamp)
    uid: str = ""  # the object's uid when it was recorded ("": no such object then)
    count: int = 1  # how often it was seen (repeats fold into one stored Event)
    first_time: float | None = None  # when it was first seen (firstTimestamp)
    source: str = ""  # source.component
    name: str = ""  # the stored Event's metadata.name


@dataclass(frozen=True, slots=True, kw_only=True)
class Create:
    """Create one object. `field_validation` (Strict, Warn, Ignore) marks a client's
    manifest, decoded as kube-apiserver decodes one (framework.api.decode: apiVersion,
    unknown fields) and admitted into an existing namespace; None (in-process
    writers: the bench, the conformance driver) skips that stage. With with_warnings
    the reply is (stored object, warnings): what the client should be told (unknown
    fields under Warn, no controller for a workload); without, the stored object.
    `template`: the key (namespace/name) of the ResourceClaimTemplate whose spec.spec,
    the very object this store admitted, is this ResourceClaim's spec (the resourceclaim
    controller's create): the store then does not walk that spec again
    (write_chain.WriteChain.create); anything else is admitted in full."""

    obj: Mapping[str, Any]
    field_validation: str | None = None
    with_warnings: bool = False
    template: str = ""
    reply: Reply | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Apply:
    """Create or replace many objects at once, all or nothing, in order (each sees
    the ones before it). The reply is the stored objects, or with with_actions
    (stored objects, ["created" | "configured" | "unchanged", ...], warnings)."""

    objects: list[Mapping[str, Any]]
    with_actions: bool = False
    field_validation: str | None = None  # as Create's
    reply: Reply | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Update:
    """Replace an object; a stale metadata.resourceVersion gives Conflict."""

    obj: Mapping[str, Any]
    field_validation: str | None = None  # as Create's
    with_warnings: bool = False  # as Create's
    # The status subresource (UpdateStatus): only obj's status is written, the stored
    # spec and metadata kept (actors/store/status_writes.py)
    status_only: bool = False
    reply: Reply | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Delete:
    """Remove an object; with a precondition (kube's DeleteOptions.preconditions) only
    when the stored object still has that uid / resourceVersion, else Conflict."""

    kind: str
    namespace: str
    name: str
    uid: str = ""  # "": no precondition
    resource_version: str = ""
    reply: Reply | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Recreate:
    """Delete an object (with Delete's preconditions) and create `obj` in its place, in
    one write: all or nothing, so no reader ever finds the name absent. kube does this
    as two requests; ksched's own controllers use it where an object must be replaced
    by a new one (an evicted Kueue pod created again gated) and must not be lost to a
    kill -9 between the two. The reply is the created object."""

    kind: str
    namespace: str
    name: str
    obj: Mapping[str, Any]
    uid: str = ""  # "": no precondition
    resource_version: str = ""
    reply: Reply | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Get:
    kind: str
    namespace: str
    name: str
    reply: Reply | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ListObjects:
    kind: str
    namespace: str = ""
    label_selector: str | Mapping[str, Any] | None = None
    field_selector: str | None = None  # spec.nodeName=..., status.phase=...
    reply: Reply | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Bind:
    """Write spec.nodeName and PodScheduled=True (the pods/binding subresource).
    `scheduled_event`: the scheduler's own binding, whose Scheduled event (Normal,
    `scheduled_message`, about the pod's uid) the store records in the same write,
    right after the binding, as kube-scheduler records it once its bind succeeded;
    the scheduler then records none (StoreClient.record_scheduled)."""

    namespace: str
    name: str
    node_name: str
    uid: str = ""
    # The newest resourceVersion the deciding view had seen (actors/store/premise.py; 0: none).
    derived_from: int = 0
    scheduled_event: bool = False
    reply: Reply | None = None


def scheduled_message(namespace: str, name: str, node_name: str) -> str:
    """The Scheduled event's message (kube-scheduler's, once a pod's bind succeeded)."""
    return f"Successfully assigned {namespace}/{name} to {node_name}"


@dataclass(frozen=True, slots=True, kw_only=True)
class BindWithUpdates:
    """Replace each of `updates` (as Update: a stale resourceVersion is Conflict, a
    missing object NotFound), then bind the pod (as Bind), in one write: all applied or
    none, committed together and answered once durable, so no crash leaves one without
    the other. The scheduler writes a pod's ResourceClaims' allocation this way with its
    binding (framework/bind_writes.py); a StatusWrite among `updates` is written as the
    status subresource takes it (actors/store/status_writes.py). The reply is (the
    updated objects as stored, the bound pod)."""

    updates: tuple[Mapping[str, Any] | StatusWrite, ...]
    namespace: str
    name: str
    node_name: str
    uid: str = ""
    derived_from: int = 0  # as Bind's (actors/store/premise.py)
    scheduled_event: bool = False  # as Bind's
    reply: Reply | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class UpdatePodStatus:
    namespace: str
    name: str
    uid: str = ""
    condition: Mapping[str, Any] | None = None  # replaces the condition of the same type
    nominated_node_name: str | None = None  # "" clears it
    phase: str | None = None
    # status.resourceClaimStatuses entries by pod claim name -> claim name, merged by name
    # (the resourceclaim controller's status write; kube-apiserver's pods/status)
    claim_statuses: Mapping[str, str] | None = None
    reply: Reply | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ClaimToMake:
    """One ResourceClaim a MakePodClaims creates: `obj` (as Create's, `template` as
    Create.template) for the pod's claim `pod_claim`."""

    pod_claim: str
    obj: Mapping[str, Any]
    template: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class MakePodClaims:
    """The resourceclaim controller's work for one pod in one write: create each of
    `creates` (as Create), then merge into the pod's status.resourceClaimStatuses each
    created claim's name under its pod claim and the `found` entries (pod claim -> claim
    name: claims made earlier), as UpdatePodStatus(claim_statuses=...) does. All applied
    or none, committed together: the claims' ADDED events, then the pod's MODIFIED, as
    upstream's creates and its status apply give them. The reply is (the created claims,
    the pod), the stored objects as parsed (KubeObjects, shared, never changed in place:
    the controller is in process and need not parse them again)."""

    namespace: str
    name: str
    uid: str
    creates: tuple[ClaimToMake, ...]
    found: Mapping[str, str]
    reply: Reply | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class EvictPods:
    """Preemption's evictions (upstream's PreemptPod, for victims it evicts at once),
    in one write: for each victim in order, `condition` is added to its status, then
    it is deleted, then the (event_reason, event_message) Normal event is recorded
    about it; each step its own resourceVersion and watch event. A victim gone at the
    condition (absent, or another uid) or at the delete is skipped quietly, without
    an event. A refused write undoes the whole message. The reply: per victim,
    whether it was evicted (False: it was gone)."""

    victims: tuple[tuple[str, str, str], ...]  # (namespace, name, uid)
    condition: Mapping[str, Any]
    event_reason: str
    event_message: str
    reply: Reply | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RecordEvent:
    """Store a core/v1 Event about (kind, key), or count a repeat of it (fire and
    forget). `uid`: the object's uid as the sender saw it ("": the stored object's)."""

    kind: str
    key: str
    type: str  # Normal | Warning
    reason: str
    message: str
    uid: str = ""
    reply: Reply | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class FlushEvents:
    """Commit the RecordEvents that wait for a write to ride with (actors/store/event_hold.py:
    the store sends it to itself when the hold is due or a driver wants idleness)."""

    reply: Reply | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class SweepEvents:
    """Delete the expired Events and the oldest beyond the bounds (the store sends it
    to itself: the expiry timer, a commit past a bound)."""

    reply: Reply | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class GetEvents:
    kind: str
    key: str
    reply: Reply | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Watch:
    kinds: frozenset[str] | None
    from_rv: int
    sink: Callable[["WatchEvent"], None]
    # Told of a turn when it is handed to the disk, not once durable (actors/store/premise.py):
    # only for an in-process watcher that acknowledges nothing to anyone (the scheduler).
    early: bool = False
    reply: Reply | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Unwatch:
    watch_id: int
    reply: Reply | None = None


StoreMsg = Union[Create, Apply, Update, Delete, Recreate, Get, ListObjects, Bind, BindWithUpdates, UpdatePodStatus,
                 MakePodClaims, EvictPods, RecordEvent, GetEvents, SweepEvents, FlushEvents, Watch, Unwatch]


def said_too(stored: dict[str, Any], said: list[str], told: bool) -> Any:
    """A Create's or an Update's reply: the stored object, with the warnings when asked."""
    return (stored, tuple(said)) if told else stored


def applied(msg: Apply, done: list[tuple[KubeObject, str]], said: list[str]) -> Any:
    """An Apply's reply (messages.Apply)."""
    items = [obj.raw for obj, _ in done]
    return (items, [action for _, action in done], tuple(said)) if msg.with_actions else items


def refuse(errors: list[ValidationError]) -> None:
    """Raise Invalid for the first error (the field it names is the one to fix first)."""
    if errors:
        raise Invalid(str(errors[0]), errors[0].field, tuple((e.field, e.detail) for e in errors))
