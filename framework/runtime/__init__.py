"""The runtime: one profile's plugins run per extension point (upstream's
pkg/scheduler/framework/runtime). Framework lives in framework.py, the parts it holds
(one duty each) beside it; these are the names the rest of ksched imports."""
from framework.runtime.framework import EXTENSION_POINTS, POINT_METHODS, Framework
from framework.runtime.common import run_unsuspended
from framework.runtime.post_filter import PostFilterRun
from framework.runtime.scoring import NodeScoreList

__all__ = ["EXTENSION_POINTS", "POINT_METHODS", "Framework", "NodeScoreList", "PostFilterRun", "run_unsuspended"]
