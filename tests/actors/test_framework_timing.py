"""The timed views of a profile's Framework read its settings and plugin lists live,
and a view's own (proxied) plugin lists win over the profile's."""
from __future__ import annotations

from actors.framework_timing import PLUGIN_LISTS, TimedFramework, TimedPlugin
from framework.config import build_frameworks, load_config
from framework.handle import FrameworkHandle
from tests.actors.test_metrics import RecordingSink


def _views():
    fwk = next(iter(build_frameworks(load_config(None), FrameworkHandle()).values()))
    sink = RecordingSink()
    plain = TimedFramework.of(fwk, sink, lambda: 0.0, plugin_record=lambda *a: None, proxied=())
    sampled = TimedFramework.of(fwk, sink, lambda: 0.0, plugin_record=lambda *a: None, proxied=tuple(PLUGIN_LISTS))
    return fwk, plain, sampled


def test_a_setting_changed_on_the_profile_after_start_up_holds_in_its_timed_views() -> None:
    fwk, plain, sampled = _views()
    assert plain.score_plugins is fwk.score_plugins and plain.handle is fwk.handle
    fwk.use_columnar = False
    fwk.score_weights = {"NodeResourcesFit": 7}
    fwk.percentage_of_nodes_to_score = 30
    for view in (plain, sampled):
        assert (view.use_columnar, view.score_weights, view.percentage_of_nodes_to_score) == (False, {"NodeResourcesFit": 7}, 30)
        assert view.profile_name == fwk.profile_name == "default-scheduler"


def test_the_sampled_view_runs_its_own_timing_proxies_and_the_plain_view_the_plugins() -> None:
    fwk, plain, sampled = _views()
    for attr in PLUGIN_LISTS:
        assert getattr(plain, attr) is getattr(fwk, attr)
        proxies = getattr(sampled, attr)
        assert all(isinstance(p, TimedPlugin) for p in proxies)
        assert [p.name for p in proxies] == [p.name for p in getattr(fwk, attr)]
