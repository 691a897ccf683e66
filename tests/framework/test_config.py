import pytest

from framework.config import DEFAULT_MULTIPOINT, ConfigError, build_frameworks, load_config, merged_plugins
from framework.features import FeatureGates
from framework.handle import FrameworkHandle
from framework.plugins import Registry
from tests.framework.fakes import BindFake, FilterFake, ScoreFake, SortFake


class Sort(SortFake):
    name = "PrioritySort"

    @classmethod
    def new(cls, args, handle):
        return cls()


def registry(*extra):
    reg = Registry()
    reg.register("PrioritySort", Sort.new)
    reg.register("DefaultBinder", lambda a, h: BindFake("DefaultBinder"))
    reg.register("FilterA", lambda a, h: FilterFake("FilterA"))
    reg.register("ScoreA", lambda a, h: ScoreFake("ScoreA", {}))
    reg.register("ScoreB", lambda a, h: ScoreFake("ScoreB", {}))
    for name, f in extra:
        reg.register(name, f)
    return reg


MINIMAL = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
percentageOfNodesToScore: 30
podInitialBackoffSeconds: 2
podMaxBackoffSeconds: 20
profiles:
- schedulerName: custom
  percentageOfNodesToScore: 60
  plugins:
    multiPoint:
      disabled: [{name: "*"}]
      enabled: [{name: PrioritySort}, {name: DefaultBinder}, {name: ScoreA, weight: 5}, {name: FilterA}]
    score:
      enabled: [{name: ScoreB, weight: 2}]
"""


def test_a_v1_file_is_read_with_its_profiles_weights_and_percentages():
    cfg = load_config(MINIMAL)
    assert cfg.percentage_of_nodes_to_score == 30
    assert (cfg.pod_initial_backoff_seconds, cfg.pod_max_backoff_seconds) == (2, 20)
    fwk = build_frameworks(cfg, FrameworkHandle(), registry())["custom"]
    assert fwk.percentage_of_nodes_to_score == 60
    assert fwk.points["score"] == ["ScoreA", "ScoreB"]
    assert fwk.score_weights == {"ScoreA": 5, "ScoreB": 2}
    assert fwk.points["filter"] == ["FilterA"]
    assert fwk.points["queueSort"] == ["PrioritySort"]


UPSTREAM_DEFAULTS = [  # kube-scheduler v1 getDefaultPlugins, DynamicResources before DefaultPreemption (DRA GA)
    ("SchedulingGates", None), ("PrioritySort", None), ("NodeUnschedulable", None), ("NodeName", None),
    ("TaintToleration", 3), ("NodeAffinity", 2), ("NodePorts", None), ("NodeResourcesFit", 1),
    ("VolumeRestrictions", None), ("NodeVolumeLimits", None), ("VolumeBinding", None), ("VolumeZone", None),
    ("PodTopologySpread", 2), ("InterPodAffinity", 2), ("DynamicResources", None), ("DefaultPreemption", None),
    ("NodeResourcesBalancedAllocation", 1), ("ImageLocality", 1), ("DefaultBinder", None),
]


def test_with_no_file_the_default_profile_is_upstreams_multipoint_list():
    cfg = load_config(None)
    sets = merged_plugins(cfg.profiles[0])
    # GangScheduling is upstream's gated default (applyFeatureGates), on with GenericWorkload.
    assert [(p.name, p.weight) for p in sets["multiPoint"].enabled] == [*UPSTREAM_DEFAULTS, ("GangScheduling", None)]


def test_gang_scheduling_leaves_the_default_profile_when_generic_workload_is_off():
    cfg = load_config({"featureGates": {"GenericWorkload": False}})
    fwk = build_frameworks(cfg, FrameworkHandle())["default-scheduler"]
    assert "GangScheduling" not in fwk.points["preEnqueue"] + fwk.points["permit"]
    assert [p.name for p in merged_plugins(cfg.profiles[0], FeatureGates(cfg.feature_gates))["multiPoint"].enabled] == [
        n for n, _ in UPSTREAM_DEFAULTS]


def test_the_default_profile_builds_with_upstreams_points_and_weights():
    fwk = build_frameworks(load_config(None), FrameworkHandle())["default-scheduler"]
    assert fwk.points["queueSort"] == ["PrioritySort"]
    # DefaultPreemption since 1.33, DynamicResources before it (DRA GA); GangScheduling with
    # GenericWorkload (on in ksched), appended as upstream's applyFeatureGates does
    assert fwk.points["preEnqueue"] == ["SchedulingGates", "DynamicResources", "DefaultPreemption", "GangScheduling"]
    assert fwk.points["reserve"] == ["VolumeBinding", "DynamicResources", "GangScheduling"]
    assert fwk.points["permit"] == ["GangScheduling"]
    assert fwk.points["filter"] == [
        "NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity", "NodePorts", "NodeResourcesFit",
        "VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding", "VolumeZone", "PodTopologySpread",
        "InterPodAffinity", "DynamicResources"]
    assert fwk.points["postFilter"] == ["DynamicResources", "DefaultPreemption", "GangScheduling"]
    assert fwk.score_weights == {"TaintToleration": 3, "NodeAffinity": 2, "NodeResourcesFit": 1,
                                 "PodTopologySpread": 2, "InterPodAffinity": 2,
                                 "NodeResourcesBalancedAllocation": 1, "ImageLocality": 1, "VolumeBinding": 1,
                                 "DynamicResources": 1}
    assert fwk.points["bind"] == ["DefaultBinder"]


def test_plugins_registered_through_the_entry_point_group_are_found(tmp_path, monkeypatch):
    import sys

    from framework.config import full_registry

    dist = tmp_path / "ksched_test_plugins-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: ksched-test-plugins\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[ksched.plugins]\nalways_no = tests.framework.out_of_tree:AlwaysNo\n")
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])
    assert "AlwaysNo" in full_registry()


def test_explicitly_configured_default_plugins_override_in_place():
    cfg = load_config({"profiles": [{"plugins": {"multiPoint": {"enabled": [{"name": "NodeAffinity", "weight": 7}]}}}]})
    sets = merged_plugins(cfg.profiles[0])
    names = [p.name for p in sets["multiPoint"].enabled]
    assert names.index("NodeAffinity") == [n for n, _ in DEFAULT_MULTIPOINT].index("NodeAffinity")
    assert [p.weight for p in sets["multiPoint"].enabled if p.name == "NodeAffinity"] == [7]


@pytest.mark.parametrize(
    "profile, message",
    [
        ({"plugins": {"multiPoint": {"disabled": [{"name": "*"}]}, "bind": {"enabled": [{"name": "DefaultBinder"}]}}},
         "profiles[0] (default-scheduler): exactly one queueSort plugin is required, got 0"),
        ({"plugins": {"multiPoint": {"disabled": [{"name": "*"}]}, "queueSort": {"enabled": [{"name": "PrioritySort"}]}}},
         "profiles[0] (default-scheduler): at least one bind plugin is required"),
        ({"plugins": {"multiPoint": {"disabled": [{"name": "*"}]}, "queueSort": {"enabled": [{"name": "PrioritySort"}]},
                      "bind": {"enabled": [{"name": "DefaultBinder"}]}, "filter": {"enabled": [{"name": "Nope"}]}}},
         "profiles[0] (default-scheduler): plugin 'Nope' is not registered"),
        ({"plugins": {"multiPoint": {"disabled": [{"name": "*"}]}, "queueSort": {"enabled": [{"name": "PrioritySort"}]},
                      "bind": {"enabled": [{"name": "DefaultBinder"}]}, "score": {"enabled": [{"name": "ScoreA", "weight": 0}]}}},
         "profiles[0] (default-scheduler): plugin 'ScoreA': weight: must be a positive integer"),
        ({"plugins": {"multiPoint": {"disabled": [{"name": "*"}]}, "queueSort": {"enabled": [{"name": "PrioritySort"}]},
                      "bind": {"enabled": [{"name": "DefaultBinder"}]}, "score": {"enabled": [{"name": "FilterA"}]}}},
         "profiles[0] (default-scheduler): plugins.score: plugin 'FilterA' does not implement score"),
    ],
    ids=["no-queue-sort", "no-bind", "unknown-plugin", "zero-weight", "wrong-point"],
)
def test_bad_profiles_are_rejected_naming_profile_and_plugin(profile, message):
    with pytest.raises(ConfigError) as err:
        build_frameworks(load_config({"profiles": [profile]}), FrameworkHandle(), registry())
    assert str(err.value).startswith(message)


@pytest.mark.parametrize(
    "doc, message",
    [
        ({"apiVersion": "kubescheduler.config.k8s.io/v1beta3"}, "apiVersion"),
        ({"percentageOfNodesToScore": 120}, "percentageOfNodesToScore: must be in the range [0, 100]"),
        ({"podInitialBackoffSeconds": 5, "podMaxBackoffSeconds": 2}, "podMaxBackoffSeconds"),
        ({"profiles": [{"plugins": {"filtr": {}}}]}, "profiles[0] (default-scheduler): plugins.filtr: unknown extension point"),
        ({"profiles": [{"schedulerName": "a"}, {"schedulerName": "a"}]}, "profiles[1].schedulerName: duplicate"),
        ({"bogus": 1}, "bogus: unknown field"),
    ],
    ids=["api", "pct", "backoff", "point", "dup", "unknown"],
)
def test_bad_files_are_rejected_naming_the_field(doc, message):
    with pytest.raises(ConfigError) as err:
        load_config(doc)
    assert message in str(err.value)


def test_plugin_args_errors_name_profile_plugin_and_field():
    from framework.api.errors import ValidationError

    def strict(args, handle):
        if args and args.get("level", 0) > 3:
            raise ValidationError("level", "must be at most 3")
        return FilterFake("Strict")

    cfg = load_config({"profiles": [{"pluginConfig": [{"name": "Strict", "args": {"level": 9}}],
                                     "plugins": {"multiPoint": {"disabled": [{"name": "*"}], "enabled": [
                                         {"name": "PrioritySort"}, {"name": "DefaultBinder"}, {"name": "Strict"}]}}}]})
    with pytest.raises(ConfigError, match=r"profiles\[0\] \(default-scheduler\): pluginConfig \(Strict\)\.args\.level: must be at most 3"):
        build_frameworks(cfg, FrameworkHandle(), registry(("Strict", strict)))


def test_out_of_tree_plugins_load_from_module_and_class():
    cfg = load_config({"profiles": [{"plugins": {"multiPoint": {"disabled": [{"name": "*"}], "enabled": [
        {"name": "PrioritySort"}, {"name": "DefaultBinder"},
        {"name": "tests.framework.out_of_tree:AlwaysNo"}]}}}]})
    fwk = build_frameworks(cfg, FrameworkHandle(), registry())["default-scheduler"]
    assert fwk.points["filter"] == ["AlwaysNo"]


# --- one queue sort for all profiles ------------------------------------------------------------

def _two_profiles(second_plugins: dict, second_config: list | None = None) -> dict:
    return {"profiles": [
        {"schedulerName": "a"},
        {"schedulerName": "b", "plugins": second_plugins, "pluginConfig": second_config or []},
    ]}


def test_profiles_whose_queue_sort_sets_differ_are_rejected():
    with pytest.raises(ConfigError) as err:
        load_config(_two_profiles({"queueSort": {"enabled": [{"name": "Coscheduling"}],
                                                 "disabled": [{"name": "*"}]}}))
    assert str(err.value).startswith("profiles[1].plugins.queueSort: Invalid value: ")
    assert str(err.value).endswith(": has to match for all profiles")


def test_profiles_whose_queue_sort_in_effect_differs_are_rejected_at_build():
    """Through multiPoint the sets as written are alike (empty) but the sort in effect
    differs: upstream's profile map refuses it when the scheduler starts."""
    cfg = load_config(_two_profiles({"multiPoint": {"enabled": [{"name": "Coscheduling"}],
                                                    "disabled": [{"name": "PrioritySort"}]}}))
    with pytest.raises(ConfigError) as err:
        build_frameworks(cfg, FrameworkHandle())
    assert str(err.value) == 'different queue sort plugins for profile "b": "Coscheduling", first: "PrioritySort"'


def test_profiles_with_one_queue_sort_are_accepted():
    cfg = load_config({"profiles": [{"schedulerName": "a"}, {"schedulerName": "b"}]})
    assert set(build_frameworks(cfg, FrameworkHandle())) == {"a", "b"}
