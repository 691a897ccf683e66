"""TaintToleration: NoSchedule/NoExecute taints a pod does not tolerate rule the
node out; untolerated PreferNoSchedule taints lower the node's score."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Hashable, Sequence

import numpy as np

from framework.api.labels import Taint, Toleration, find_untolerated_taint, tolerations_tolerate_taint
from framework.api.objects import Node, Pod
from framework.cache import NodeInfo
from framework.interface import ClusterEvent, Code, CycleState, FilterReads, QueueingHint, SignPurpose, Status
from framework.plugins.helper import REVERSE_NORMALIZER, DefaultNormalizer, filter_flagged, flagged_positions, zeros_column
from framework.plugins.helper.hints import as_objects
from framework.plugins.helper.taints import TolerationsPlugin
from framework.plugins.helper.signing import ALL_SIGNED, ANY_POD_EVENT

ERR_REASON_NOT_MATCH = "node(s) had untolerated taint(s)"
PRE_SCORE_STATE_KEY = "PreScoreTaintToleration"
# Upstream's helper.DoNotScheduleTaintsFilterFunc: the effects that block scheduling.
DO_NOT_SCHEDULE_EFFECTS = ("NoSchedule", "NoExecute")


@dataclass(frozen=True, slots=True)
class _PreScoreState:
    # Tolerations that can tolerate a PreferNoSchedule taint (an empty effect matches every effect).
    tolerations_prefer_no_schedule: tuple[Toleration, ...]


class TaintToleration(TolerationsPlugin):
    name = "TaintToleration"

    filter_reads = FilterReads.NODE  # FilterReadsPlugin: the node alone decides
    score_node_local = True  # NodeLocalScorePlugin: counts the node's own PreferNoSchedule taints

    def monotone_events(self, pod: Pod) -> Sequence[ClusterEvent]:
        """No pod event changes a verdict that reads only the node (MonotoneEventsPlugin)."""
        return (ANY_POD_EVENT,)

    def sign_pod(self, pod: Pod, purpose: SignPurpose) -> Hashable | None:
        """Reads nothing of the pod beyond the common signature (SignPlugin)."""
        return ALL_SIGNED
    def score_extensions(self) -> DefaultNormalizer:
        return REVERSE_NORMALIZER  # more intolerable taints -> lower score

    def _untolerated(self, taints: Sequence[Taint], tolerations: Sequence[Toleration]) -> Taint | None:
        return find_untolerated_taint(taints, tolerations, DO_NOT_SCHEDULE_EFFECTS, self._comparison_ops)

    # --- queueing ------------------------------------------------------------------------

    def is_schedulable_after_node_change(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        """Queue when the node went from having an untolerated taint to having none."""
        old, new = as_objects(Node, old, new)
        was_untolerated = old is None or self._untolerated(old.taints, pod.tolerations) is not None
        is_untolerated = self._untolerated(new.taints, pod.tolerations) is not None
        return QueueingHint.Queue if was_untolerated and not is_untolerated else QueueingHint.QueueSkip

    def is_schedulable_after_pod_toleration_change(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        """The pending pod's own tolerations changed (the event is UpdatePodTolerations):
        it may tolerate the taints now."""
        _, new = as_objects(Pod, old, new)
        return QueueingHint.Queue if new is not None and new.uid == pod.uid else QueueingHint.QueueSkip

    # --- filtering -----------------------------------------------------------------------

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        node = node_info.node
        if node is None or self._untolerated(node.taints, pod.tolerations) is None:
            return None
        return Status(Code.UnschedulableAndUnresolvable, ERR_REASON_NOT_MATCH)

    def filter_nodes(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> list[Status | None]:
        return filter_flagged(nodes, "hard_taints", lambda ni: ni.node is not None and bool(ni.node.taints),
                              lambda ni: self.filter(state, pod, ni))

    # --- scoring -------------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> Status | None:
        tolerations = tuple(t for t in pod.tolerations if t.effect in ("", "PreferNoSchedule"))
        state.write(PRE_SCORE_STATE_KEY, _PreScoreState(tolerations))
        return None

    def count_intolerable_taints_prefer_no_schedule(self, taints: Sequence[Taint], tolerations: Sequence[Toleration]) -> int:
        return sum(
            1
            for taint in taints
            if taint.effect == "PreferNoSchedule"
            and not tolerations_tolerate_taint(tolerations, taint, self._comparison_ops)
        )

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]:
        try:
            s: _PreScoreState = state.read(PRE_SCORE_STATE_KEY)
        except KeyError:
            return 0, Status.error_of(f'failed to read "{PRE_SCORE_STATE_KEY}" from cycleState: not found')
        node = node_info.node
        taints = node.taints if node is not None else []
        return self.count_intolerable_taints_prefer_no_schedule(taints, s.tolerations_prefer_no_schedule), None

    def score_nodes(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> tuple[Sequence[int], Status | None]:
        s = state.get(PRE_SCORE_STATE_KEY)
        if s is None:
            return [], Status.error_of(f'failed to read "{PRE_SCORE_STATE_KEY}" from cycleState: not found')
        tolerations = s.tolerations_prefer_no_schedule
        count = self.count_intolerable_taints_prefer_no_schedule
        positions = flagged_positions(nodes, "prefer_taints")
        if positions is not None and not positions.size:
            # No node of these has a PreferNoSchedule taint: every count is 0, as one read-only
            # column (the runtime reads its one value and normalises it once, no scan).
            return zeros_column(len(nodes)), None
        if positions is not None:
            scores = np.zeros(len(nodes), dtype=np.int64)
            for i in positions.tolist():
                scores[i] = count(nodes[i].node.taints, tolerations)
            return scores, None
        out: list[int] = []
        for ni in nodes:
            node = ni.node
            out.append(count(node.taints, tolerations) if node is not None and node.taints else 0)
        return out, None


PLUGINS = [TaintToleration]
