"""Feature gates: upstream v1.35 defaults, the --feature-gates syntax and upstream's
rules for what may be set, and the config file's featureGates map."""
import pytest

from framework.api.objects import Node, Pod
from framework.cache import Snapshot
from framework.config import ConfigError, load_config
from framework.features import DEFAULTS, KNOWN, FeatureGateError, FeatureGates, check_settable, parse_gate_flag
from framework.handle import FrameworkHandle
from framework.interface import CycleState
from framework.plugins.tainttoleration.taint_toleration import TaintToleration

API = "kubescheduler.config.k8s.io/v1"


def test_taint_toleration_comparison_operators_is_alpha_and_off_by_default():
    assert DEFAULTS["TaintTolerationComparisonOperators"] is False
    assert KNOWN["TaintTolerationComparisonOperators"].stage == "Alpha"
    assert FeatureGates().enabled("TaintTolerationComparisonOperators") is False


def test_with_default_gates_a_gt_toleration_does_not_tolerate_and_with_the_gate_on_it_does():
    node = Node({"metadata": {"name": "n"}, "spec": {"taints": [
        {"key": "sla", "value": "950", "effect": "NoSchedule"}]}})
    pod = Pod({"metadata": {"name": "p"}, "spec": {"containers": [], "tolerations": [
        {"key": "sla", "operator": "Gt", "value": "750"}]}})
    info = Snapshot.build([node], []).get("n")
    off = TaintToleration.new(None, FrameworkHandle(features=FeatureGates()))
    on = TaintToleration.new(None, FrameworkHandle(features=FeatureGates({"TaintTolerationComparisonOperators": True})))
    assert off.filter(CycleState(), pod, info) is not None
    assert on.filter(CycleState(), pod, info) is None


@pytest.mark.parametrize(("flag", "expected"), [
    ("TaintTolerationComparisonOperators=true,SchedulerPopFromBackoffQ=false",
     {"TaintTolerationComparisonOperators": True, "SchedulerPopFromBackoffQ": False}),
    (" PodLevelResources = F ,,StorageCapacityScoring=1", {"PodLevelResources": False, "StorageCapacityScoring": True}),
    ("", {}),
])
def test_the_flag_is_read_as_component_base_reads_it(flag, expected):
    assert parse_gate_flag(flag) == expected


@pytest.mark.parametrize(("flag", "message"), [
    ("PodLevelResources", "missing bool value for PodLevelResources"),
    ("PodLevelResources=maybe",
     'invalid value of PodLevelResources=maybe, err: strconv.ParseBool: parsing "maybe": invalid syntax'),
])
def test_bad_flag_values_get_upstreams_errors(flag, message):
    with pytest.raises(FeatureGateError) as err:
        parse_gate_flag(flag)
    assert str(err.value) == message


@pytest.mark.parametrize(("settings", "message"), [
    ({"NoSuchGate": True}, "unrecognized feature gate: NoSuchGate"),
    ({"SchedulerQueueingHints": False}, "cannot set feature gate SchedulerQueueingHints to false, feature is locked to true"),
    ({"DRAExtendedResource": True}, "cannot set feature gate DRAExtendedResource to true: ksched does not implement"),
])
def test_unknown_locked_and_unimplemented_gates_cannot_be_set(settings, message):
    with pytest.raises(FeatureGateError, match=message):
        check_settable(settings)


def test_locked_and_unimplemented_gates_may_be_set_to_their_default():
    check_settable({"SchedulerQueueingHints": True, "DRAExtendedResource": False, "AllAlpha": True})


def test_all_alpha_turns_on_unlocked_alpha_gates_and_a_named_gate_wins_whatever_the_order():
    gates = FeatureGates({"StorageCapacityScoring": False, "AllAlpha": True})
    assert gates.enabled("TaintTolerationComparisonOperators") is True
    assert gates.enabled("StorageCapacityScoring") is False
    assert gates.enabled("DRAExtendedResource") is False  # no code behind it
    assert FeatureGates({"AllBeta": False}).enabled("PodLevelResources") is False


def test_an_unknown_gate_is_refused_and_an_unregistered_read_is_a_bug():
    with pytest.raises(FeatureGateError, match="unrecognized feature gate: Nope"):
        FeatureGates({"Nope": True})
    with pytest.raises(KeyError, match="not registered"):
        FeatureGates().enabled("Nope")


def test_describe_lists_every_gate_in_effect_sorted():
    text = FeatureGates({"TaintTolerationComparisonOperators": True}).describe()
    pairs = dict(p.split("=") for p in text.split(","))
    assert set(pairs) == set(KNOWN) and list(pairs) == sorted(pairs)
    assert pairs["TaintTolerationComparisonOperators"] == "true" and pairs["StorageCapacityScoring"] == "false"


def test_the_config_files_feature_gates_map_is_read():
    cfg = load_config({"apiVersion": API, "kind": "KubeSchedulerConfiguration",
                       "featureGates": {"TaintTolerationComparisonOperators": True}})
    assert cfg.feature_gates == {"TaintTolerationComparisonOperators": True}


@pytest.mark.parametrize(("gates", "message"), [
    ({"Bogus": True}, "featureGates.Bogus: unrecognized feature gate: Bogus"),
    ({"PodLevelResources": "yes"}, "featureGates.PodLevelResources: must be true or false"),
    (["PodLevelResources"], "featureGates: must be a map of gate name to true/false"),
])
def test_bad_feature_gates_in_the_config_file_name_the_field(gates, message):
    with pytest.raises(ConfigError, match=message):
        load_config({"apiVersion": API, "kind": "KubeSchedulerConfiguration", "featureGates": gates})


def test_the_shipped_default_yaml_lists_every_gate_with_its_default():
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "configs" / "default.yaml").read_text()
    listed = {}
    for line in text.splitlines():
        body = line.lstrip("# ").split("#")[0].strip()
        name, sep, value = body.partition(":")
        if sep and name in KNOWN:
            listed[name] = value.strip() == "true"
    assert listed == DEFAULTS
