"""The Scheduler's side of failure reuse (framework/failure_memo.py): which pods it
may sign, in which world, and what of a failed cycle it keeps."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Hashable, Mapping, Protocol

from actors.metrics_sink import NO_METRICS, MetricsSink
from framework.attempt_outcome import FitError
from framework.api.objects import Pod
from framework.failure_memo import FailureMemo, KnownFailure, ProfileSigner, World
from framework.interface import Code, QueuedPodInfo, Status


class HoldsFitError(Protocol):
    fit_error: FitError | None


@dataclass(frozen=True, slots=True)
class ReuseKey:
    profile: str
    signature: Hashable
    world: World


class FailureReuse:
    """Owned by the Scheduler actor; `world` reads its snapshot, nominator and lister."""

    def __init__(self, frameworks: Mapping[str, object], world: Callable[[], World], *,
                 has_extenders: bool, enabled: bool = True, metrics: MetricsSink = NO_METRICS) -> None:
        self.signers = {name: ProfileSigner(fwk, has_extenders) for name, fwk in frameworks.items()}
        self.world = world
        self.enabled = enabled
        self.metrics = metrics
        self.memo = FailureMemo()

    def key(self, pod: Pod, nominated: bool, world: World | None = None) -> ReuseKey | None:
        """The pod's key in `world` (default: the current one); None when it cannot be signed."""
        signer = self.signers.get(pod.scheduler_name)
        if not self.enabled or signer is None:
            return None
        signature = signer.sign(pod, nominated)
        return None if signature is None else ReuseKey(signer.profile, signature, self.world() if world is None else world)

    def class_of(self, pod: Pod, nominated: bool, key: ReuseKey | None = None) -> tuple[str, Hashable] | None:
        """(profile, failure signature): the pod's equivalence class, whether reuse
        is on or not (`key`: the pod's key when already signed); None when the pod
        cannot be signed."""
        if key is not None:
            return key.profile, key.signature
        signer = self.signers.get(pod.scheduler_name)
        signature = signer.sign(pod, nominated) if signer is not None else None
        return None if signature is None else (signer.profile, signature)

    def may_know(self) -> bool:
        """Whether a lookup can find anything: some failure is kept. While none is,
        a cycle signs its pod only once it fails (most cycles succeed)."""
        return self.enabled and len(self.memo) > 0

    def lookup(self, key: ReuseKey) -> KnownFailure | None:
        return self.memo.lookup(key.profile, key.signature, key.world)

    def remember(self, key: ReuseKey, err: FitError, message: str, nominated: str | None,
                 preemption_ran: bool, evicted: bool) -> None:
        """Keep a failure that changed nothing: no eviction, no nomination, and the
        world is still the one the cycle started in."""
        if evicted or nominated or self.world() != key.world:
            return
        self.memo.store(key.profile, key.signature, key.world,
                        KnownFailure(err.num_all_nodes, err.diagnosis, message, nominated, preemption_ran))

    def reuse_known(self, qpi: QueuedPodInfo, known: KnownFailure, attempt: HoldsFitError) -> tuple[Status, str | None]:
        """What the Scheduler's failed cycle hands its failure handler, for a pod whose
        signature failed in this world already: the same diagnosis (its plugin sets
        on the pod's QueuedPodInfo), message and PostFilter verdict, not run again.
        A preemption attempt is counted as upstream counts every PostFilter run."""
        pod = qpi.pod
        attempt.fit_error = FitError(pod, known.num_all_nodes, known.diagnosis)
        qpi.unschedulable_plugins = set(known.diagnosis.unschedulable_plugins)
        qpi.pending_plugins = set(known.diagnosis.pending_plugins)
        if known.preemption_ran:
            self.metrics.preemption_attempt()
        self.metrics.failure_reused(pod.scheduler_name)
        return Status(Code.Unschedulable, known.message), known.nominated

    @property
    def hits(self) -> int:
        return self.memo.hits


def status_write_needed(stored: Pod, condition: Mapping[str, str], nominated: str | None) -> bool:
    """Whether a failed attempt's status write changes the pod as last stored
    (upstream's updatePod patches only then): a PodScheduled condition that differs
    in status, reason or message, or a nomination to set or clear (`nominated`
    None leaves it)."""
    if nominated is not None and stored.nominated_node_name != nominated:
        return True
    status = stored.raw.get("status")
    conditions = status.get("conditions") if isinstance(status, Mapping) else None
    for c in conditions if isinstance(conditions, list) else ():
        if isinstance(c, Mapping) and c.get("type") == condition["type"]:
            return any(c.get(k) != condition[k] for k in ("status", "reason", "message"))
    return True
