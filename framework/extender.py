"""HTTP scheduler extenders: the contract and the pure combination logic.

Mirrors kube-scheduler's framework.Extender interface (framework/extender.go),
the extender/v1 wire types and the parts of schedule_one.go that combine
extenders with plugins (findNodesThatPassExtenders, the extender half of
prioritizeNodes, extendersBinding) and of preemption that call them
(callExtenders, convertToMetaVictims / convertToVictims).

Nothing here does I/O: an `Extender` is anything with the async methods below;
the HTTP one (actors/extenders.py) posts JSON with aiohttp. The functions that
await extenders run them in upstream's order and apply upstream's rules
(interest, ignorable, failedAndUnresolvable over failed, score scaling).
"""
from __future__ import annotations

import asyncio
import base64
import binascii
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Protocol, Sequence

from framework.api.objects import Pod
from framework.api.resources import is_extended_resource_name
from framework.api.validation import is_qualified_name
from framework.interface import MAX_NODE_SCORE, Code, NodePluginScores, NodeToStatus, Status

# extender/v1 MaxExtenderPriority: extenders score 0..10; the scheduler scales by
# MaxNodeScore / MaxExtenderPriority.
MAX_EXTENDER_PRIORITY = 10
# The pseudo-plugin put among a FitError's unschedulable plugins when extenders
# dropped nodes (upstream's framework.ExtenderName).
EXTENDER_NAME = "Extender"
DEFAULT_EXTENDER_TIMEOUT_SECONDS = 5.0  # upstream's DefaultExtenderTimeout


class ExtenderConfigError(ValueError):
    """An invalid `extenders` entry; the text is upstream's field error."""


@dataclass(frozen=True, slots=True)
class ManagedResource:
    name: str
    ignored_by_scheduler: bool = False


@dataclass(frozen=True, slots=True)
class TLSConfig:
    insecure: bool = False
    server_name: str = ""
    cert_file: str = ""
    key_file: str = ""
    ca_file: str = ""
    cert_data: str = ""  # PEM (decoded from the config's base64)
    key_data: str = ""
    ca_data: str = ""


@dataclass(frozen=True, slots=True)
class ExtenderConfig:
    """One KubeSchedulerConfiguration `extenders[]` item (upstream's field names)."""

    url_prefix: str
    filter_verb: str = ""
    preempt_verb: str = ""
    prioritize_verb: str = ""
    bind_verb: str = ""
    weight: int = 0
    enable_https: bool = False
    tls_config: TLSConfig | None = None
    http_timeout_seconds: float = DEFAULT_EXTENDER_TIMEOUT_SECONDS
    node_cache_capable: bool = False
    managed_resources: tuple[ManagedResource, ...] = ()
    ignorable: bool = False

    @property
    def name(self) -> str:
        return self.url_prefix  # upstream's HTTPExtender.Name()

    def is_filter(self) -> bool:
        return bool(self.filter_verb)

    def is_prioritizer(self) -> bool:
        return bool(self.prioritize_verb)

    def is_binder(self) -> bool:
        return bool(self.bind_verb)

    def supports_preemption(self) -> bool:
        return bool(self.preempt_verb)

    def is_interested(self, pod: Pod) -> bool:
        return pod_requests_managed_resource(pod, {r.name for r in self.managed_resources})


def pod_requests_managed_resource(pod: Pod, managed: set[str] | frozenset[str]) -> bool:
    """HTTPExtender.IsInterested: no managed resources means every pod; otherwise a
    container or init container names one in its requests or limits."""
    if not managed:
        return True
    spec = pod.raw.get("spec") or {}
    for key in ("containers", "initContainers"):
        for c in spec.get(key) or []:
            res = (c or {}).get("resources") or {}
            for part in ("requests", "limits"):
                if any(name in managed for name in res.get(part) or {}):
                    return True
    return False


# --- configuration -----------------------------------------------------------------------------

_FIELDS = {
    "urlPrefix", "filterVerb", "preemptVerb", "prioritizeVerb", "bindVerb", "weight", "enableHTTPS",
    "tlsConfig", "httpTimeout", "nodeCacheCapable", "managedResources", "ignorable",
}
_TLS_FIELDS = {"insecure": "insecure", "serverName": "server_name", "certFile": "cert_file", "keyFile": "key_file",
               "caFile": "ca_file", "certData": "cert_data", "keyData": "key_data", "caData": "ca_data"}


def _invalid(path: str, value: Any, detail: str) -> ExtenderConfigError:
    shown = f'"{value}"' if isinstance(value, str) else str(value).lower() if isinstance(value, bool) else value
    return ExtenderConfigError(f"{path}: Invalid value: {shown}: {detail}")


_TYPE_NAMES = {str: "a string", bool: "true or false", int: "an integer"}


def _typed(raw: Mapping[str, Any], key: str, typ: type, path: str, default: Any) -> Any:
    v = raw.get(key)
    if v is None:
        return default
    if not isinstance(v, typ) or (typ is not bool and isinstance(v, bool)):
        raise _invalid(f"{path}.{key}", v, f"must be {_TYPE_NAMES[typ]}")
    return v


def parse_duration_seconds(value: Any, path: str) -> float:
    """A metav1.Duration ("30s", "1m30s", "500ms") or a number of seconds."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if value < 0:
            raise _invalid(path, value, "must not be negative")
        return float(value)
    if value == "0":
        return 0.0  # Go's ParseDuration takes a bare 0
    if not isinstance(value, str) or not value:
        raise _invalid(path, value, 'must be a duration such as "5s" or "1m30s"')
    units = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}
    total, i, s = 0.0, 0, value
    while i < len(s):
        j = i
        while j < len(s) and (s[j].isdigit() or s[j] == "."):
            j += 1
        k = j
        while k < len(s) and not (s[k].isdigit() or s[k] == "."):
            k += 1
        num, unit = s[i:j], s[j:k]
        if not num or unit not in units:
            raise _invalid(path, value, 'must be a duration such as "5s" or "1m30s"')
        try:
            total += float(num) * units[unit]
        except ValueError:
            raise _invalid(path, value, 'must be a duration such as "5s" or "1m30s"') from None
        i = k
    return total


def _pem_from_base64(value: str, path: str) -> str:
    """certData/keyData/caData are []byte upstream: base64 in YAML, PEM inside."""
    try:
        return base64.b64decode(value, validate=True).decode("ascii")
    except (binascii.Error, UnicodeDecodeError):
        raise _invalid(path, "<data>", "must be base64-encoded PEM data") from None


def parse_extenders(raw: object) -> list[ExtenderConfig]:
    """KubeSchedulerConfiguration.extenders with upstream's validation
    (validateExtenders); the first error is raised, naming its field."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise ExtenderConfigError("extenders: must be a list")
    out = [_parse_one(item, f"extenders[{i}]") for i, item in enumerate(raw)]
    seen: set[str] = set()
    for i, ext in enumerate(out):
        if ext.prioritize_verb and ext.weight <= 0:
            raise _invalid(f"extenders[{i}].weight", ext.weight, "must have a positive weight applied to it")
        for j, res in enumerate(ext.managed_resources):
            path = f"extenders[{i}].managedResources[{j}].name"
            errors = is_qualified_name(res.name)
            if errors:
                raise _invalid(path, res.name, errors[0])
            if not is_extended_resource_name(res.name):
                raise _invalid(path, res.name, "is an invalid extended resource name")
            if res.name in seen:
                raise _invalid(path, res.name, "duplicate extender managed resource name")
            seen.add(res.name)
    binders = sum(1 for e in out if e.is_binder())
    if binders > 1:
        raise _invalid("extenders", f"found {binders} extenders implementing bind", "only one extender can implement bind")
    return out


def _parse_one(item: object, path: str) -> ExtenderConfig:
    if not isinstance(item, Mapping):
        raise ExtenderConfigError(f"{path}: must be an object")
    unknown = sorted(set(item) - _FIELDS)
    if unknown:
        raise ExtenderConfigError(f"{path}.{unknown[0]}: unknown field")
    url = _typed(item, "urlPrefix", str, path, "")
    if not url:
        raise ExtenderConfigError(f"{path}.urlPrefix: Required value")
    enable_https = _typed(item, "enableHTTPS", bool, path, False)
    scheme = url.split("://", 1)[0] if "://" in url else ""
    if scheme not in ("http", "https"):
        raise _invalid(f"{path}.urlPrefix", url, "must be an http:// or https:// URL")
    weight = item.get("weight", 0)
    if isinstance(weight, bool) or not isinstance(weight, int):
        raise _invalid(f"{path}.weight", weight, "must be an integer")
    timeout = DEFAULT_EXTENDER_TIMEOUT_SECONDS
    if item.get("httpTimeout") is not None:
        timeout = parse_duration_seconds(item["httpTimeout"], f"{path}.httpTimeout")
        if timeout == 0:
            timeout = DEFAULT_EXTENDER_TIMEOUT_SECONDS  # upstream: zero means the default
    tls = None
    if item.get("tlsConfig") is not None:
        raw_tls = item["tlsConfig"]
        if not isinstance(raw_tls, Mapping):
            raise ExtenderConfigError(f"{path}.tlsConfig: must be an object")
        bad = sorted(set(raw_tls) - set(_TLS_FIELDS))
        if bad:
            raise ExtenderConfigError(f"{path}.tlsConfig.{bad[0]}: unknown field")
        kw = {}
        for key, attr in _TLS_FIELDS.items():
            kw[attr] = _typed(raw_tls, key, bool if key == "insecure" else str, f"{path}.tlsConfig",
                              False if key == "insecure" else "")
            if key.endswith("Data") and kw[attr]:
                kw[attr] = _pem_from_base64(kw[attr], f"{path}.tlsConfig.{key}")
        tls = TLSConfig(**kw)
    managed: list[ManagedResource] = []
    raw_managed = item.get("managedResources") or []
    if not isinstance(raw_managed, list):
        raise ExtenderConfigError(f"{path}.managedResources: must be a list")
    for j, r in enumerate(raw_managed):
        rp = f"{path}.managedResources[{j}]"
        if not isinstance(r, Mapping) or not isinstance(r.get("name"), str):
            raise ExtenderConfigError(f"{rp}.name: Required value")
        managed.append(ManagedResource(r["name"], bool(_typed(r, "ignoredByScheduler", bool, rp, False))))
    return ExtenderConfig(
        url_prefix=url,
        filter_verb=_typed(item, "filterVerb", str, path, ""),
        preempt_verb=_typed(item, "preemptVerb", str, path, ""),
        prioritize_verb=_typed(item, "prioritizeVerb", str, path, ""),
        bind_verb=_typed(item, "bindVerb", str, path, ""),
        weight=weight,
        enable_https=enable_https,
        tls_config=tls,
        http_timeout_seconds=timeout,
        node_cache_capable=_typed(item, "nodeCacheCapable", bool, path, False),
        managed_resources=tuple(managed),
        ignorable=_typed(item, "ignorable", bool, path, False),
    )


def ignored_by_scheduler(extenders: Sequence[ExtenderConfig]) -> list[str]:
    """Resources NodeResourcesFit must not check (upstream's buildExtenders)."""
    return [r.name for e in extenders for r in e.managed_resources if r.ignored_by_scheduler]


# --- the contract ------------------------------------------------------------------------------

@dataclass(slots=True)
class FilterResult:
    """ExtenderFilterResult, reduced to names: the nodes kept (in the extender's
    order), and node -> message for the failed and the failed-and-unresolvable."""

    nodes: list[str]
    failed: dict[str, str] = field(default_factory=dict)
    failed_and_unresolvable: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class Victims:
    """extender/v1 Victims: the pods to evict on one node."""

    pods: list[Pod]
    num_pdb_violations: int = 0


class ExtenderError(Exception):
    """An extender call failed: transport, HTTP status, timeout or its own `error`."""


class Extender(Protocol):
    """What the scheduler calls (upstream's framework.Extender). Every async method
    may raise ExtenderError; the callers below decide what an error means. They
    are called from the scheduling actor one pod at a time, except `bind`, which
    binding cycles may call for many pods at once."""

    config: ExtenderConfig

    @property
    def name(self) -> str: ...

    def is_interested(self, pod: Pod) -> bool: ...

    async def filter(self, pod: Pod, nodes: Sequence[Any]) -> FilterResult: ...

    async def prioritize(self, pod: Pod, nodes: Sequence[Any]) -> dict[str, int]: ...

    async def bind(self, pod: Pod, node_name: str) -> None: ...

    async def process_preemption(self, pod: Pod, victims: dict[str, Victims],
                                 pods_on_node: Mapping[str, Sequence[Pod]]) -> dict[str, Victims]: ...


# --- combination (schedule_one.go) --------------------------------------------------------------

def apply_filter_result(result: FilterResult, statuses: NodeToStatus) -> None:
    """Record an extender's rejections: failedAndUnresolvable first, and a node in
    both maps keeps its unresolvable status. Statuses carry no plugin name."""
    for node, msg in result.failed_and_unresolvable.items():
        statuses.set(node, Status(Code.UnschedulableAndUnresolvable, msg))
    for node, msg in result.failed.items():
        if node not in result.failed_and_unresolvable:
            statuses.set(node, Status(Code.Unschedulable, msg))


# (extender, its answer or its ExtenderError, the nodes it was asked about)
ExtenderTrace = Callable[[Any, Any, Sequence[Any]], None]


async def find_nodes_that_pass_extenders(extenders: Sequence[Extender], pod: Pod, feasible: list[Any],
                                         statuses: NodeToStatus, trace: ExtenderTrace | None = None) -> list[Any]:
    """Filter extenders in order, each narrowing the feasible nodes (NodeInfos or
    anything with `.name`). An ignorable extender's error is skipped; another's is
    raised (ExtenderError) and fails the attempt. `trace` (explain) is told each
    extender's answer or error, with the nodes it was asked about."""
    for ext in extenders:
        if not feasible:
            break
        if not ext.config.is_filter() or not ext.is_interested(pod):
            continue
        try:
            result = await ext.filter(pod, feasible)
        except ExtenderError as e:
            if trace is not None:
                trace(ext, e, feasible)
            if ext.config.ignorable:
                continue
            raise
        if trace is not None:
            trace(ext, result, feasible)
        apply_filter_result(result, statuses)
        by_name = {n.name: n for n in feasible}
        kept = []
        for name in result.nodes:
            if name not in by_name:
                raise ExtenderError(f"extender {ext.name!r} claims a filtered node {name!r} which is not found in the input node list")
            kept.append(by_name[name])
        feasible = kept
    return feasible


def scaled_extender_score(score: int, weight: int) -> int:
    return score * weight * (MAX_NODE_SCORE // MAX_EXTENDER_PRIORITY)


async def add_extender_scores(extenders: Sequence[Extender], pod: Pod, nodes: Sequence[Any],
                              scores: list[NodePluginScores], trace: ExtenderTrace | None = None) -> None:
    """Every interested prioritizing extender scores the nodes at once; a failing
    one adds nothing. Each score is scaled by weight * MaxNodeScore/MaxExtenderPriority
    and added to the node's plugin scores under the extender's name. `trace`
    (explain) is told each extender's scores or error."""
    callers = [e for e in extenders if e.config.is_prioritizer() and e.is_interested(pod)]
    if not callers:
        return
    results = await asyncio.gather(*(e.prioritize(pod, nodes) for e in callers), return_exceptions=True)
    by_name = {s.name: s for s in scores}
    for ext, res in zip(callers, results):
        if isinstance(res, BaseException):
            if not isinstance(res, (ExtenderError, asyncio.TimeoutError)):
                raise res
            if trace is not None:
                trace(ext, res, nodes)
            continue
        if trace is not None:
            trace(ext, res, nodes)
        for node, score in res.items():
            ns = by_name.get(node)
            if ns is None:
                continue
            final = scaled_extender_score(score, ext.config.weight)
            ns.scores.append((ext.name, final))
            ns.total_score += final


async def extenders_binding(extenders: Sequence[Extender], pod: Pod, node_name: str) -> tuple[bool, Status]:
    """The first interested binder binds (an ignorable one that fails is skipped).
    Returns (an extender took the bind, its status)."""
    for ext in extenders:
        if not ext.config.is_binder() or not ext.is_interested(pod):
            continue
        try:
            await ext.bind(pod, node_name)
        except ExtenderError as e:
            if ext.config.ignorable:
                continue
            return True, Status(Code.Error, str(e))
        return True, Status()
    return False, Status()


async def call_preemption_extenders(extenders: Sequence[Extender], pod: Pod, victims: dict[str, Victims],
                                    pods_on_node: Mapping[str, Sequence[Pod]]) -> dict[str, Victims]:
    """Preemption's callExtenders: each interested preempting extender may narrow
    the candidate nodes and their victims; an empty answer ends the narrowing. An
    ignorable extender's error is skipped, and a node it left without victims
    dropped; another's is raised (ExtenderError)."""
    for ext in extenders:
        if not victims:
            break
        if not ext.config.supports_preemption() or not ext.is_interested(pod):
            continue
        try:
            narrowed = await ext.process_preemption(pod, victims, pods_on_node)
        except ExtenderError:
            if ext.config.ignorable:
                continue
            raise
        for node, v in list(narrowed.items()):
            if not v.pods:
                if not ext.config.ignorable:
                    raise ExtenderError(f'expected at least one victim pod on node "{node}"')
                del narrowed[node]
        victims = narrowed
    return victims


# --- preemption wire conversions (extender.go) ---------------------------------------------------

def convert_to_meta_victims(victims: Mapping[str, Victims]) -> dict[str, dict[str, Any]]:
    return {node: {"pods": [{"uid": p.meta.uid} for p in v.pods], "numPDBViolations": v.num_pdb_violations}
            for node, v in victims.items()}


def convert_to_victims(meta: Mapping[str, Any], pods_on_node: Mapping[str, Sequence[Pod]], extender: str) -> dict[str, Victims]:
    """MetaVictims (UIDs) back to pods on each node; a UID not on its node is an
    ExtenderError (the extender's cache disagrees with ours)."""
    out: dict[str, Victims] = {}
    for node, mv in (meta or {}).items():
        if node not in pods_on_node:
            raise ExtenderError(f'node "{node}" not found')
        by_uid = {p.meta.uid: p for p in pods_on_node[node]}
        pods = []
        for mp in (mv or {}).get("pods") or []:
            uid = (mp or {}).get("uid", "")
            if uid not in by_uid:
                raise ExtenderError(f"extender: {extender} claims to preempt pod (UID: {uid}) on node: {node}, "
                                    "but the pod is not found on that node")
            pods.append(by_uid[uid])
        out[node] = Victims(pods, int((mv or {}).get("numPDBViolations") or 0))
    return out
