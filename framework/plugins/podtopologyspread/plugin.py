"""PodTopologySpread: spread matching pods over topology domains.

Upstream: pkg/scheduler/framework/plugins/podtopologyspread (plugin.go, common.go,
filtering.go, scoring.go). DoNotSchedule constraints are enforced in Filter,
ScheduleAnyway constraints scored. A pod without constraints gets the default
constraints (args), with the selector of the Services / RC / RS / StatefulSet that
select it. The counting lives in pod_topology_spread_filter / _score.
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Hashable, Sequence

from framework.api.affinity import SelectorError, parse_selector, qualified_name_errors
from framework.api.errors import ValidationError
from framework.api.labels import LabelSelector, Requirement
from framework.api.objects import Node, Pod
from framework.cache import NodeInfo, PodInfo
from framework.node_table import columnar_table
from framework.interface import (SKIP, ActionType, ClusterEvent, ClusterEventWithHint, CycleState, Handle,
                                 PreFilterResult, QueueingHint, SignPurpose, Status)
from framework.plugins.helper import NodeSumsMemo, ScoredByPreScoreState, read_state, selector_key
from framework.plugins.helper.hints import HintError, as_objects
from framework.plugins.nodeaffinity.node_affinity import required_node_affinity
from framework.plugins.podtopologyspread.filtering import (HONOR, IGNORE, LABEL_HOSTNAME, PRE_FILTER_STATE_KEY,
    Constraint, PreFilterState, count_matching_pods, filter_node, filter_rows, node_has_all_topology_keys,
    update_with_pod)
from framework.plugins.podtopologyspread.scoring import PRE_SCORE_STATE_KEY, PreScoreState
from framework.plugins.selectorspread.selector_spread import DefaultSelectors
from framework.plugins.helper.signing import ALL_SIGNED

DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"
SYSTEM_DEFAULTING = "System"
LIST_DEFAULTING = "List"
LABEL_TOPOLOGY_ZONE = "topology.kubernetes.io/zone"

SYSTEM_DEFAULT_CONSTRAINTS: tuple[Mapping[str, Any], ...] = (
    {"topologyKey": LABEL_HOSTNAME, "whenUnsatisfiable": SCHEDULE_ANYWAY, "maxSkew": 3},
    {"topologyKey": LABEL_TOPOLOGY_ZONE, "whenUnsatisfiable": SCHEDULE_ANYWAY, "maxSkew": 5},
)


# --- Args --------------------------------------------------------------------------------------

def _validate_default_constraint(c: object, i: int, previous: list[Any]) -> None:
    p = f"defaultConstraints[{i}]"
    if not isinstance(c, Mapping):
        raise ValidationError(p, "must be an object")
    skew = c.get("maxSkew", 0)
    if isinstance(skew, bool) or not isinstance(skew, int) or skew <= 0:
        raise ValidationError(f"{p}.maxSkew", f"Invalid value: {skew}: not in valid range (0, inf)")
    key = c.get("topologyKey") or ""
    if not key:
        raise ValidationError(f"{p}.topologyKey", "Required value: can not be empty")
    key_errs = qualified_name_errors(key)
    if key_errs:
        raise ValidationError(f"{p}.topologyKey", f'Invalid value: "{key}": ' + "; ".join(key_errs))
    when = c.get("whenUnsatisfiable") or ""
    if not when:
        raise ValidationError(f"{p}.whenUnsatisfiable", "Required value: can not be empty")
    if when not in (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY):
        raise ValidationError(f"{p}.whenUnsatisfiable",
                              f'Unsupported value: "{when}": supported values: "{DO_NOT_SCHEDULE}", "{SCHEDULE_ANYWAY}"')
    if c.get("labelSelector") is not None:
        raise ValidationError(f"{p}.labelSelector", "Forbidden: constraint must not define a selector, as they deduced for each pod")
    for other in previous:
        if other.get("topologyKey") == key and other.get("whenUnsatisfiable") == when:
            raise ValidationError(p, f'Duplicate value: "{{{key}, {when}}}"')


def _args(args: dict[str, Any] | None) -> tuple[tuple[Mapping[str, Any], ...], bool]:
    """PodTopologySpreadArgs with v1 defaults and upstream's validation:
    (default constraints, whether they are the system defaults)."""
    args = args or {}
    defaulting = args.get("defaultingType") or SYSTEM_DEFAULTING
    constraints = args.get("defaultConstraints") or []
    if not isinstance(constraints, list):
        raise ValidationError("defaultConstraints", "must be a list")
    if defaulting not in (SYSTEM_DEFAULTING, LIST_DEFAULTING):
        raise ValidationError("defaultingType",
                              f'Unsupported value: "{defaulting}": supported values: "{SYSTEM_DEFAULTING}", "{LIST_DEFAULTING}"')
    if defaulting == SYSTEM_DEFAULTING and constraints:
        raise ValidationError("defaultingType", f'Invalid value: "{defaulting}": when .defaultConstraints are not empty')
    for i, c in enumerate(constraints):
        _validate_default_constraint(c, i, constraints[:i])
    if defaulting == SYSTEM_DEFAULTING:
        return SYSTEM_DEFAULT_CONSTRAINTS, True
    return tuple(constraints), False


# --- Constraints -------------------------------------------------------------------------------

def _merge_match_label_keys(selector: LabelSelector | None, keys: Sequence[str], pod_labels: Mapping[str, str]) -> LabelSelector | None:
    """mergeLabelSetWithSelector: the pod's values of matchLabelKeys ANDed in;
    Nothing stays Nothing."""
    extra = [Requirement(k, "In", frozenset([pod_labels[k]])) for k in keys if k in pod_labels]
    if selector is None or not extra:
        return selector
    return LabelSelector(extra + list(selector.requirements))


class PodTopologySpread(ScoredByPreScoreState):
    name = "PodTopologySpread"

    def sign_pod(self, pod: Pod, purpose: SignPurpose) -> Hashable | None:
        """SignPlugin. For placement, spreading is not local to one node: a pod with
        constraints, its own or the plugin's defaults, is not signed (upstream)."""
        if purpose is SignPurpose.PLACEMENT and (self.default_constraints or pod.topology_spread_constraints):
            return None
        return ALL_SIGNED
    pre_score_key = PRE_SCORE_STATE_KEY

    def __init__(self, handle: Handle, default_constraints: tuple[Mapping[str, Any], ...], system_defaulted: bool) -> None:
        self.handle = handle
        self.default_constraints = default_constraints
        self._parsed_defaults: dict[str, tuple[Constraint, ...]] = {}
        self._with_selector: dict[str, tuple[tuple[Constraint, ...], LabelSelector, tuple[Constraint, ...]]] = {}
        self.system_defaulted = system_defaulted
        features = handle.features if handle is not None else None

        def gate(name: str) -> bool:
            return features.enabled(name) if features is not None else True

        self.enable_node_inclusion_policy = gate("NodeInclusionPolicyInPodTopologySpread")
        self.enable_match_label_keys = gate("MatchLabelKeysInPodTopologySpread")
        self.enable_queueing_hints = gate("SchedulerQueueingHints")
        self.enable_comparison_operators = gate("TaintTolerationComparisonOperators")
        # PreFilter's counts over all nodes, kept for the next pod with the same constraints.
        self._count_memo: NodeSumsMemo = NodeSumsMemo()
        self._score_count_memo: NodeSumsMemo = NodeSumsMemo()
        # The default selector per pod template, while the lister's objects stay (PreFilter and PreScore).
        self._selectors = DefaultSelectors()

    @classmethod
    def new(cls, args: dict[str, Any] | None, handle: Handle) -> "PodTopologySpread":
        constraints, system = _args(args)
        return cls(handle, constraints, system)

    # --- constraints ---------------------------------------------------------------------------

    def _filter_constraints(self, raw: Sequence[Any], pod_labels: Mapping[str, str], action: str) -> tuple[Constraint, ...]:
        """filterTopologySpreadConstraints; raises SelectorError for a bad selector."""
        out = []
        for c in raw:
            if not isinstance(c, Mapping) or c.get("whenUnsatisfiable") != action:
                continue
            selector = parse_selector(c.get("labelSelector"))
            keys = c.get("matchLabelKeys") or []
            if self.enable_match_label_keys and keys:
                selector = _merge_match_label_keys(selector, keys, pod_labels)
            min_domains = c.get("minDomains")
            affinity_policy, taints_policy = HONOR, IGNORE
            if self.enable_node_inclusion_policy:
                affinity_policy = c.get("nodeAffinityPolicy") or HONOR
                taints_policy = c.get("nodeTaintsPolicy") or IGNORE
            out.append(Constraint(
                max_skew=int(c.get("maxSkew") or 0),
                topology_key=c.get("topologyKey") or "",
                selector=selector,
                min_domains=1 if min_domains is None else int(min_domains),
                node_affinity_policy=affinity_policy,
                node_taints_policy=taints_policy,
            ))
        return tuple(out)

    def _default_constraints(self, pod: Pod, action: str) -> tuple[Constraint, ...]:
        """buildDefaultConstraints: the args' constraints with the pod's default selector."""
        constraints = self._parsed_defaults.get(action)
        if constraints is None:
            constraints = self._filter_constraints(self.default_constraints, pod.labels, action)
            # Defaults without matchLabelKeys read nothing of the pod: parse them once.
            if not any(isinstance(c, Mapping) and c.get("matchLabelKeys") for c in self.default_constraints):
                self._parsed_defaults[action] = constraints
        if not constraints:
            return ()
        selector = self._selectors.of(pod, self.handle)
        if selector.empty:
            return ()
        # The last result per action, while the parsed defaults and the kept selector
        # are the very objects it was built from (Constraint is frozen).
        last = self._with_selector.get(action)
        if last is not None and last[0] is constraints and last[1] is selector:
            return last[2]
        out = tuple(Constraint(c.max_skew, c.topology_key, selector, c.min_domains, c.node_affinity_policy,
                               c.node_taints_policy) for c in constraints)
        self._with_selector[action] = (constraints, selector, out)
        return out

    def constraints(self, pod: Pod, action: str) -> tuple[Constraint, ...]:
        """The pod's own constraints for `action`, or the defaults when it has none."""
        if pod.topology_spread_constraints:
            return self._filter_constraints(pod.topology_spread_constraints, pod.labels, action)
        return self._default_constraints(pod, action)

    # --- PreFilter / Filter -------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> tuple[PreFilterResult | None, Status | None]:
        try:
            constraints = self.constraints(pod, DO_NOT_SCHEDULE)
        except SelectorError as err:
            return None, Status.error_of(f"get constraints from pod: obtaining pod's hard topology spread constraints: {err}")
        if not constraints:
            return None, SKIP
        s = PreFilterState(constraints)
        count_matching_pods(s, pod, nodes, required_node_affinity(pod), self.enable_node_inclusion_policy,
                            self.enable_comparison_operators, self._count_memo, _counting_key(pod, constraints, True))
        state.write(PRE_FILTER_STATE_KEY, s)
        return None, None

    def pre_filter_extensions(self) -> "PodTopologySpread":
        return self

    def _update_with_pod(self, state: CycleState, pod_to_schedule: Pod, pod_info: PodInfo, node_info: NodeInfo,
                         delta: int) -> Status | None:
        s, err = read_state(state, PRE_FILTER_STATE_KEY)
        if err is not None:
            return err
        update_with_pod(s, pod_info.pod, pod_to_schedule, node_info.node, delta, required_node_affinity(pod_to_schedule),
                        self.enable_node_inclusion_policy, self.enable_comparison_operators)
        return None

    def add_pod(self, state: CycleState, pod_to_schedule: Pod, pod_info_to_add: PodInfo, node_info: NodeInfo) -> Status | None:
        return self._update_with_pod(state, pod_to_schedule, pod_info_to_add, node_info, 1)

    def remove_pod(self, state: CycleState, pod_to_schedule: Pod, pod_info_to_remove: PodInfo, node_info: NodeInfo) -> Status | None:
        return self._update_with_pod(state, pod_to_schedule, pod_info_to_remove, node_info, -1)

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        s, err = read_state(state, PRE_FILTER_STATE_KEY)
        if err is not None:
            return err
        if s.is_empty():
            return None
        node = node_info.node
        if node is None:
            return Status.error_of("node not found")
        return filter_node(s, node)

    def filter_nodes(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> list[Status | None]:
        s = state.get(PRE_FILTER_STATE_KEY)
        if s is None or s.is_empty():
            return [self.filter(state, pod, ni) for ni in nodes]
        tc = columnar_table(nodes)
        if tc is not None and not tc[0].no_node[tc[1]].any():
            return filter_rows(s, *tc)
        return [self.filter(state, pod, ni) for ni in nodes]

    # --- PreScore / Score ----------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> Status | None:
        all_nodes = self.handle.snapshot().list()
        if not all_nodes:
            return SKIP
        # Nodes without every topology key still get hostname spreading under the
        # system defaults; any other constraints need all keys.
        require_all = bool(pod.topology_spread_constraints) or not self.system_defaulted
        try:
            constraints = self.constraints(pod, SCHEDULE_ANYWAY)
        except SelectorError as err:
            return Status.error_of(f"calculating preScoreState: obtaining pod's soft topology spread constraints: {err}")
        if not constraints:
            return SKIP
        s = PreScoreState(constraints)
        s.init_domains(nodes, require_all)
        s.count(pod, all_nodes, required_node_affinity(pod), require_all, self.enable_node_inclusion_policy,
                self.enable_comparison_operators, self._score_count_memo, _counting_key(pod, constraints, require_all))
        state.write(PRE_SCORE_STATE_KEY, s)
        return None

    # --- Queueing hints --------------------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        pod_actions = ActionType.Add | ActionType.UpdatePodLabel | ActionType.Delete
        if self.enable_queueing_hints:
            # With hints, a new toleration of the pod itself can matter (nodeTaintsPolicy Honor).
            pod_actions |= ActionType.UpdatePodTolerations
        return [
            ClusterEventWithHint(ClusterEvent("Pod", pod_actions), self.is_schedulable_after_pod_change),
            ClusterEventWithHint(
                ClusterEvent("Node", ActionType.Add | ActionType.Delete | ActionType.UpdateNodeLabel | ActionType.UpdateNodeTaint),
                self.is_schedulable_after_node_change),
        ]

    def _hint_constraints(self, pod: Pod) -> tuple[Constraint, ...]:
        try:
            return self.constraints(pod, DO_NOT_SCHEDULE)
        except SelectorError as e:
            raise HintError(str(e)) from None

    def is_schedulable_after_pod_change(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        old, new = as_objects(Pod, old, new)
        if (new is not None and not _involved(new, pod)) or (old is not None and not _involved(old, pod)):
            return QueueingHint.QueueSkip
        constraints = self._hint_constraints(pod)
        if new is not None and old is not None:
            if (pod.uid == new.uid and new.tolerations != old.tolerations
                    and any(c.node_taints_policy == HONOR for c in constraints)):
                return QueueingHint.Queue
            if new.labels == old.labels:
                return QueueingHint.QueueSkip
            if any(c.selects(old) != c.selects(new) for c in constraints):
                return QueueingHint.Queue
            return QueueingHint.QueueSkip
        changed = new if new is not None else old
        if changed is not None and any(c.selects(changed) for c in constraints):
            return QueueingHint.Queue
        return QueueingHint.QueueSkip

    def is_schedulable_after_node_change(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        old, new = as_objects(Node, old, new)
        constraints = self._hint_constraints(pod)
        old_matching = old is not None and node_has_all_topology_keys(old, constraints)
        new_matching = new is not None and node_has_all_topology_keys(new, constraints)
        if old is not None and new is not None:
            if old_matching != new_matching:
                return QueueingHint.Queue
            if new_matching and (any(old.labels.get(c.topology_key) != new.labels.get(c.topology_key) for c in constraints)
                                 or old.taints != new.taints):
                return QueueingHint.Queue
            return QueueingHint.QueueSkip
        if new is not None:
            return QueueingHint.Queue if new_matching else QueueingHint.QueueSkip
        return QueueingHint.Queue if old_matching else QueueingHint.QueueSkip


def _counting_key(pod: Pod, constraints: Sequence[Constraint], require_all_topologies: bool) -> Hashable:
    """Everything the count of one node depends on besides the node (the plugin's
    gates are fixed per instance): each constraint's key, selector and inclusion
    policies, and the pod's namespace, required node affinity and tolerations."""
    spec = pod.spec
    return (tuple((c.topology_key, selector_key(c.selector), c.node_affinity_policy, c.node_taints_policy)
                  for c in constraints),
            pod.namespace, require_all_topologies,
            json.dumps([spec.get("nodeSelector"), pod.affinity.get("nodeAffinity"), spec.get("tolerations")],
                       sort_keys=True, default=repr))


def _involved(changed: Pod, pod: Pod) -> bool:
    """involvedInTopologySpreading: the pod itself, or a bound pod of its namespace."""
    return changed.uid == pod.uid or (bool(changed.node_name) and changed.namespace == pod.namespace)


PLUGINS = [PodTopologySpread]
