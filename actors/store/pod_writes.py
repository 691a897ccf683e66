"""The Store's writes of the scheduler's results to a pod: its binding (spec.nodeName
and PodScheduled=True, the pods/binding subresource), its status (a condition,
the nomination, the phase), the resourceclaim controller's claims with their record in
the pod's status (MakePodClaims) and preemption's evictions (EvictPods). PodWrites is one of the Store actor's duties, over the
store's objects and its write.

Stored objects are never changed in place, so each new pod shares every part of the
old one but the few dicts written here (a deep copy cost more than the scheduling)."""
from __future__ import annotations

from typing import Any, Callable, Mapping

from actors.store.messages import Conflict, EvictPods, MakePodClaims, NotFound, RecordEvent, UpdatePodStatus, refuse
from actors.store.raw import section, set_condition
from actors.store.reads import key_of as _key
from actors.store.row_text import extended
from actors.store.weights import PodLengths
from framework.api.errors import ValidationError
from framework.api.objects import KubeObject, Pod
from framework.api.validation import duplicate, invalid, is_dns1123_subdomain
from framework.dra.pod_claims import merged_claim_statuses


class PodWrites:
    def __init__(self, objects: Mapping[str, Mapping[str, KubeObject]], write: Callable[..., KubeObject],
                 lengths: PodLengths) -> None:
        self._objects = objects
        self._write = write  # the store's write (actor.py: resourceVersion, undo log, events)
        self._lengths = lengths  # pods not bound yet with their lengths (weights.py)

    def _pod(self, ns: str, name: str, uid: str = "") -> Pod:
        pod = self._objects["Pod"].get(_key("Pod", ns, name))
        if pod is None or (uid and pod.uid != uid):
            raise NotFound(f'Pod "{_key("Pod", ns, name)}" not found')
        assert isinstance(pod, Pod)
        return pod

    def bind(self, ns: str, name: str, node: str, uid: str, batch: Any) -> KubeObject:
        pod = self._pod(ns, name, uid)
        if pod.node_name:
            raise Conflict(f'pod {pod.key} is already assigned to node "{pod.node_name}"')
        # Stored objects are never changed in place, so the new one shares every part
        # but the few dicts written here (a deep copy cost more than the scheduling).
        raw = dict(pod.raw)
        spec = raw.get("spec")
        base = spec if type(spec) is dict else section(spec)
        raw["spec"] = extended(base, "nodeName", node)  # one copy
        status = raw["status"] = section(raw.get("status"))
        set_condition(status, {"type": "PodScheduled", "status": "True"})
        # The API server clears the nomination at binding (ClearingNominatedNodeNameAfterBinding).
        status.pop("nominatedNodeName", None)
        size = self._lengths.bound(pod.key, pod.raw, base, node, status)  # from the stored pod's (weights.py)
        return self._write("Pod", pod.key, raw, batch, make=pod.with_status_written, size=size)

    def update_status(self, msg: UpdatePodStatus, batch: Any) -> KubeObject:
        pod = self._pod(msg.namespace, msg.name, msg.uid)
        if msg.claim_statuses and msg.condition is None and msg.nominated_node_name is None and msg.phase is None:
            have = section(pod.raw.get("status")).get("resourceClaimStatuses")
            if merged_claim_statuses(have, msg.claim_statuses) == have:
                return pod  # nothing changes: not written (kube-apiserver's no-op update keeps the resourceVersion)
        # As in bind: only the status (and its new conditions list) is written.
        raw = dict(pod.raw)
        status = raw["status"] = section(raw.get("status"))
        if msg.condition is not None:
            set_condition(status, dict(msg.condition))
        if msg.nominated_node_name is not None:
            if msg.nominated_node_name:
                status["nominatedNodeName"] = msg.nominated_node_name
            else:
                status.pop("nominatedNodeName", None)
        if msg.phase is not None:
            status["phase"] = msg.phase
        if msg.claim_statuses:
            entries = merged_claim_statuses(status.get("resourceClaimStatuses"), msg.claim_statuses)
            refuse(claim_status_errors(entries, pod.spec.get("resourceClaims")))
            status["resourceClaimStatuses"] = entries
        return self._write("Pod", pod.key, raw, batch, make=pod.with_status_written)

    def make_claims(self, msg: MakePodClaims, batch: Any, create: Callable[..., KubeObject]
                    ) -> tuple[list[KubeObject], KubeObject]:
        """The claims created (`create`: the store's, through the write chain), then their
        names merged into the pod's status; the caller undoes the whole message if a write
        is refused."""
        made = [create(c.obj, batch, template=c.template) for c in msg.creates]
        names = {**msg.found, **{c.pod_claim: obj.name for c, obj in zip(msg.creates, made)}}
        pod = self.update_status(UpdatePodStatus(namespace=msg.namespace, name=msg.name, uid=msg.uid,
                                                 claim_statuses=names), batch)
        return made, pod  # the stored objects themselves (an in-process caller's: never changed in place)

    def evict(self, msg: EvictPods, batch: Any, delete: Callable[..., Any],
              record: Callable[[RecordEvent, Any], None]) -> tuple[bool, ...]:
        """Each victim in order: the condition, the delete (`delete`: the store's, no
        precondition, as upstream's DeletePod), the event (`record`: the store's
        recorder); a victim gone at either write is skipped. The caller undoes the
        whole message if a write is refused."""
        evicted = []
        for ns, name, uid in msg.victims:
            try:
                self.update_status(UpdatePodStatus(namespace=ns, name=name, uid=uid, condition=msg.condition), batch)
                delete("Pod", ns, name, "", "", batch)
            except NotFound:
                evicted.append(False)
                continue
            record(RecordEvent(kind="Pod", key=_key("Pod", ns, name), type="Normal", reason=msg.event_reason,
                               message=msg.event_message, uid=uid), batch)
            evicted.append(True)
        return tuple(evicted)


def claim_status_errors(entries: list[dict[str, Any]], pod_claims: Any) -> list[ValidationError]:
    """kube-apiserver's pod status rules for status.resourceClaimStatuses: each names one
    of spec.resourceClaims, once; a claim name is a DNS subdomain."""
    names = {c.get("name") for c in pod_claims or [] if isinstance(c, Mapping)}
    errors: list[ValidationError] = []
    seen: set[Any] = set()
    for i, entry in enumerate(entries):
        at, name = f"status.resourceClaimStatuses[{i}].name", entry.get("name")
        if name not in names:
            errors.append(invalid(at, name, "must match the name of an entry in `spec.resourceClaims`"))
        if name in seen:
            errors.append(duplicate(at, name))
        seen.add(name)
        claim = entry.get("resourceClaimName")
        if isinstance(claim, str):
            errors += [invalid(at, claim, detail) for detail in is_dns1123_subdomain(claim)]
    return errors
