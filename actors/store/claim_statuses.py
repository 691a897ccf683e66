"""A claim status in the allocator's plain shape, judged by its parts instead of walked.

DynamicResources' PreBind writes, for nearly every claim, a status of one shape: an
allocation of device results each naming only its request, driver, pool and device, an
optional node selector of one `metadata.name In [node]` field, and reservedFor entries
of plain strings. For that shape the claim schema's verdict (claim_status_errors: the
closed objects' walk, validateAllocationResult, the node selector's rules) is the sum of
independent verdicts on single values: each result's request against the claim's
request names, its driver, pool and device names, the node's name, and reservedFor's
required values, duplicate uids and length. Each single-value verdict is the schema's
own function run once on that value (remembered by value: the cluster's pools, devices
and nodes repeat from pod to pod), so the answer is the walk's; a status of any other
shape, or one with any part refused, is walked in full (the refusal's paths and
messages are the walk's). What the shortcut saves is the generic walk and its copy
(about 30-50 us a claim) on the scheduler's path: every allocation written is new (a
new device, a new pod), so nothing can be remembered for the whole status.

tests/actors/test_claim_statuses.py holds the shortcut to the walk's verdict on
statuses mutated field by field."""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from framework.api.schema.common import NODE_SELECTOR
from framework.api.schema.dra import (ALLOCATION_RESULTS_MAX, RESERVED_FOR_MAX, device_ref, driver_name,
                                      names_request, pool_name, request_names, request_ref)
from framework.api.schema.types import Ctx

_RESULT_KEYS = frozenset(("request", "driver", "pool", "device"))
_STATUS_KEYS = frozenset(("allocation", "reservedFor"))
_ALLOCATION_KEYS = frozenset(("devices", "nodeSelector"))
_CONSUMER_KEYS = frozenset(("apiGroup", "resource", "name", "uid"))
_REQUIREMENT_KEYS = frozenset(("key", "operator", "values"))
_MEMO_MOST = 1 << 16  # distinct values remembered (pools, devices, nodes of a big cluster) before starting over

_verdicts: dict[tuple[str, str, bool], bool] = {}
_results: dict[tuple[str, str, str, str, bool], bool] = {}  # a plain result's four values -> all pass
_names_by_spec: dict[int, tuple[Any, Mapping[str, set[str]]]] = {}  # id(spec.devices) -> its request names
proven_count = 0  # statuses judged by their parts (tests, profile)


def _passes(kind: str, value: str, strict: bool, check: Callable[..., None], *args: Any) -> bool:
    """The schema's verdict on one value (`check(*args, path, ctx)` is the schema's
    function run on it), remembered by value."""
    key = (kind, value, strict)
    verdict = _verdicts.get(key)
    if verdict is None:
        ctx = Ctx(strict=strict)
        check(*args, "", ctx)
        verdict = not ctx.errors
        if len(_verdicts) >= _MEMO_MOST:
            _verdicts.clear()
        _verdicts[key] = verdict
    return verdict


def _request_alone(ref: str, path: str, ctx: Ctx) -> None:
    """request_ref's rules on the value alone (its parts' format), against names that hold it."""
    parts = ref.split("/")
    request_ref(ref, path, ctx, {parts[0]: set(parts[1:2])})


def _result(r: Any, names: Mapping[str, set[str]], strict: bool) -> dict[str, str] | None:
    if type(r) is not dict or r.keys() != _RESULT_KEYS:
        return None
    request, driver, pool, device = r["request"], r["driver"], r["pool"], r["device"]
    if type(request) is not str or type(driver) is not str or type(pool) is not str or type(device) is not str:
        return None
    if not names_request(names, request):
        return None
    key = (request, driver, pool, device, strict)  # the four values' verdicts at once (a device repeats)
    verdict = _results.get(key)
    if verdict is None:
        verdict = _passes("request", request, strict, _request_alone, request) \
            and _passes("driver", driver, strict, driver_name, driver) \
            and _passes("pool", pool, strict, pool_name, pool) \
            and _passes("device", device, strict, device_ref, r)  # its driver and pool pass: the device decides
        if len(_results) >= _MEMO_MOST:
            _results.clear()
        _results[key] = verdict
    return dict(r) if verdict else None


def _request_names(devices: Any) -> Mapping[str, set[str]]:
    """request_names of the claim's spec.devices, worked out once per stored object (the
    claims made from one template share its spec; stored objects are never changed in place)."""
    known = _names_by_spec.get(id(devices))
    if known is not None and known[0] is devices:
        return known[1]
    names = request_names(devices if isinstance(devices, dict) else {})
    if isinstance(devices, dict):
        if len(_names_by_spec) >= 1024:
            _names_by_spec.clear()
        _names_by_spec[id(devices)] = (devices, names)
    return names


def _node_selector(sel: Any, strict: bool) -> dict[str, Any] | None:
    """A copy of `sel` when it is `{nodeSelectorTerms: [{matchFields: [{metadata.name In [node]}]}]}`
    and the schema takes it. (One-key maps asked by their length and a get: no set built
    to compare their keys with.)"""
    if type(sel) is not dict or len(sel) != 1:
        return None
    terms = sel.get("nodeSelectorTerms")
    if type(terms) is not list or len(terms) != 1 or type(terms[0]) is not dict or len(terms[0]) != 1:
        return None
    fields = terms[0].get("matchFields")
    if type(fields) is not list or len(fields) != 1:
        return None
    req = fields[0]
    if type(req) is not dict or req.keys() != _REQUIREMENT_KEYS or req["key"] != "metadata.name" \
            or req["operator"] != "In" or type(req["values"]) is not list or len(req["values"]) != 1 \
            or type(req["values"][0]) is not str:
        return None
    if not _passes("node", req["values"][0], strict, NODE_SELECTOR.check, sel):
        return None
    copy = dict(req)  # (its keys in their order; the values list copied in its place)
    copy["values"] = list(req["values"])
    return {"nodeSelectorTerms": [{"matchFields": [copy]}]}


def _consumers(entries: Any) -> list[dict[str, str]] | None:
    """reservedFor's copy when every entry is plain strings with resource, name and uid
    set, the uids distinct and the list within its bound."""
    if type(entries) is not list or len(entries) > RESERVED_FOR_MAX:
        return None
    uids: set[str] = set()
    out = []
    for e in entries:
        if type(e) is not dict or not e.keys() <= _CONSUMER_KEYS:
            return None
        for v in e.values():  # (a loop, not all() over a generator: no frame a consumer)
            if type(v) is not str:
                return None
        uid = e.get("uid")
        if not uid or not e.get("resource") or not e.get("name") or uid in uids:
            return None
        uids.add(uid)
        out.append(dict(e))
    return out


def plain_status_copy(status: Any, spec: Mapping[str, Any], strict: bool) -> dict[str, Any] | None:
    """The store's copy of `status` when it has the allocator's plain shape and the claim
    schema (against the claim's `spec`, names checked when `strict`) finds nothing wrong
    with it; None: walk it in full (another shape, or something refused)."""
    global proven_count
    if type(status) is not dict or not status.keys() <= _STATUS_KEYS:
        return None
    allocation = status.get("allocation")
    if type(allocation) is not dict or not allocation.keys() <= _ALLOCATION_KEYS:
        return None
    devices = allocation.get("devices")
    if type(devices) is not dict or len(devices) != 1 or "results" not in devices:
        return None
    results = devices["results"]
    if type(results) is not list or len(results) > ALLOCATION_RESULTS_MAX:
        return None
    names = _request_names(spec.get("devices"))
    copied = []
    for r in results:  # (a loop: no comprehension's frame; the first result refused ends it)
        result = _result(r, names, strict)
        if result is None:
            return None
        copied.append(result)
    out_allocation: dict[str, Any] = {}
    for key, value in allocation.items():  # the sent order kept, as the walk's copy keeps it
        if key == "devices":
            out_allocation[key] = {"results": copied}
        else:
            selector = _node_selector(value, strict)
            if selector is None:
                return None
            out_allocation[key] = selector
    out: dict[str, Any] = {}
    for key, value in status.items():
        if key == "allocation":
            out[key] = out_allocation
        else:
            consumers = _consumers(value)
            if consumers is None:
                return None
            out[key] = consumers
    proven_count += 1
    return out
