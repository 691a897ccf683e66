"""What the speed-ups may assume comes from each plugin's own declarations
(framework/interface.py: SignPlugin, MonotoneEventsPlugin, FilterReadsPlugin),
never from a table of plugin names: an out-of-tree plugin that declares nothing
gets no speed-up, one that declares gets the same as an in-tree plugin."""
from __future__ import annotations

from typing import Any, Hashable

from framework.api.objects import Pod
from framework.batching import batching_signer
from framework.config import build_frameworks, full_registry, load_config
from framework.failure_memo import ProfileSigner
from framework.handle import FrameworkHandle
from framework.interface import ActionType, ClusterEvent, CycleState, FilterReads, SignPurpose, Status
from framework.plugins import Registry
from framework.plugins.interpodaffinity.plugin import InterPodAffinity
from framework.plugins.noderesources.fit import NodeResourcesFit
from framework.runtime import Framework


class Undeclared:
    """A node-only filter that says nothing about itself."""

    name = "OwnZoneFilter"

    @classmethod
    def new(cls, args: Any, handle: Any) -> Any:
        return cls()

    def filter(self, state: Any, pod: Pod, node_info: Any) -> Status | None:
        return None


class Declared(Undeclared):
    filter_reads = FilterReads.NODE

    def sign_pod(self, pod: Pod, purpose: SignPurpose) -> Hashable | None:
        return ()


def _default_profile_with(plugin: type[Undeclared]) -> Framework:
    reg = Registry()
    reg.register(plugin.name, plugin.new)
    cfg = load_config({"profiles": [{"schedulerName": "default-scheduler", "plugins": {
        "multiPoint": {"enabled": [{"name": plugin.name}]}}}]})
    return build_frameworks(cfg, FrameworkHandle(), full_registry(reg))["default-scheduler"]


def _pod(**spec: Any) -> Pod:
    return Pod({"kind": "Pod", "metadata": {"name": "p", "uid": "p"},
                "spec": {"containers": [{"name": "c"}], **spec}})


def _pre_filtered(fwk: Framework) -> CycleState:
    """The state after PreFilter of a plain pod (plugins with nothing to check Skip)."""
    state = CycleState()
    fwk.run_pre_filter(state, _pod())
    return state


def test_an_out_of_tree_filter_that_declares_nothing_gets_no_speed_up() -> None:
    fwk = _default_profile_with(Undeclared)
    assert not ProfileSigner(fwk).enabled and ProfileSigner(fwk).unsigned == ["OwnZoneFilter"]
    assert not batching_signer(fwk, False).enabled
    assert not fwk.pods_read_only_by_fit(_pre_filtered(fwk))


def test_an_out_of_tree_filter_that_declares_gets_what_an_in_tree_one_gets() -> None:
    fwk = _default_profile_with(Declared)
    signer = ProfileSigner(fwk)
    assert signer.enabled and signer.sign(_pod(), nominated=False) is not None
    assert batching_signer(fwk, False).enabled
    assert fwk.pods_read_only_by_fit(_pre_filtered(fwk))


def test_the_default_profile_signs_for_failures_and_placements_on_its_own_declarations() -> None:
    fwk = build_frameworks(load_config(None), FrameworkHandle())["default-scheduler"]
    assert ProfileSigner(fwk).enabled and batching_signer(fwk, False).enabled
    anti = _pod(affinity={"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "a"}}, "topologyKey": "kubernetes.io/hostname"}]}})
    # InterPodAffinity refuses a pod with pod (anti-)affinity for placement only.
    assert ProfileSigner(fwk).sign(anti, nominated=False) is not None
    assert batching_signer(fwk, False).sign(anti, nominated=False) is None


def test_a_pod_added_is_monotone_for_fit_and_for_anti_affinity_but_not_for_affinity() -> None:
    added = ClusterEvent("AssignedPod", ActionType.Add)
    fit = NodeResourcesFit.new(None, FrameworkHandle())
    assert any(e.matches(added) for e in fit.monotone_events(_pod()))
    ipa = InterPodAffinity.new(None, FrameworkHandle())
    term = {"labelSelector": {"matchLabels": {"app": "a"}}, "topologyKey": "kubernetes.io/hostname"}
    anti = _pod(affinity={"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}})
    near = _pod(affinity={"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}})
    assert any(e.matches(added) for e in ipa.monotone_events(anti))
    assert not any(e.matches(added) for e in ipa.monotone_events(near))
