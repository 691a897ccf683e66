"""Failure reuse: a failed scheduling attempt that repeats a known result reuses it.

Upstream's NodeResourcesFit hint queues every pod it rejected whenever any assigned
pod goes away, and all but one of them fail again against the same cluster. The
queue keeps doing exactly that (the same pods move, the same events and conditions
are written); only the work of the repeated failure is saved: a pod whose
signature equals that of a pod which failed against the same cluster state gets
that failure again (FitError diagnosis, message, PostFilter's verdict) without
running PreFilter, Filter and PostFilter.

Exact by construction, after upstream 1.35's pod signatures (opportunistic batching,
``SignPod`` / ``computeBatchablePlugins``):

- The signature is everything of the pod a plugin may read, except its identity:
  scheduler name, namespace, labels, annotations, owner references and the whole
  spec. A pod with a nominated node (in the nominator or in its status) is not
  signed: preemption treats it apart.
- Every PreFilter, Filter and PostFilter plugin of the profile must sign for
  SignPurpose.FAILURE (framework/interface.py's SignPlugin: each plugin declares
  it itself), that is promise that its result depends only on the signed pod, the
  snapshot, the nominated pods and the lister's objects other than Pods; one that
  does not turns reuse off for the whole profile, as do extenders; a plugin may
  refuse one pod (None). Score plugins take no part in a failure.
- The key is (profile, signature, world), the world being the snapshot generation
  (which moves with every change of a node or of a pod placed or assumed), the
  nominator's version and the lister's version: any change of either makes a new
  world and drops every stored result.
- Only failures that changed nothing are stored: a FitError whose PostFilter
  nominated no node and evicted nobody.
"""
from __future__ import annotations

import functools
import json
import weakref
from dataclasses import dataclass
from typing import Any, Callable, Hashable

from framework.attempt_outcome import Diagnosis
from framework.api.objects import Pod
from framework.identity_memo import IdentityMemo
from framework.interface import SignPlugin, SignPurpose

# The state a result holds for: snapshot generation, nominator version, lister version.
World = tuple[int, int, int]
Signer = Callable[[Pod], Hashable | None]


# The extension points whose plugins must sign for a failure to be reused.
FAILURE_POINTS = ("preFilter", "filter", "postFilter")


def _signer(plugin: Any, purpose: SignPurpose) -> Signer | None:
    """The plugin's own signer for `purpose` (SignPlugin), None when it declares none."""
    if not isinstance(plugin, SignPlugin):
        return None
    return functools.partial(plugin.sign_pod, purpose=purpose)


class ProfileSigner:
    """Pod signatures for one profile; `enabled` is False when some plugin cannot
    sign (`unsigned` names them) or the scheduler has extenders. `points` are the
    extension points whose plugins must sign for `purpose` (both differ for
    opportunistic batching, framework/batching.py); `sign_nominated`: a pod with a
    nominated node is signed too."""

    def __init__(self, fwk: Any, has_extenders: bool = False, *, points: tuple[str, ...] = FAILURE_POINTS,
                 purpose: SignPurpose = SignPurpose.FAILURE, sign_nominated: bool = False) -> None:
        self.profile = fwk.profile_name
        self.signers: list[Signer] = []
        self.unsigned: list[str] = []
        self.sign_nominated = sign_nominated
        seen: set[int] = set()
        for pl in (p for point in points for p in fwk.plugins_at(point)):
            if id(pl) in seen:
                continue
            seen.add(id(pl))
            signer = _signer(pl, purpose)
            if signer is None:
                self.unsigned.append(pl.name)
            else:
                self.signers.append(signer)
        self.enabled = not self.unsigned and not has_extenders
        # The last pods signed, by identity (each held, so its id is not reused): a stored
        # Pod is never changed in place and signers are pure (SignPlugin), so a pod signed
        # again (a completion signs the woken pod and its follower in each cycle that
        # tries them, and again when the follower is tried next) gets the same answer.
        self._signed: IdentityMemo[Pod, Hashable | None] = _shared_memo(fwk, points, purpose)
        # The signer that refused the last pod refused: asked first next time (a pod is
        # unsigned when any signer refuses it, whichever is asked first; PodTopologySpread
        # refuses every pod of a profile with default constraints, after the others).
        self._refused: Signer | None = None

    def sign(self, pod: Pod, nominated: bool) -> Hashable | None:
        """The pod's signature, None when it cannot be signed."""
        if not self.enabled or (not self.sign_nominated and (nominated or pod.nominated_node_name)):
            return None
        return self._signed.of(pod, self._sign)

    def _sign(self, pod: Pod) -> Hashable | None:
        refused = self._refused
        if refused is not None and refused(pod) is None:
            return None
        fragments = []
        for signer in self.signers:
            f = signer(pod)
            if f is None:
                self._refused = signer
                return None
            fragments.append(f)
        return (*_PLAIN.of(pod), tuple(fragments))


# Signers of one Framework for the same points and purpose give a pod the same signature
# (their plugins' sign_pod are pure), so they share the memo of their last pods: the
# queue's class rules (actors/queue/class_rules.py) and the Scheduler's failure reuse
# sign the same follower once a completion, not once each. By the Framework, weakly
# (two pipelines in one process never share).
_SHARED: "weakref.WeakKeyDictionary[Any, dict[tuple[tuple[str, ...], SignPurpose], IdentityMemo]]" = (
    weakref.WeakKeyDictionary())


def _shared_memo(fwk: Any, points: tuple[str, ...], purpose: SignPurpose) -> IdentityMemo:
    try:
        memos = _SHARED.setdefault(fwk, {})
    except TypeError:  # an object that takes no weak reference: a memo of its own
        return IdentityMemo(_PlainParts.SIZE)
    return memos.setdefault((tuple(points), purpose), IdentityMemo(_PlainParts.SIZE))


# json.dumps with these arguments builds an encoder for each call; this one, made once,
# gives the same text.
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), default=str)


def _canonical(value: Any) -> str:
    return _CANONICAL.encode(value)


class _PlainParts:
    """The signature's part every signer shares (scheduler name, namespace, labels,
    annotations, owner references and spec in canonical form), kept for the pods signed
    last: a stored Pod is never changed in place, and a completion signs the same two
    pods about seven times (their key, their class in the scheduler and in the queue,
    batching's hint). By object identity (IdentityMemo)."""

    SIZE = 64

    def __init__(self) -> None:
        self._kept: IdentityMemo[Pod, tuple[str, str, str, str]] = IdentityMemo(self.SIZE)

    def of(self, pod: Pod) -> tuple[str, str, str, str]:
        return self._kept.of(pod, _plain_parts)


def _plain_parts(pod: Pod) -> tuple[str, str, str, str]:
    meta = pod.raw.get("metadata") or {}
    identity_free = {k: meta.get(k) for k in ("labels", "annotations", "ownerReferences")}
    return (pod.scheduler_name, pod.namespace, _canonical(identity_free), _SPECS.of(pod.raw.get("spec"), _canonical))


_PLAIN = _PlainParts()
# The canonical form of the last specs, by the spec object: pods created from one
# template share their spec (the store admits it once per template), so a queue of
# such pods encodes it once, not once for each pod it signs after the pod memo above
# forgot it (a Churn completion's follower was last signed a queue's length ago).
# Like a stored Pod, a stored spec is never changed in place.
_SPECS: IdentityMemo[Any, str] = IdentityMemo(_PlainParts.SIZE)


@dataclass(frozen=True, slots=True)
class KnownFailure:
    """What a failed attempt produced, enough to produce it again for another pod."""

    num_all_nodes: int
    diagnosis: Diagnosis  # not changed after it is stored (the scheduler keeps it compact)
    message: str
    nominated: str | None  # PostFilter's nomination: None (none ran) or "" (clears)
    preemption_ran: bool  # DefaultPreemption's PostFilter ran (its attempt is counted again)


class FailureMemo:
    """Known failures of the current world, by (profile, signature)."""

    def __init__(self) -> None:
        self._world: World | None = None
        self._known: dict[tuple[str, Hashable], KnownFailure] = {}
        self.hits = 0
        self.stored = 0

    def lookup(self, profile: str, signature: Hashable, world: World) -> KnownFailure | None:
        if world != self._world:
            self._world = world
            self._known.clear()
            return None
        found = self._known.get((profile, signature))
        if found is not None:
            self.hits += 1
        return found

    def store(self, profile: str, signature: Hashable, world: World, failure: KnownFailure) -> None:
        if world != self._world:
            self._world = world
            self._known.clear()
        self._known[(profile, signature)] = failure
        self.stored += 1

    def __len__(self) -> int:
        return len(self._known)
