"""The claim specs this store admitted inside ResourceClaimTemplates, so that a claim the
resourceclaim controller makes from a template is not walked by the schema again.

The proof is identity: the write chain notes, per template key, the spec.spec object of
the template it last admitted (validated and defaulted, by this process's chain and
rules: a template loaded from the backend is not noted until it is written again). A
ResourceClaim create that names that template (messages.Create.template) and carries
that very object as its spec, with no status, has a spec the chain already found valid;
stored objects are never changed in place, so the object still holds what was checked.
Anything else (another object, even an equal one; a client's create, whose objects are
decoded from the wire) is walked in full. The rest of such a claim (its metadata) is
admitted once per shape (claim_metas.py): walked when its shape is new or something in it
is refused."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from actors.store.claim_metas import admitted_rest
from framework.api.dra_kinds import ResourceClaimTemplate
from framework.api.objects import KubeObject


class AdmittedClaimSpecs:
    def __init__(self) -> None:
        self._by_template: dict[str, Any] = {}  # template key -> its admitted spec.spec
        self.proven_count = 0  # claims admitted with their template's spec (tests, profile)

    def note(self, obj: KubeObject) -> None:
        """After `obj` passed the chain: remember a template's claim spec."""
        if isinstance(obj, ResourceClaimTemplate):
            spec = obj.raw.get("spec")
            inner = spec.get("spec") if isinstance(spec, Mapping) else None
            if isinstance(inner, dict):
                self._by_template[obj.key] = inner
            else:
                self._by_template.pop(obj.key, None)

    def proven(self, raw: Any, template: str) -> dict[str, Any] | None:
        """`raw`'s spec when `raw` is a ResourceClaim, in the template's namespace, without
        a status, whose spec is the template's admitted one itself; else None."""
        if not template or type(raw) is not dict or raw.get("kind") != "ResourceClaim" or "status" in raw:
            return None
        spec = self._by_template.get(template)
        meta = raw.get("metadata")
        if spec is None or raw.get("spec") is not spec or not isinstance(meta, dict) \
                or f"{meta.get('namespace') or 'default'}/" != template[:template.index("/") + 1]:
            return None
        self.proven_count += 1
        return spec

    @staticmethod
    def rest_admitted(raw: Any, fv: str | None, strict: bool) -> dict[str, Any] | None:
        """The decode stage's result for a proven claim without its spec, when the walk
        finds or found for its shape nothing wrong (claim_metas.admitted_rest); None:
        decode it (the walk reports)."""
        return admitted_rest(raw, fv, strict)
