"""PreFilter's check of a claim's device classes (upstream's PreFilter loop over each
request's deviceClassName): each request and subrequest names a class the view holds,
with upstream's messages. What a claim's spec alone says (its request and class names)
is read once per spec object: stored objects are never changed in place, and the claims
made from one template share the template's spec."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Callable

from framework.api.dra_kinds import ResourceClaim
from framework.interface import Code, Status
from framework.plugins.dynamicresources.claims import kobj

NAME = "DynamicResources"
_KEPT = 1024

# (request name, class name) of each request in order; None for the class: the spec
# refuses that request (its message names the claim: the walk gives it)
Pairs = tuple[tuple[str, Any], ...]


def _refusal(claim: ResourceClaim, request: Mapping[str, Any], prioritized_list: bool
             ) -> tuple[list[tuple[str, Any]] | None, Status | None]:
    """The request's (name, class) pairs, or the Status its spec alone earns."""
    name = str(request.get("name", ""))
    if isinstance(request.get("exactly"), Mapping):
        return [(name, request["exactly"].get("deviceClassName"))], None
    if request.get("firstAvailable"):
        if not prioritized_list:
            return None, Status(Code.UnschedulableAndUnresolvable,
                                f"resource claim {kobj(claim)}, request {name}: has subrequests, "
                                "but the DRAPrioritizedList feature is disabled")
        return [(f"{name}/{sub.get('name', '')}", sub.get("deviceClassName")) for sub in request["firstAvailable"]], None
    return None, Status(Code.UnschedulableAndUnresolvable,
                        f"resource claim {kobj(claim)}, request {name}: unknown request type")


def _pairs(claim: ResourceClaim, prioritized_list: bool) -> Pairs:
    out: list[tuple[str, Any]] = []
    for request in (claim.spec.get("devices") or {}).get("requests") or []:
        pairs, refused = _refusal(claim, request, prioritized_list)
        if pairs is None:
            return (*out, (str(request.get("name", "")), None))
        for request_name, class_name in pairs:
            if not class_name:
                return (*out, (request_name, None))
            out.append((request_name, class_name))
    return tuple(out)


class ClassCheck:
    def __init__(self, class_exists: Callable[[Any], bool], prioritized_list: bool) -> None:
        self._exists = class_exists
        self._prioritized_list = prioritized_list
        self._by_spec: dict[int, tuple[Any, Pairs]] = {}  # id(claim spec) -> (the spec, its pairs)

    def check(self, claim: ResourceClaim) -> Status | None:
        """None when every class the claim asks for exists, else the first refusal in
        request order (upstream's message and code)."""
        spec = claim.spec
        known = self._by_spec.get(id(spec))
        if known is None or known[0] is not spec:
            if len(self._by_spec) >= _KEPT:
                self._by_spec.clear()
            known = self._by_spec[id(spec)] = (spec, _pairs(claim, self._prioritized_list))
        for request_name, class_name in known[1]:
            if class_name is None:
                return self._spec_refusal(claim)
            if not self._exists(class_name):
                return Status(Code.UnschedulableAndUnresolvable,
                              f"request {request_name}: device class {class_name} does not exist")
        return None

    def _spec_refusal(self, claim: ResourceClaim) -> Status:
        """The refusal of the first request (or subrequest) the spec alone refuses."""
        for request in (claim.spec.get("devices") or {}).get("requests") or []:
            pairs, refused = _refusal(claim, request, self._prioritized_list)
            if refused is not None:
                return refused
            for request_name, class_name in pairs or []:
                if not class_name:
                    return Status.error_of(f"request {request_name}: unsupported request type", NAME)
        raise AssertionError("a spec's refusal was noted but not found")
