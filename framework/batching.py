"""Opportunistic batching, as upstream 1.35 (gate OpportunisticBatching, beta, on;
KEP-5598, pkg/scheduler/framework/runtime/batch.go).

A pod scheduled the full way (Filter, then Score) leaves behind the rest of its
sorted, scored node list. The next pod, if it has the same signature and comes
in the very next cycle, gets the head of that list as a hint: the hint is
filtered like a nominated node and, when it passes, it is the only feasible node
(no full Filter and Score pass). This holds only for pods placed one per node:
the node the previous pod took must now reject the new pod.

Signatures are the failure-reuse signatures (framework/failure_memo.py) over the
PreFilter, Filter, PreScore and Score plugins, each plugin signing for
SignPurpose.PLACEMENT (framework/interface.py): one plugin of those points that
does not sign, or any extender, switches signing off for the whole profile; a
plugin may refuse one pod (PodTopologySpread refuses pods with constraints, their
own or its defaults, and InterPodAffinity pods with pod affinity or anti-affinity,
as upstream's SignPod does).

The checks before a hint is given, in upstream's order, each counted in
`scheduler_batch_cache_flushed_total{reason}` when it fails: pod_skipped (not the
cycle right after the stored one), pod_failed, pod_incompatible (no or another
signature), expired (stored more than 500 ms ago), node_missing, node_not_full
(the new pod still passes Filter on the last chosen node). On storing: empty_list
(no nodes left) and pod_not_batchable (no signature). Attempts are counted in
`scheduler_batch_attempts_total{result}`: no_hint, hint_used, hint_not_used.

No I/O: the owner hands in the clock, the cycle counter and the metric callbacks.
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Callable, Hashable, Mapping, Sequence

import numpy as np

from framework.host_selection import select_host
from framework.api.objects import Pod
from framework.failure_memo import ProfileSigner
from framework.interface import CycleState, NodePluginScores, SignPurpose

GATE = "OpportunisticBatching"
MAX_BATCH_AGE_SECONDS = 0.5  # upstream's maxBatchAge

# BatchCacheFlushed reasons (upstream's metrics.BatchFlush*).
POD_SKIPPED = "pod_skipped"
POD_FAILED = "pod_failed"
POD_INCOMPATIBLE = "pod_incompatible"
EXPIRED = "expired"
NODE_MISSING = "node_missing"
NODE_NOT_FULL = "node_not_full"
EMPTY_LIST = "empty_list"
POD_NOT_BATCHABLE = "pod_not_batchable"
# BatchAttemptStats results.
NO_HINT = "no_hint"
HINT_USED = "hint_used"
HINT_NOT_USED = "hint_not_used"

POINTS = ("preFilter", "filter", "preScore", "score")


def batching_signer(fwk: Any, has_extenders: bool) -> ProfileSigner:
    return ProfileSigner(fwk, has_extenders, points=POINTS, purpose=SignPurpose.PLACEMENT, sign_nominated=True)


class SortedNodes:
    """upstream's sortedNodeScores: nodes by total score, highest first, ties in a
    random order drawn once (each node's Randomizer); pop() takes the head."""

    __slots__ = ("_names",)

    def __init__(self, scores: Sequence[NodePluginScores], rand: random.Random) -> None:
        totals = np.asarray(scores.totals if hasattr(scores, "totals") else
                            [s.total_score for s in scores], dtype=np.int64)
        randomizer = np.random.default_rng(rand.getrandbits(64)).random(len(totals))
        order = np.lexsort((randomizer, totals))  # ascending: the head is last
        name_at = scores.name_at if hasattr(scores, "name_at") else (lambda i: scores[i].name)
        self._names = [name_at(int(i)) for i in order]

    def pop(self) -> str:
        return self._names.pop()

    def __len__(self) -> int:
        return len(self._names)


@dataclass(frozen=True, slots=True)
class _Unsorted:
    """How many scored nodes an unsigned pod left (never stored, only counted)."""

    count: int

    def __len__(self) -> int:
        return self.count


@dataclass(slots=True)
class _State:
    signature: Hashable
    nodes: SortedNodes
    created: float


@dataclass(slots=True)
class _LastCycle:
    cycle: int
    chosen: str
    succeeded: bool


class ProfileBatch:
    """One profile's OpportunisticBatch: the stored list and the last cycle."""

    def __init__(self, profile: str, signer: ProfileSigner, now: Callable[[], float],
                 flushed: Callable[[str, str], None], attempted: Callable[[str, str], None]) -> None:
        self.profile = profile
        self.signer = signer
        self.now = now
        self._flushed = flushed
        self._attempted = attempted
        self.state: _State | None = None
        self.last: _LastCycle | None = None
        self.batched_pods = 0

    def node_hint(self, pod: Pod, cycle: int, rejects_on: Callable[[str], bool | None]) -> tuple[str, Hashable | None]:
        """GetNodeHint: (hint or "", the pod's signature). `rejects_on(node)` runs
        Filter for the pod on that node: None when the node is gone, else whether
        it rejects the pod."""
        signature = self.signer.sign(pod, False)
        if not self._compatible(signature, cycle, rejects_on):
            self._attempted(self.profile, NO_HINT)
            return "", signature
        assert self.state is not None
        return self.state.nodes.pop(), signature

    def _compatible(self, signature: Hashable | None, cycle: int,
                    rejects_on: Callable[[str], bool | None]) -> bool:
        st, last = self.state, self.last
        if st is None or not len(st.nodes) or last is None:
            return False
        reason = ""
        if cycle != last.cycle + 1:
            reason = POD_SKIPPED
        elif not last.succeeded:
            reason = POD_FAILED
        elif signature is None or signature != st.signature:
            reason = POD_INCOMPATIBLE
        elif self.now() > st.created + MAX_BATCH_AGE_SECONDS:
            reason = EXPIRED
        else:
            rejected = rejects_on(last.chosen)
            if rejected is None:
                reason = NODE_MISSING
            elif not rejected:
                reason = NODE_NOT_FULL
        if reason:
            self._flushed(self.profile, reason)
            return False
        return True

    def store(self, signature: Hashable | None, hinted: str, chosen: str, others: "SortedNodes | _Unsorted | None",
              cycle: int) -> None:
        """StoreScheduleResults after a cycle that chose `chosen`: keep the list
        when the hint was taken, else replace it with this pod's other nodes."""
        self.last = _LastCycle(cycle, chosen, True)
        if hinted and hinted == chosen:
            self._attempted(self.profile, HINT_USED)
            self.batched_pods += 1
            return
        if hinted:
            self._attempted(self.profile, HINT_NOT_USED)
        if signature is not None and isinstance(others, SortedNodes) and len(others):
            self.state = _State(signature, others, self.now())
            return
        self._flushed(self.profile, EMPTY_LIST if others is None or not len(others) else POD_NOT_BATCHABLE)
        self.state = None


def for_scheduler(frameworks: Mapping[str, Any], has_extenders: bool, now: Callable[[], float],
                  cycle: Callable[[], int], metrics: Any) -> "Batching | None":
    """The Scheduler's batching when the gate is on (the profiles share one handle's
    gates), else None: today's path, with select_host."""
    first = next(iter(frameworks.values()), None)
    if first is None or not first.handle.features.enabled(GATE):
        return None
    return Batching(frameworks, has_extenders, now, cycle, metrics.batch_cache_flushed, metrics.batch_attempt)


class Batching:
    """The algorithm's hooks (framework/algorithm.py), one ProfileBatch per profile.
    The owner (the Scheduler actor) counts cycles; `hint` and `choose`/`chose_only`
    are called in that order within one cycle."""

    def __init__(self, frameworks: Mapping[str, Any], has_extenders: bool, now: Callable[[], float],
                 cycle: Callable[[], int], flushed: Callable[[str, str], None] = lambda p, r: None,
                 attempted: Callable[[str, str], None] = lambda p, r: None) -> None:
        self.profiles = {name: ProfileBatch(name, batching_signer(fwk, has_extenders), now, flushed, attempted)
                         for name, fwk in frameworks.items()}
        self.cycle = cycle
        self._current: tuple[ProfileBatch, str, Hashable | None] | None = None

    def hint(self, fwk: Any, state: CycleState, pod: Pod, snapshot: Any) -> str:
        """After PreFilter: the node to try first ("" for none)."""
        batch = self.profiles[fwk.profile_name]

        def rejects_on(name: str) -> bool | None:
            node = snapshot.get(name)
            return None if node is None else fwk.run_filter(state, pod, node).is_rejected()
        hinted, signature = batch.node_hint(pod, self.cycle(), rejects_on)
        self._current = (batch, hinted, signature)
        return hinted

    def chose_only(self, node: str) -> None:
        """The cycle found one feasible node (the hint, a nominated node, or the only one)."""
        self._store(node, None)

    def choose(self, scores: Sequence[NodePluginScores], rand: random.Random) -> str:
        """The host among scored nodes: the head of the sorted list, whose rest is stored.
        An unsigned pod's list would be dropped (pod_not_batchable): it is not
        sorted, and the host is drawn as select_host draws it (the same distribution)."""
        if self._current is not None and self._current[2] is None:
            host = select_host(scores, rand)
            self._store(host, _Unsorted(len(scores) - 1))
            return host
        nodes = SortedNodes(scores, rand)
        host = nodes.pop()
        self._store(host, nodes)
        return host

    def _store(self, chosen: str, others: "SortedNodes | _Unsorted | None") -> None:
        if self._current is None:
            return
        batch, hinted, signature = self._current
        self._current = None
        batch.store(signature, hinted, chosen, others, self.cycle())
