"""The pod specs this store admitted, so that a pod created with the spec of one
already admitted (the pods of a Job, a Deployment, a gang, a bench: many pods of one
template, equal but for their metadata) gets that spec's outcome without walking it
again: the same spec object, checked, admitted and shared, and its parsed part
(framework.api.pod.share_parsed_spec). Only the metadata and status are walked,
checked and parsed per pod.

The proof is the exact encoding (sharing.exact_key: 1, 1.0 and True never share one)
of the spec as the chain's decode stage receives it (after the feature gates' drops),
with everything else the spec's admission reads: the fieldValidation mode (which
unknown fields are looked for), the name-format rules, and what priority admission
reads of the PriorityClasses for it (admission.priority_basis: the named class's
value and policy, or the default class's). The schema's verdict on a spec depends on
the spec alone (framework.api.schema.types.Remembered), the Priority plugin's on the
spec and that basis; the pod strategy's create-time status is the pod's own and is
made per pod. Noted only when the whole create passed with the spec clean: no
errors, no unknown fields in it, and Kueue's pod defaults not applying (they read the
metadata and change the spec: such a pod is admitted in full, as is a refused one).
Stored raw dicts are never changed in place, so the shared spec keeps what was
checked. Bounded: when full it starts afresh.
"""
from __future__ import annotations

from typing import Any

from actors.store import weights
from actors.store.row_text import remember
from actors.store.sharing import exact_key

MAX_SPECS = 4096
SpecKey = tuple[bytes, str | None, bool, tuple[Any, ...]]


class AdmittedPodSpecs:
    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled  # off: every pod is admitted in full (the differential tests)
        self._by_key: dict[SpecKey, dict[str, Any]] = {}
        self.proven_count = 0  # pods admitted with a remembered spec (tests, profile)

    def key(self, spec: Any, fv: str | None, strict: bool, basis: tuple[Any, ...] | None) -> SpecKey | None:
        """The memo's key for an incoming pod `spec`, None when it cannot be proved."""
        if not self.enabled or basis is None or type(spec) is not dict:
            return None
        encoded = exact_key(spec)
        return None if encoded is None else (encoded, fv, strict, basis)

    def proven(self, key: SpecKey | None) -> dict[str, Any] | None:
        """The admitted spec of an earlier pod whose incoming spec had this key."""
        return self._by_key.get(key) if key is not None else None

    def note(self, key: SpecKey, spec: dict[str, Any]) -> None:
        """After a pod passed the chain with its spec clean: remember its admitted spec."""
        if len(self._by_key) >= MAX_SPECS:
            self._by_key.clear()
        self._by_key[key] = spec
        remember(spec)  # its row text, once (row_text.py): the spec is shared and never changed
        weights.remember(spec)  # its encoding's length, once (weights.py)
