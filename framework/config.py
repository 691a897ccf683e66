"""KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1): loading, upstream's
defaults and plugin-set merging, validation, and building one Framework per profile.

Errors name the profile, the plugin and the field:
`profiles[0] (default-scheduler): plugins.score.enabled[1] (NodeAffinity): weight: must be ...`.
"""
from __future__ import annotations

import importlib
import importlib.metadata
from dataclasses import dataclass, field
from typing import Any, Mapping

import yaml

from framework.api.errors import ValidationError
from framework.api.objects import DEFAULT_SCHEDULER_NAME
from framework.extender import ExtenderConfig, ExtenderConfigError, ignored_by_scheduler, parse_extenders
from framework.features import ALL_ALPHA, ALL_BETA, KNOWN as KNOWN_GATES, FeatureGates
from framework.interface import MAX_NODE_SCORE, MAX_TOTAL_SCORE
from framework.plugins import Registry, in_tree_registry
from framework.runtime import EXTENSION_POINTS, POINT_METHODS, Framework

API_VERSION = "kubescheduler.config.k8s.io/v1"
KIND = "KubeSchedulerConfiguration"


class ConfigError(ValueError):
    """A configuration that cannot be used; the text names where it is wrong."""


# Upstream's default plugins (v1 getDefaultPlugins), all enabled through multiPoint.
# DynamicResources sits before DefaultPreemption (applyFeatureGates with DynamicResourceAllocation,
# GA): deallocating an idle claim is tried before evicting pods.
DEFAULT_MULTIPOINT: list[tuple[str, int | None]] = [
    ("SchedulingGates", None),
    ("PrioritySort", None),
    ("NodeUnschedulable", None),
    ("NodeName", None),
    ("TaintToleration", 3),
    ("NodeAffinity", 2),
    ("NodePorts", None),
    ("NodeResourcesFit", 1),
    ("VolumeRestrictions", None),
    ("NodeVolumeLimits", None),
    ("VolumeBinding", None),
    ("VolumeZone", None),
    ("PodTopologySpread", 2),
    ("InterPodAffinity", 2),
    ("DynamicResources", None),
    ("DefaultPreemption", None),
    ("NodeResourcesBalancedAllocation", 1),
    ("ImageLocality", 1),
    ("DefaultBinder", None),
]

# What upstream's applyFeatureGates appends to the defaults while a gate is on (gate,
# plugin). GangScheduling's own gate is merged into GenericWorkload (KEP-4671, 1.37).
GATED_DEFAULT_MULTIPOINT: list[tuple[str, str]] = [("GenericWorkload", "GangScheduling")]

_PLUGIN_SET_POINTS = ("multiPoint",) + EXTENSION_POINTS
_TOP_LEVEL = {
    "apiVersion", "kind", "profiles", "extenders", "percentageOfNodesToScore", "podInitialBackoffSeconds",
    "podMaxBackoffSeconds", "parallelism", "featureGates",
}
# Fields of upstream's file that concern a Kubernetes control plane ksched does not have.
_ACCEPTED_NOT_APPLICABLE = {"leaderElection", "clientConnection", "debuggingConfiguration", "delayCacheUntilActive"}


@dataclass
class PluginRef:
    name: str
    weight: int | None = None


@dataclass
class PluginSet:
    enabled: list[PluginRef] = field(default_factory=list)
    disabled: list[str] = field(default_factory=list)


@dataclass
class ProfileConfig:
    scheduler_name: str = DEFAULT_SCHEDULER_NAME
    plugins: dict[str, PluginSet] = field(default_factory=dict)
    plugin_config: dict[str, dict[str, Any] | None] = field(default_factory=dict)
    percentage_of_nodes_to_score: int | None = None
    # Classes loaded from "pkg.module:Class" names (the names are rewritten to the
    # plugins' own), so building the frameworks again registers them again.
    out_of_tree: list[Any] = field(default_factory=list)


@dataclass
class SchedulerConfig:
    profiles: list[ProfileConfig] = field(default_factory=lambda: [ProfileConfig()])
    percentage_of_nodes_to_score: int | None = None
    pod_initial_backoff_seconds: int = 1
    pod_max_backoff_seconds: int = 10
    parallelism: int = 16
    extenders: list[ExtenderConfig] = field(default_factory=list)
    feature_gates: dict[str, bool] = field(default_factory=dict)
    not_applicable: list[str] = field(default_factory=list)


def _int_field(raw: Mapping[str, Any], key: str, where: str, lo: int | None = None, hi: int | None = None) -> int | None:
    v = raw.get(key)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int):
        raise ConfigError(f"{where}{key}: must be an integer")
    if lo is not None and v < lo or hi is not None and v > hi:
        raise ConfigError(f"{where}{key}: must be in the range [{lo}, {hi}]" if hi is not None else f"{where}{key}: must be at least {lo}")
    return v


def _plugin_set(raw: object, where: str) -> PluginSet:
    if raw is None:
        return PluginSet()
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{where}: must be an object with enabled/disabled")
    unknown = set(raw) - {"enabled", "disabled"}
    if unknown:
        raise ConfigError(f"{where}: unknown field {sorted(unknown)[0]!r}")
    ps = PluginSet()
    for key in ("enabled", "disabled"):
        items = raw.get(key) or []
        if not isinstance(items, list):
            raise ConfigError(f"{where}.{key}: must be a list")
        for i, item in enumerate(items):
            w = f"{where}.{key}[{i}]"
            if not isinstance(item, Mapping) or not isinstance(item.get("name"), str) or not item["name"]:
                raise ConfigError(f"{w}.name: must be a non-empty string")
            if key == "disabled":
                ps.disabled.append(item["name"])
                continue
            weight = item.get("weight")
            if weight is not None and (isinstance(weight, bool) or not isinstance(weight, int)):
                raise ConfigError(f"{w} ({item['name']}).weight: must be an integer")
            ps.enabled.append(PluginRef(item["name"], weight))
    return ps


def _profile(raw: object, i: int) -> ProfileConfig:
    where = f"profiles[{i}]"
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{where}: must be an object")
    unknown = set(raw) - {"schedulerName", "plugins", "pluginConfig", "percentageOfNodesToScore"}
    if unknown:
        raise ConfigError(f"{where}: unknown field {sorted(unknown)[0]!r}")
    name = raw.get("schedulerName", DEFAULT_SCHEDULER_NAME)
    if not isinstance(name, str) or not name:
        raise ConfigError(f"{where}.schedulerName: must be a non-empty string")
    where = f"profiles[{i}] ({name})"
    prof = ProfileConfig(scheduler_name=name)
    prof.percentage_of_nodes_to_score = _int_field(raw, "percentageOfNodesToScore", f"{where}: ", 0, 100)
    plugins = raw.get("plugins") or {}
    if not isinstance(plugins, Mapping):
        raise ConfigError(f"{where}: plugins: must be an object")
    for point, ps in plugins.items():
        if point not in _PLUGIN_SET_POINTS:
            raise ConfigError(f"{where}: plugins.{point}: unknown extension point")
        prof.plugins[point] = _plugin_set(ps, f"{where}: plugins.{point}")
    pcs = raw.get("pluginConfig") or []
    if not isinstance(pcs, list):
        raise ConfigError(f"{where}: pluginConfig: must be a list")
    for j, pc in enumerate(pcs):
        if not isinstance(pc, Mapping) or not isinstance(pc.get("name"), str):
            raise ConfigError(f"{where}: pluginConfig[{j}].name: must be a string")
        if pc["name"] in prof.plugin_config:
            raise ConfigError(f"{where}: pluginConfig[{j}] ({pc['name']}): duplicate configuration")
        args = pc.get("args")
        if args is not None and not isinstance(args, Mapping):
            raise ConfigError(f"{where}: pluginConfig[{j}] ({pc['name']}).args: must be an object")
        prof.plugin_config[pc["name"]] = dict(args) if args is not None else None
    return prof


def load_config(data: Mapping[str, Any] | str | None) -> SchedulerConfig:
    """Parse a KubeSchedulerConfiguration (YAML text or a dict); None gives upstream's defaults."""
    if data is None:
        return SchedulerConfig()
    if isinstance(data, str):
        try:
            data = yaml.safe_load(data) or {}
        except yaml.YAMLError as e:
            raise ConfigError(f"not valid YAML: {e}") from None
    if not isinstance(data, Mapping):
        raise ConfigError("the configuration must be an object")
    api = data.get("apiVersion", API_VERSION)
    if api != API_VERSION:
        raise ConfigError(f"apiVersion: {api!r} is not supported; use {API_VERSION}")
    if data.get("kind", KIND) != KIND:
        raise ConfigError(f"kind: must be {KIND}")
    cfg = SchedulerConfig()
    for key in data:
        if key in _ACCEPTED_NOT_APPLICABLE:
            cfg.not_applicable.append(key)
        elif key not in _TOP_LEVEL:
            raise ConfigError(f"{key}: unknown field")
    cfg.percentage_of_nodes_to_score = _int_field(data, "percentageOfNodesToScore", "", 0, 100)
    init = _int_field(data, "podInitialBackoffSeconds", "", 1)
    mx = _int_field(data, "podMaxBackoffSeconds", "", 1)
    cfg.pod_initial_backoff_seconds = init if init is not None else 1
    cfg.pod_max_backoff_seconds = mx if mx is not None else 10
    if cfg.pod_max_backoff_seconds < cfg.pod_initial_backoff_seconds:
        raise ConfigError("podMaxBackoffSeconds: must be greater than or equal to podInitialBackoffSeconds")
    par = _int_field(data, "parallelism", "", 1)
    cfg.parallelism = par if par is not None else 16
    cfg.feature_gates = _feature_gates(data.get("featureGates"))
    try:
        cfg.extenders = parse_extenders(data.get("extenders"))
    except ExtenderConfigError as e:
        raise ConfigError(str(e)) from None
    profiles = data.get("profiles")
    if profiles is not None:
        if not isinstance(profiles, list) or not profiles:
            raise ConfigError("profiles: must be a non-empty list")
        cfg.profiles = [_profile(p, i) for i, p in enumerate(profiles)]
    names = [p.scheduler_name for p in cfg.profiles]
    for i, n in enumerate(names):
        if n in names[:i]:
            raise ConfigError(f"profiles[{i}].schedulerName: duplicate scheduler name {n!r}")
    _validate_common_queue_sort(cfg.profiles)
    _ignore_extender_resources(cfg)
    return cfg


def _feature_gates(raw: object) -> dict[str, bool]:
    """ksched's top-level `featureGates:` map (kube-scheduler takes them only as the
    --feature-gates flag): every name must be a gate ksched knows, every value a boolean."""
    fg = raw or {}
    if not isinstance(fg, Mapping):
        raise ConfigError("featureGates: must be a map of gate name to true/false")
    for name, on in fg.items():
        if not isinstance(on, bool):
            raise ConfigError(f"featureGates.{name}: must be true or false")
        if name not in KNOWN_GATES and name not in (ALL_ALPHA, ALL_BETA):
            raise ConfigError(f"featureGates.{name}: unrecognized feature gate: {name}")
    return dict(fg)
def _validate_common_queue_sort(profiles: list[ProfileConfig]) -> None:
    """One queue serves every profile, so every profile must sort it alike: the
    queueSort plugin sets as written and that plugin's args must be the same
    (upstream's validateCommonQueueSort)."""
    canon = profiles[0].plugins.get("queueSort", PluginSet())
    name = canon.enabled[0].name if canon.enabled else ""
    args = profiles[0].plugin_config.get(name) if name else None
    for i, prof in enumerate(profiles[1:], start=1):
        curr = prof.plugins.get("queueSort", PluginSet())
        if curr != canon:
            raise ConfigError(f"profiles[{i}].plugins.queueSort: Invalid value: {_show_set(curr)}: "
                              "has to match for all profiles")
        if name and name in prof.plugin_config and prof.plugin_config[name] != args:
            raise ConfigError(f"profiles[{i}].pluginConfig.args: Invalid value: {prof.plugin_config[name]!r}: "
                              "has to match for all profiles")


def _show_set(ps: PluginSet) -> str:
    enabled = ", ".join(r.name if r.weight is None else f"{r.name} (weight {r.weight})" for r in ps.enabled)
    return f"{{enabled: [{enabled}], disabled: [{', '.join(ps.disabled)}]}}"


def _ignore_extender_resources(cfg: SchedulerConfig) -> None:
    """Extenders' resources marked ignoredByScheduler become NodeResourcesFit's
    ignoredResources in every profile (upstream's buildExtenders sets the list)."""
    ignored = ignored_by_scheduler(cfg.extenders)
    if not ignored:
        return
    for prof in cfg.profiles:
        args = dict(prof.plugin_config.get("NodeResourcesFit") or {})
        args["ignoredResources"] = list(ignored)
        prof.plugin_config["NodeResourcesFit"] = args


# --- merging with defaults (upstream v1 mergePlugins / mergePluginSet) -----------------------

def _merge_plugin_set(default: PluginSet, custom: PluginSet) -> PluginSet:
    disabled = list(custom.disabled) + list(default.disabled)
    disabled_set = set(disabled)
    custom_index = {p.name: i for i, p in enumerate(custom.enabled)}
    replaced: set[int] = set()
    enabled: list[PluginRef] = []
    if "*" not in disabled_set:
        for p in default.enabled:
            if p.name in disabled_set:
                continue
            if p.name in custom_index:
                idx = custom_index[p.name]
                p = custom.enabled[idx]
                replaced.add(idx)
            enabled.append(p)
    for i, p in enumerate(custom.enabled):
        if i not in replaced:
            enabled.append(p)
    return PluginSet(enabled, disabled)


def merged_plugins(profile: ProfileConfig, gates: FeatureGates | None = None) -> dict[str, PluginSet]:
    """The profile's plugin sets over the defaults; `gates` (upstream's defaults when
    None) decide the gated default plugins."""
    gates = gates if gates is not None else FeatureGates()
    refs = [PluginRef(n, w) for n, w in DEFAULT_MULTIPOINT]
    refs += [PluginRef(name) for gate, name in GATED_DEFAULT_MULTIPOINT if gates.enabled(gate)]
    defaults = {"multiPoint": PluginSet(refs)}
    return {
        point: _merge_plugin_set(defaults.get(point, PluginSet()), profile.plugins.get(point, PluginSet()))
        for point in _PLUGIN_SET_POINTS
    }


# --- registry with out-of-tree plugins -----------------------------------------------------

def _load_class(spec: str) -> Any:
    module_name, _, attr = spec.partition(":")
    try:
        module = importlib.import_module(module_name)
        return getattr(module, attr)
    except (ImportError, AttributeError) as e:
        raise ConfigError(f"plugin {spec!r} cannot be loaded: {e}") from None


def entry_point_registry() -> Registry:
    reg = Registry()
    for ep in importlib.metadata.entry_points(group="ksched.plugins"):
        obj = ep.load()
        for cls in obj if isinstance(obj, (list, tuple)) else [obj]:
            reg.register_class(cls)
    return reg


def full_registry(extra: Registry | None = None) -> Registry:
    reg = in_tree_registry().merged(entry_point_registry())
    return reg.merged(extra) if extra else reg


# --- building frameworks ---------------------------------------------------------------------

def build_frameworks(cfg: SchedulerConfig, handle: Any, registry: Registry | None = None) -> dict[str, Framework]:
    """One Framework per profile, keyed by schedulerName. Raises ConfigError."""
    reg = Registry(registry) if registry is not None else full_registry()
    out: dict[str, Framework] = {}
    first: tuple[str, Any] | None = None
    for i, prof in enumerate(cfg.profiles):
        where = f"profiles[{i}] ({prof.scheduler_name})"
        _import_out_of_tree(prof, reg)
        fw = out[prof.scheduler_name] = _build_profile(prof, where, cfg, handle, reg)
        # The sort in effect (multiPoint included) must be one for all (upstream's profile.NewMap).
        sort = fw.queue_sort_plugin.name
        sort_args = prof.plugin_config.get(sort)
        if first is None:
            first = (sort, sort_args)
        elif sort != first[0]:
            raise ConfigError(f'different queue sort plugins for profile "{prof.scheduler_name}": '
                              f'"{sort}", first: "{first[0]}"')
        elif sort_args != first[1]:
            raise ConfigError(f'different queue sort plugin args for profile "{prof.scheduler_name}"')
    return out


def _import_out_of_tree(prof: ProfileConfig, reg: Registry) -> None:
    """Names like "pkg.module:Class" load that class and stand for its `name`."""
    for ps in prof.plugins.values():
        for ref in ps.enabled:
            if ":" in ref.name:
                prof.out_of_tree.append(_load_class(ref.name))
                ref.name = prof.out_of_tree[-1].name
    for cls in prof.out_of_tree:
        if cls.name not in reg:
            reg.register_class(cls)
        ps.disabled = [_load_class(n).name if ":" in n else n for n in ps.disabled]
    for key in [k for k in prof.plugin_config if ":" in k]:
        prof.plugin_config[_load_class(key).name] = prof.plugin_config.pop(key)


def _build_profile(prof: ProfileConfig, where: str, cfg: SchedulerConfig, handle: Any, reg: Registry) -> Framework:
    sets = merged_plugins(prof, FeatureGates(cfg.feature_gates))
    needed: list[str] = []
    for ps in sets.values():
        for ref in ps.enabled:
            if ref.name not in needed:
                needed.append(ref.name)
    for name in prof.plugin_config:
        if name not in reg:
            raise ConfigError(f"{where}: pluginConfig ({name}): no plugin named {name!r} is registered")
    instances: dict[str, Any] = {}
    for name in needed:
        factory = reg.get(name)
        if factory is None:
            raise ConfigError(f"{where}: plugin {name!r} is not registered")
        try:
            instances[name] = factory(prof.plugin_config.get(name), handle)
        except ValidationError as e:
            raise ConfigError(f"{where}: pluginConfig ({name}).args.{e.field}: {e.detail}" if e.field
                              else f"{where}: pluginConfig ({name}).args: {e.detail}") from None
    # Args for registered plugins that are not enabled are still validated.
    for name, args in prof.plugin_config.items():
        if name not in instances:
            try:
                reg[name](args, handle)
            except ValidationError as e:
                raise ConfigError(f"{where}: pluginConfig ({name}).args.{e.field}: {e.detail}") from None

    points: dict[str, list[str]] = {}
    for point in EXTENSION_POINTS:
        ps = sets[point]
        method = POINT_METHODS[point]
        explicit: list[str] = []
        for ref in ps.enabled:
            if not hasattr(instances[ref.name], method):
                raise ConfigError(f"{where}: plugins.{point}: plugin {ref.name!r} does not implement {point}")
            if ref.name in explicit:
                raise ConfigError(f"{where}: plugins.{point}: plugin {ref.name!r} is enabled twice")
            explicit.append(ref.name)
        points[point] = _expand_multipoint(explicit, sets["multiPoint"], ps, instances, method, where, point)

    if len(points["queueSort"]) != 1:
        raise ConfigError(f"{where}: exactly one queueSort plugin is required, got {len(points['queueSort'])}")
    if not points["bind"]:
        raise ConfigError(f"{where}: at least one bind plugin is required")
    weights = _score_weights(sets["score"].enabled + sets["multiPoint"].enabled, points["score"], where)
    pct = prof.percentage_of_nodes_to_score
    return Framework(prof.scheduler_name, instances, points, weights, handle,
                     pct if pct is not None else None)


def _expand_multipoint(
    explicit: list[str], multi: PluginSet, ps: PluginSet, instances: dict[str, Any], method: str, where: str, point: str
) -> list[str]:
    """Upstream's expandMultiPointPlugins: explicit re-configurations first, then
    multiPoint plugins implementing this point, then the other explicit ones."""
    disabled = set(ps.disabled)
    if "*" in disabled:
        return explicit
    overrides: list[str] = []
    from_multi: list[str] = []
    for ref in multi.enabled:
        pl = instances[ref.name]
        if not hasattr(pl, method) or ref.name in disabled:
            continue
        if ref.name in explicit:
            overrides.append(ref.name)
            continue
        if ref.name in from_multi:
            raise ConfigError(f"{where}: plugins.multiPoint: plugin {ref.name!r} already registered at {point}")
        from_multi.append(ref.name)
    head = [n for n in explicit if n in overrides]
    tail = [n for n in explicit if n not in overrides]
    return head + from_multi + tail


def _score_weights(refs: list[PluginRef], score_plugins: list[str], where: str) -> dict[str, int]:
    weights: dict[str, int] = {}
    total = 0
    for ref in refs:
        if ref.name not in score_plugins or ref.name in weights:
            continue
        if ref.weight is not None and ref.weight <= 0:
            raise ConfigError(f"{where}: plugin {ref.name!r}: weight: must be a positive integer (disable the plugin instead of weighting it 0)")
        w = ref.weight if ref.weight is not None else 1
        if w * MAX_NODE_SCORE > MAX_TOTAL_SCORE - total:
            raise ConfigError(f"{where}: plugin {ref.name!r}: weight: total score of Score plugins could overflow")
        total += w * MAX_NODE_SCORE
        weights[ref.name] = w
    for name in score_plugins:
        weights.setdefault(name, 1)
    return weights
