"""ResourceClaimController: what kube-controller-manager's resourceclaim controller does,
for the daemon (decisions in framework.dra.pod_claims).

- A pod (not done, not being deleted) whose spec.resourceClaims name a
  ResourceClaimTemplate gets, per such claim, a ResourceClaim made from the template
  (generated name, the pod as controlling owner, annotation
  resource.kubernetes.io/pod-claim-name), recorded in the pod's
  status.resourceClaimStatuses, the creates and the status in one store write
  (MakePodClaims: both or neither). A claim made earlier for the same pod claim (owned
  by the pod, same annotation: a store written before that, or a client's) is found
  again instead of made twice.
  A missing template is a Warning event FailedResourceClaimCreation on the pod; the pod
  is retried when the template appears.
- A claim's status.reservedFor loses the pods that are gone, replaced (another uid) or
  done; when none is left, an allocation the scheduler protected with the
  resource.kubernetes.io/delete-protection finalizer is cleared and the finalizer
  removed, as upstream deallocates.
- A pod bound without the scheduler (spec.nodeName set by its writer) is added to the
  status.reservedFor of its allocated claims, as upstream's reserveForPod does.
- A claim made for a pod is deleted when that pod is done, replaced or gone (upstream's
  garbage collector follows the ownerReference; ksched has none, so this does it).

An actor: its store watch (Pods, ResourceClaims, ResourceClaimTemplates, the existing ones replayed
first) posts its events as Observed messages, the events of a burst added to the one last queued; each
turn takes every queued message, then syncs the pods and claims they touched. A pod whose uid the watch
has not seen is looked up in the store before its reservations or claims are dropped."""
from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import Any, Coroutine, Union, assert_never

from actors.base import Actor, MailboxClosed, resolve
from actors.store import AlreadyExists, Conflict, NotFound, StoreClient, StoreError, WatchEvent
from actors.store.messages import ClaimToMake
from framework.api.dra_kinds import ResourceClaim, ResourceClaimTemplate
from framework.api.objects import Pod
from framework.api.schema.dra import RESERVED_FOR_MAX
from framework.dra.pod_claims import (
    claim_from_template, claim_names, claim_statuses, find_generated, is_for_pod, is_pod_done, named_claims,
    owning_pod, reservation_stays, template_claims,
)

log = logging.getLogger(__name__)
WATCHED = frozenset({"Pod", "ResourceClaim", "ResourceClaimTemplate"})
DELETE_PROTECTION = "resource.kubernetes.io/delete-protection"  # the scheduler's finalizer on allocated claims
_NO_KEYS: frozenset[str] = frozenset()
_DONE_PHASES = ("Succeeded", "Failed")  # a pod being deleted or in one of these is ending (is_pod_done), inline
SYNC_WORKERS = 64  # keys synced at once (upstream runs the controller with several workers too)


@dataclass(frozen=True, slots=True, kw_only=True)
class Observed:
    """Store watch events on Pods, ResourceClaims and ResourceClaimTemplates, in the
    order the store told them. The list grows only while the message is the last one in
    the controller's inbox (the watch's sink, `attach`: nothing was queued after it, so
    the order is that of one message per event); once taken, it is read only."""

    evs: list[WatchEvent]


@dataclass(frozen=True, slots=True, kw_only=True)
class Flush:
    """Answered once everything queued before it is synced (tests, shutdown)."""

    reply: asyncio.Future[None]


ControllerMsg = Union[Observed, Flush]


@dataclass
class _State:
    pods: dict[str, Pod] = field(default_factory=dict)
    claims: dict[str, ResourceClaim] = field(default_factory=dict)
    templates: dict[str, ResourceClaimTemplate] = field(default_factory=dict)
    by_uid: dict[str, set[str]] = field(default_factory=dict)  # pod uid -> claims it owns or holds
    waiting_for: dict[str, set[str]] = field(default_factory=dict)  # template key -> pods that need it
    deleted: set[str] = field(default_factory=set)  # uids of pods the watch saw deleted
    users: dict[str, set[str]] = field(default_factory=dict)  # claim key -> pods naming it in resourceClaimName

    def index(self, claim: ResourceClaim, add: bool) -> None:
        for uid in _pod_uids(claim):
            keys = self.by_uid.setdefault(uid, set())
            if add:
                keys.add(claim.key)
            else:
                keys.discard(claim.key)
                if not keys:
                    del self.by_uid[uid]


def _pod_uids(claim: ResourceClaim) -> set[str]:
    """The uids of the pods the claim names: its owner and the pods it is reserved for."""
    uids = {owning_pod(claim)[1]}
    for resource, _, uid in claim.reserved_for:  # (a loop: no comprehension's frame, three claims a pod)
        if resource == "pods":
            uids.add(uid)
    uids.discard("")
    return uids


def concerns_claims(ev: WatchEvent) -> bool:
    """Whether the controller has anything to do with a watch event: every claim and
    template event; of a pod's, those of a pod that names claims (spec.resourceClaims,
    which an update cannot change), and every pod's end (done, being deleted, deleted),
    which is when a claim naming it (its owner, or a reservation) is released or
    collected. A pending or bound pod without claims is none of its business: in a
    burst of plain pods that is every pod event (two a pod), each a message and a turn."""
    obj = ev.obj
    if not isinstance(obj, Pod) or ev.type == "DELETED":
        return True
    old = ev.old
    if obj.spec.get("resourceClaims") or (isinstance(old, Pod) and old.spec.get("resourceClaims")):
        return True
    return obj.meta.deletion_timestamp is not None or obj.phase in _DONE_PHASES  # (is_deleting or is_pod_done)


def _take(dirty: set[str]) -> list[str]:
    """Up to SYNC_WORKERS keys out of `dirty`. The last ones are taken with clear(), which
    gives the set its smallest table again: a set keeps the table a burst grew it to, and
    each pop() then scans that table from where the last one stopped for the one or two
    keys a later pod adds (~70 us a pop after a burst of 5,000 pods, ~0.04 us in a
    small table). The keys of one batch are synced at once, in an order of the set's
    (its strings' hashes, never a fixed one), as before."""
    if len(dirty) <= SYNC_WORKERS:
        keys = list(dirty)
        dirty.clear()
        return keys
    return [dirty.pop() for _ in range(SYNC_WORKERS)]


async def _together(syncs: list[Coroutine[Any, Any, None]]) -> None:
    """Run the syncs at once; the first failure stands for them (MailboxClosed: the store stops)."""
    if len(syncs) == 1:
        await syncs[0]
        return
    try:
        async with asyncio.TaskGroup() as tg:
            for sync in syncs:
                tg.create_task(sync)
    except BaseExceptionGroup as group:
        raise group.exceptions[0] from None


class ResourceClaimController(Actor[ControllerMsg]):
    name = "resourceclaims"
    batched = True

    def __init__(self, store: StoreClient) -> None:
        super().__init__()
        self.store = store
        self.state = _State()
        self.dirty_pods: set[str] = set()
        self.dirty_claims: set[str] = set()
        self.created = 0  # claims made from templates (for tests and stats)
        self.synced = 0  # pod and claim syncs run (the settled ones are not: tests, profile)
        self.unchanged = 0  # watch events carrying the very object the controller holds (tests, profile)

    @classmethod
    async def attach(cls, store: StoreClient) -> "ResourceClaimController":
        """A controller watching the store (the existing objects arrive in its first turn)."""
        controller = cls(store)
        inbox, ref = controller.inbox, controller.ref()

        def sink(ev: WatchEvent) -> None:
            if not concerns_claims(ev):
                return
            last = inbox.tail()
            if type(last) is Observed and not inbox.closed:
                last.evs.append(ev)  # (a burst's events in one message: one put, one match)
            else:
                ref.try_tell(Observed(evs=[ev]))

        await store.watch(sink, kinds=WATCHED)
        return controller

    def close(self) -> None:
        self.inbox.close(drain=True)

    def idle(self) -> bool:
        return super().idle() and not self.dirty_pods and not self.dirty_claims

    async def flush(self) -> None:
        """Sync now what is queued (a controller that is not running: tests)."""
        await self.handle_turn(self.inbox.get_nowait_all())

    async def handle_turn(self, msgs: list[ControllerMsg]) -> None:
        replies = []
        for msg in msgs:
            match msg:
                case Observed(evs=evs):
                    for ev in evs:
                        self._observe(ev)
                case Flush(reply=reply):
                    replies.append(reply)
                case _:
                    assert_never(msg)
        try:
            await self._sync_dirty()
        except MailboxClosed:
            pass  # the store is stopping; a restart syncs from what is stored
        finally:
            for reply in replies:
                resolve(reply)

    # --- what the watch says --------------------------------------------------------------------

    def _observe(self, ev: WatchEvent) -> None:
        s, obj = self.state, ev.obj
        if isinstance(obj, Pod):
            held = s.by_uid.get(obj.uid, _NO_KEYS)
            if ev.type == "DELETED":
                s.pods.pop(obj.key, None)
                for name in named_claims(obj):
                    users = s.users.get(f"{obj.namespace}/{name}", set())
                    users.discard(obj.key)
                    if not users:
                        s.users.pop(f"{obj.namespace}/{name}", None)
                if held:  # (only the uids claims name: the set stays small)
                    s.deleted.add(obj.uid)
            elif obj.spec.get("resourceClaims"):  # pods without claims are none of its business
                if s.pods.get(obj.key) is obj:  # the object its own write stored (_make): nothing new
                    self.unchanged += 1
                    return
                s.pods[obj.key] = obj
                self.dirty_pods.add(obj.key)
                for name in named_claims(obj):
                    s.users.setdefault(f"{obj.namespace}/{name}", set()).add(obj.key)
            self.dirty_claims |= held
        elif isinstance(obj, ResourceClaim):
            if ev.type != "DELETED" and s.claims.get(obj.key) is obj:  # made by its own write (_make)
                self.unchanged += 1
                return
            old = s.claims.pop(obj.key, None)
            # (a claim naming the same pods as before stays indexed as it is: its allocation,
            # its owner's reservation)
            reindex = old is None or ev.type == "DELETED" or _pod_uids(old) != _pod_uids(obj)
            if old is not None and reindex:
                s.index(old, add=False)
            owner = owning_pod(obj)[0]
            if owner:  # its pod may have a claim to record, make again or reserve
                self.dirty_pods.add(f"{obj.namespace}/{owner}")
            self.dirty_pods |= s.users.get(obj.key, _NO_KEYS)
            if ev.type != "DELETED":
                s.claims[obj.key] = obj
                if reindex:
                    s.index(obj, add=True)
                self.dirty_claims.add(obj.key)
            else:  # (the owner, marked above, makes it again while it still needs it)
                s.deleted -= {uid for uid in {owning_pod(obj)[1]} if not s.by_uid.get(uid)}
        elif isinstance(obj, ResourceClaimTemplate):
            if ev.type == "DELETED":
                s.templates.pop(obj.key, None)
            else:
                s.templates[obj.key] = obj
                self.dirty_pods |= s.waiting_for.pop(obj.key, set())

    async def _sync_dirty(self) -> None:
        """Pods first, then claims, up to SYNC_WORKERS keys at once (a key is never synced
        twice at once, as upstream's workqueue guarantees its workers): a burst of new
        pods sends its claims' creates, then its status writes, to the store together, so
        they share its turns and commits instead of taking two each. A key whose sync
        would neither write nor read the store (the watch's copies say so: `_pod_settled`,
        `_claim_settled`) is dropped here, without a task: most events of a pod's life
        (its claim made, its status written, its binding, the claim's allocation) leave
        nothing to do."""
        while self.dirty_pods or self.dirty_claims:
            if self.dirty_pods:
                keys, sync = [k for k in _take(self.dirty_pods) if not self._pod_settled(k)], self._sync_pod
            else:
                keys, sync = [k for k in _take(self.dirty_claims) if not self._claim_settled(k)], self._sync_claim
            if keys:
                self.synced += len(keys)
                await _together([self._retrying(sync, key) for key in keys])

    async def _retrying(self, sync: Any, key: str) -> None:
        """One sync; a Conflict (someone wrote in between) is retried once from the stored object."""
        for attempt in (1, 2):
            try:
                await sync(key, fresh=attempt == 2)
                return
            except Conflict:
                continue
            except StoreError as e:
                log.warning("resourceclaims: %s: %s", key, e)
                return

    # --- pods -----------------------------------------------------------------------------------

    async def _current_pod(self, key: str, fresh: bool) -> Pod | None:
        if not fresh:
            return self.state.pods.get(key)
        ns, name = key.split("/", 1)
        try:
            return Pod(await self.store.get("Pod", ns, name))
        except NotFound:
            return None

    def _pod_settled(self, key: str) -> bool:
        """Whether `_sync_pod(key)` from the watch's copy would do nothing: the pod is
        gone or ending, each of its template claims is recorded and the claim it names is
        the pod's, and, bound, it is already on each allocated claim's reservedFor."""
        s = self.state
        pod = s.pods.get(key)
        if pod is None or pod.meta.deletion_timestamp is not None or pod.phase in _DONE_PHASES:  # (is_deleting or
            return True  # is_pod_done, inline: each event of a DRA pod asks)
        recorded = claim_statuses(pod)
        for pod_claim, _ in template_claims(pod):
            name = recorded.get(pod_claim)
            have = s.claims.get(f"{pod.namespace}/{name}") if name else None
            if have is None or not is_for_pod(have, pod):
                return False
        if pod.node_name:  # (a loop, not any() over a generator: a bound DRA pod is asked once)
            for name, _ in claim_names(pod, recorded):
                if self._unreserved(pod, name):
                    return False
        return True

    def _unreserved(self, pod: Pod, name: str) -> bool:
        """Whether the watch's copy of claim `name` is allocated but not reserved for the bound `pod`."""
        have = self.state.claims.get(f"{pod.namespace}/{name}")
        return have is not None and have.allocated is not None and not any(uid == pod.uid for _, _, uid in have.reserved_for)

    async def _sync_pod(self, key: str, fresh: bool = False) -> None:
        pod = await self._current_pod(key, fresh)
        if pod is None or pod.is_deleting or is_pod_done(pod):
            return
        found: dict[str, str] = {}
        creates: list[ClaimToMake] = []
        recorded = claim_statuses(pod)
        for pod_claim, template_name in template_claims(pod):
            name = recorded.get(pod_claim)
            have = self.state.claims.get(f"{pod.namespace}/{name}") if name else None
            if have is not None and is_for_pod(have, pod):
                continue
            made = self._claim_for(pod, pod_claim, template_name)
            if isinstance(made, ClaimToMake):
                creates.append(made)
            elif made is not None and made.name != name:
                found[pod_claim] = made.name
        made_names = dict(found)
        if creates:  # the claims made and recorded in one write (upstream: its creates, then the status apply)
            made_names.update(await self._make(pod, creates, found))
        elif found:  # the status alone, merged by name (upstream applies pods/status)
            await self.store.update_pod_status(pod.namespace, pod.name, uid=pod.uid, claim_statuses=found)
        if pod.node_name:  # bound without the scheduler reserving its claims: reserve them here
            for name, generated in claim_names(pod, {**recorded, **made_names}):
                await self._reserve(pod, name, generated)

    async def _make(self, pod: Pod, creates: list[ClaimToMake], found: dict[str, str]) -> dict[str, str]:
        """Create the claims and record them in the pod's status, one store write: pod
        claim -> the created claim's name. A generated name already taken (the write then
        made nothing) marks the pod to be synced again, which draws another."""
        try:
            made, stored = await self.store.make_pod_claims(pod.namespace, pod.name, pod.uid, creates, found)
        except AlreadyExists:
            self.dirty_pods.add(pod.key)
            return {}
        if isinstance(stored, Pod) and self.state.pods.get(pod.key) is pod:
            self.state.pods[pod.key] = stored  # as the watch will say (a newer event replaces it)
        names = {}
        for want, claim in zip(creates, made):
            assert isinstance(claim, ResourceClaim)
            self.state.claims[claim.key] = claim  # seen before the watch says so: never made twice
            self.state.index(claim, add=True)
            self.created += 1
            names[want.pod_claim] = claim.name
        return names

    async def _reserve(self, pod: Pod, name: str, generated: bool) -> None:
        """Add the bound pod to an allocated claim's status.reservedFor (upstream's
        reserveForPod), read fresh from the store so a reservation the scheduler just
        wrote is not added twice."""
        if not self._unreserved(pod, name):
            return
        try:
            claim = ResourceClaim(await self.store.get("ResourceClaim", pod.namespace, name))
        except NotFound:
            return
        if (claim.allocated is None or any(uid == pod.uid for _, _, uid in claim.reserved_for)
                or len(claim.reserved_for) >= RESERVED_FOR_MAX or (generated and not is_for_pod(claim, pod))):
            return
        status = dict(claim.status)
        status["reservedFor"] = [*(status.get("reservedFor") or []),
                                 {"resource": "pods", "name": pod.name, "uid": pod.uid}]
        await self.store.update({**claim.raw, "status": status})

    def _claim_for(self, pod: Pod, pod_claim: str, template_name: str) -> ResourceClaim | ClaimToMake | None:
        """The claim made earlier for `pod_claim`, else the one to make from its template;
        None when the template is missing (a Warning event; the pod waits for it)."""
        owned = [self.state.claims[k] for k in self.state.by_uid.get(pod.uid, ()) if k in self.state.claims]
        found = find_generated(owned, pod, pod_claim)
        if found is not None:
            return found
        template_key = f"{pod.namespace}/{template_name}"
        template = self.state.templates.get(template_key)
        if template is None:
            if pod.key not in self.state.waiting_for.get(template_key, set()):
                self.state.waiting_for.setdefault(template_key, set()).add(pod.key)
                self.store.record_event("Pod", pod.key, "Warning", "FailedResourceClaimCreation",
                                        f'PodResourceClaim {pod_claim}: resource claim template "{template_name}": '
                                        f'resourceclaimtemplate.resource.k8s.io "{template_name}" not found',
                                        uid=pod.uid)
            return None
        return ClaimToMake(pod_claim=pod_claim, obj=claim_from_template(pod, pod_claim, template), template=template_key)

    # --- claims ---------------------------------------------------------------------------------

    def _known_pod(self, namespace: str, name: str, uid: str) -> tuple[bool, Pod | None]:
        """(whether the watch knows, the pod as it is now): known gone when the watch saw
        that uid deleted, known as the watch's copy when it has one."""
        if uid in self.state.deleted:
            return True, None
        pod = self.state.pods.get(f"{namespace}/{name}")
        return pod is not None, pod

    async def _pod_named(self, namespace: str, name: str, uid: str) -> Pod | None:
        """The pod as it is now: the watch's copy, or the store's when the watch has none
        (it may not have reached this controller yet)."""
        known, pod = self._known_pod(namespace, name, uid)
        if known:
            return pod
        try:
            return Pod(await self.store.get("Pod", namespace, name))
        except NotFound:
            return None

    def _claim_settled(self, key: str) -> bool:
        """Whether `_sync_claim(key)` from the watch's copy would do nothing: every pod the
        claim is reserved for is known to the watch and stays; with no reservation, the
        claim is not being deallocated and its owner (if any) is known, the same pod, not done."""
        claim = self.state.claims.get(key)
        if claim is None:
            return True
        reserved = [r for r in claim.status.get("reservedFor") or [] if isinstance(r, dict)]
        for ref in reserved:
            if ref.get("apiGroup") or ref.get("resource") != "pods":
                continue
            uid = str(ref.get("uid", ""))
            known, pod = self._known_pod(claim.namespace, str(ref.get("name", "")), uid)
            if not known or not reservation_stays(uid, pod):
                return False
        if reserved:
            return True
        deleting = claim.meta.deletion_timestamp is not None
        if deleting and DELETE_PROTECTION in (claim.raw.get("metadata") or {}).get("finalizers", []):
            return False
        owner, owner_uid = owning_pod(claim)
        if not owner or deleting:
            return True
        known, pod = self._known_pod(claim.namespace, owner, owner_uid)
        return known and pod is not None and pod.uid == owner_uid and not is_pod_done(pod)

    async def _sync_claim(self, key: str, fresh: bool = False) -> None:
        claim = self.state.claims.get(key)
        if fresh:
            ns, name = key.split("/", 1)
            try:
                claim = ResourceClaim(await self.store.get("ResourceClaim", ns, name))
            except NotFound:
                return
        if claim is None:
            return
        reserved = [r for r in claim.status.get("reservedFor") or [] if isinstance(r, dict)]
        valid = []
        for ref in reserved:
            if ref.get("apiGroup") or ref.get("resource") != "pods":
                valid.append(ref)
                continue
            pod = await self._pod_named(claim.namespace, str(ref.get("name", "")), str(ref.get("uid", "")))
            if reservation_stays(str(ref.get("uid", "")), pod):
                valid.append(ref)
        raw = claim.raw
        protected = DELETE_PROTECTION in (raw.get("metadata") or {}).get("finalizers", [])
        if len(valid) < len(reserved) or (protected and claim.meta.deletion_timestamp is not None and not valid):
            status = {**(raw.get("status") or {}), "reservedFor": valid}
            if not valid and protected:
                status.pop("allocation", None)  # deallocated: its devices are free again
            if not status["reservedFor"]:
                del status["reservedFor"]
            raw = await self.store.update({**raw, "status": status})
            if protected and "allocation" not in status:
                meta = dict(raw["metadata"])
                meta["finalizers"] = [f for f in meta.get("finalizers", []) if f != DELETE_PROTECTION]
                raw = await self.store.update({**raw, "metadata": meta})
        if not valid:
            await self._delete_if_unneeded(claim if raw is claim.raw else ResourceClaim(raw))

    async def _delete_if_unneeded(self, claim: ResourceClaim) -> None:
        owner, owner_uid = owning_pod(claim)
        if not owner or claim.meta.deletion_timestamp is not None:
            return
        pod = await self._pod_named(claim.namespace, owner, owner_uid)
        if pod is None or pod.uid != owner_uid or is_pod_done(pod):
            try:
                await self.store.delete("ResourceClaim", claim.namespace, claim.name, uid=claim.uid)
            except NotFound:
                pass
