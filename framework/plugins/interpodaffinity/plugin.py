"""InterPodAffinity: required pod (anti-)affinity in Filter, preferred in Score.

Upstream: pkg/scheduler/framework/plugins/interpodaffinity (plugin.go, filtering.go,
scoring.go). The counting lives in inter_pod_affinity_filter / _score; this module
holds the plugin: args, namespace handling, extension points and queueing hints.
"""
from __future__ import annotations

from typing import Any, Hashable, Mapping, Sequence

from framework.api.affinity import AffinityTerm, PodAffinityTerms, WeightedAffinityTerm
from framework.api.errors import ValidationError
from framework.api.objects import Node, Pod
from framework.cache import NodeInfo, PodInfo
from framework.node_table import columnar_table
from framework.interface import (SKIP, ActionType, ClusterEvent, ClusterEventWithHint, Code, CycleState, Handle,
                                 PreFilterResult, QueueingHint, SignPurpose, Status)
from framework.plugins.interpodaffinity.filtering import (AFFINITY_NOT_MATCH, ANTI_AFFINITY_NOT_MATCH, NAME,
    EXISTING_ANTI_AFFINITY_NOT_MATCH,
    PRE_FILTER_STATE_KEY, PreFilterState, count_existing_anti_affinity_memoized, existing_anti_affinity_key_of,
    terms_key, count_incoming_memoized, failing_rows, pod_matches_all_affinity_terms,
    satisfies_existing_pods_anti_affinity, satisfies_pod_affinity, satisfies_pod_anti_affinity)
from framework.plugins.helper import NodeSumsMemo, ScoredByPreScoreState, read_state, state_for_node
from framework.plugins.helper.hints import HintError, as_objects
from framework.plugins.interpodaffinity.scoring import PRE_SCORE_STATE_KEY, PreScoreState
from framework.plugins.helper.signing import ALL_SIGNED, POD_ADDED

DEFAULT_HARD_POD_AFFINITY_WEIGHT = 1
MIN_HARD_POD_AFFINITY_WEIGHT = 0
MAX_HARD_POD_AFFINITY_WEIGHT = 100


def _args(args: dict[str, Any] | None) -> tuple[int, bool]:
    """InterPodAffinityArgs with v1 defaults, validated as upstream validates them."""
    args = args or {}
    weight = args.get("hardPodAffinityWeight")
    if weight is None:
        weight = DEFAULT_HARD_POD_AFFINITY_WEIGHT
    if isinstance(weight, bool) or not isinstance(weight, int):
        raise ValidationError("hardPodAffinityWeight", "must be an integer")
    if not MIN_HARD_POD_AFFINITY_WEIGHT <= weight <= MAX_HARD_POD_AFFINITY_WEIGHT:
        raise ValidationError(
            "hardPodAffinityWeight",
            f"Invalid value: {weight}: not in valid range [{MIN_HARD_POD_AFFINITY_WEIGHT}, {MAX_HARD_POD_AFFINITY_WEIGHT}]",
        )
    ignore = args.get("ignorePreferredTermsOfExistingPods", False)
    if not isinstance(ignore, bool):
        raise ValidationError("ignorePreferredTermsOfExistingPods", "must be true or false")
    return weight, ignore


class _Extensions:
    """PreFilterExtensions, bound to the plugin."""

    __slots__ = ("_pl",)

    def __init__(self, pl: "InterPodAffinity") -> None:
        self._pl = pl

    def add_pod(self, state: CycleState, pod_to_schedule: Pod, pod_info_to_add: PodInfo, node_info: NodeInfo) -> Status | None:
        return self._pl._update_with_pod(state, pod_info_to_add, node_info, 1)

    def remove_pod(self, state: CycleState, pod_to_schedule: Pod, pod_info_to_remove: PodInfo, node_info: NodeInfo) -> Status | None:
        return self._pl._update_with_pod(state, pod_info_to_remove, node_info, -1)


class InterPodAffinity(ScoredByPreScoreState):
    name = NAME

    def sign_pod(self, pod: Pod, purpose: SignPurpose) -> Hashable | None:
        """SignPlugin. For placement, a pod with pod affinity or anti-affinity is not
        signed (upstream's SignPod; its labels are in every signature already)."""
        if purpose is SignPurpose.PLACEMENT:
            affinity = (pod.raw.get("spec") or {}).get("affinity") or {}
            if affinity.get("podAffinity") or affinity.get("podAntiAffinity"):
                return None
        return ALL_SIGNED

    def monotone_events(self, pod: Pod) -> Sequence[ClusterEvent]:
        """MonotoneEventsPlugin: a pod added can satisfy only a required affinity
        term; for a pod with none it can only match more anti-affinity."""
        return () if PodInfo(pod).required_affinity_terms else (POD_ADDED,)
    pre_score_key = PRE_SCORE_STATE_KEY

    def __init__(self, handle: Handle, hard_pod_affinity_weight: int, ignore_preferred_terms_of_existing_pods: bool) -> None:
        self.handle = handle
        self.hard_pod_affinity_weight = hard_pod_affinity_weight
        self.ignore_preferred_terms_of_existing_pods = ignore_preferred_terms_of_existing_pods
        self._ext = _Extensions(self)
        # PreFilter's counts over all nodes, kept for the next pod with the same terms.
        self._counts_memo: NodeSumsMemo = NodeSumsMemo()
        # Existing pods' anti-affinity terms matching the incoming pod, kept likewise.
        self._existing_memo: NodeSumsMemo = NodeSumsMemo()
        # PreScore's topology scores over all nodes, kept likewise.
        self._score_memo: NodeSumsMemo = NodeSumsMemo()

    @classmethod
    def new(cls, args: dict[str, Any] | None, handle: Handle) -> "InterPodAffinity":
        weight, ignore = _args(args)
        return cls(handle, weight, ignore)

    # --- namespaces -------------------------------------------------------------------------

    def _namespace_labels(self, namespace: str) -> Mapping[str, str] | None:
        """GetNamespaceLabelsSnapshot: the labels of the pod's namespace, None if unknown."""
        ns = self.handle.get_object("Namespace", "", namespace)
        return dict(ns.labels) if ns is not None else None

    def _merge_namespaces(self, term: AffinityTerm) -> AffinityTerm:
        """mergeAffinityTermNamespacesIfNotEmpty: a non-empty namespace selector of the
        incoming pod becomes the list of namespaces it selects (and then Nothing)."""
        sel = term.namespace_selector
        if sel is not None and sel.empty:
            return term
        selected = []
        if sel is not None:
            selected = [ns.name for ns in self.handle.list_objects("Namespace") if sel.matches(ns.labels)]
        return term.with_namespaces_merged(selected)

    def _merge_weighted(self, terms: tuple[WeightedAffinityTerm, ...]) -> tuple[WeightedAffinityTerm, ...]:
        return tuple(WeightedAffinityTerm(self._merge_namespaces(t.term), t.weight) for t in terms)

    # --- PreFilter / Filter -------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> tuple[PreFilterResult | None, Status | None]:
        terms = pod.pod_affinity_terms
        if terms.error:
            return None, Status(Code.UnschedulableAndUnresolvable, f"parsing pod: {terms.error}")
        snapshot = self.handle.snapshot()
        if not terms.required_affinity and not terms.required_anti_affinity and \
                not snapshot.have_pods_with_required_anti_affinity_list:
            # No term of its own and no pod with required anti-affinity to count: the
            # state below would hold nothing, so Skip before building it.
            return None, SKIP
        s = PreFilterState(
            pod,
            tuple(self._merge_namespaces(t) for t in terms.required_affinity),
            tuple(self._merge_namespaces(t) for t in terms.required_anti_affinity),
            self._namespace_labels(pod.namespace),
        )
        # No pod anywhere with required anti-affinity: nothing to count, and the
        # memo (keyed by the pod's labels) would read every node for each new key.
        if columnar_table(nodes) is not None and snapshot.have_pods_with_required_anti_affinity_list:
            count_existing_anti_affinity_memoized(self._existing_memo, s, nodes)
        else:
            s.count_existing_anti_affinity(snapshot.have_pods_with_required_anti_affinity_list)
        if s.required_affinity or s.required_anti_affinity:
            # Terms of its own make the pod walk every node's pods; the memo walks
            # only the nodes that changed since a pod with the same terms.
            count_incoming_memoized(self._counts_memo, s, nodes)
        if not s.existing_anti_affinity_counts and not s.required_affinity and not s.required_anti_affinity:
            return None, SKIP
        state.write(PRE_FILTER_STATE_KEY, s)
        return None, None

    def pre_filter_extensions(self) -> _Extensions:
        return self._ext

    def _update_with_pod(self, state: CycleState, pod_info: PodInfo, node_info: NodeInfo, multiplier: int) -> Status | None:
        s, err = read_state(state, PRE_FILTER_STATE_KEY)
        if err is not None:
            return err
        s.update_with_pod(pod_info, node_info.node, multiplier)
        return None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        s, node, err = state_for_node(state, PRE_FILTER_STATE_KEY, node_info)
        if err is not None:
            return err
        if not satisfies_pod_affinity(s, node):
            return AFFINITY_NOT_MATCH
        if not satisfies_pod_anti_affinity(s, node):
            return ANTI_AFFINITY_NOT_MATCH
        if not satisfies_existing_pods_anti_affinity(s, node):
            return EXISTING_ANTI_AFFINITY_NOT_MATCH
        return None

    def filter_nodes(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> list[Status | None]:
        s = state.get(PRE_FILTER_STATE_KEY)
        if s is None:
            return [self.filter(state, pod, ni) for ni in nodes]
        tb = columnar_table(nodes)
        if tb is not None and not tb[0].no_node[tb[1]].any():
            return failing_rows(s, *tb)
        out: list[Status | None] = []
        for ni in nodes:
            node = ni.node
            ok = (node is not None and satisfies_pod_affinity(s, node) and satisfies_pod_anti_affinity(s, node)
                  and satisfies_existing_pods_anti_affinity(s, node))
            out.append(None if ok else self.filter(state, pod, ni))
        return out

    # --- PreScore / Score ----------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> Status | None:
        if not nodes:
            return SKIP
        aff = pod.affinity
        has_preferred = bool(
            ((aff.get("podAffinity") or {}).get("preferredDuringSchedulingIgnoredDuringExecution"))
            or ((aff.get("podAntiAffinity") or {}).get("preferredDuringSchedulingIgnoredDuringExecution"))
        )
        if self.ignore_preferred_terms_of_existing_pods and not has_preferred:
            return SKIP
        snapshot = self.handle.snapshot()
        # Without preferred terms of its own, only pods with affinity can score the pod.
        candidates = snapshot.list() if has_preferred else snapshot.have_pods_with_affinity_list
        if not candidates:
            # Nothing can add a score; skip before the memo, whose key holds the
            # pod's labels (a new key per gang would read every node).
            return SKIP
        terms: PodAffinityTerms = pod.pod_affinity_terms
        if terms.error:
            return Status.error_of(f"failed to parse pod: {terms.error}")
        s = PreScoreState(
            self._merge_weighted(terms.preferred_affinity),
            self._merge_weighted(terms.preferred_anti_affinity),
            self._namespace_labels(pod.namespace),
        )
        all_nodes = snapshot.list()
        if columnar_table(all_nodes) is not None:
            # Every node through the memo (the nodes outside `candidates` add nothing).
            key = (existing_anti_affinity_key_of(pod, s.namespace_labels), self.hard_pod_affinity_weight,
                   has_preferred, _weighted_key(s.preferred_affinity), _weighted_key(s.preferred_anti_affinity))
            s.process_nodes_memoized(self._score_memo, key, all_nodes, pod, has_preferred,
                                     self.hard_pod_affinity_weight)
        else:
            s.process_nodes(candidates, pod, has_preferred, self.hard_pod_affinity_weight)
        if not s.topology_score:
            return SKIP
        state.write(PRE_SCORE_STATE_KEY, s)
        return None

    # --- Queueing hints --------------------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        node_action = ActionType.Add | ActionType.UpdateNodeLabel
        if not self.handle.features.enabled("SchedulerQueueingHints"):  # upstream's preCheck may drop Node/Add
            node_action |= ActionType.UpdateNodeTaint
        return [
            ClusterEventWithHint(ClusterEvent("Pod", ActionType.Add | ActionType.UpdatePodLabel | ActionType.Delete),
                                 self.is_schedulable_after_pod_change),
            ClusterEventWithHint(ClusterEvent("Node", node_action),
                                 self.is_schedulable_after_node_change),
        ]

    def is_schedulable_after_pod_change(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        """The pending pod itself changed labels (existing pods' anti-affinity may stop
        matching it); a placed pod was added or relabelled into matching every
        affinity term or out of matching every anti-affinity term; a placed pod was
        deleted that matched every anti-affinity term, or whose own required
        anti-affinity matched the pending pod."""
        old, new = as_objects(Pod, old, new)
        if new is not None and new.uid == pod.uid:
            return QueueingHint.Queue
        if (new is not None and not new.node_name) or (old is not None and not old.node_name):
            return QueueingHint.QueueSkip  # an unscheduled pod takes no place in any topology
        aff, anti = self._required_terms(pod)
        if new is not None and old is not None:
            if not pod_matches_all_affinity_terms(aff, old) and pod_matches_all_affinity_terms(aff, new):
                return QueueingHint.Queue
            if pod_matches_all_affinity_terms(anti, old) and not pod_matches_all_affinity_terms(anti, new):
                return QueueingHint.Queue
            return QueueingHint.QueueSkip
        if new is not None:
            return QueueingHint.Queue if pod_matches_all_affinity_terms(aff, new) else QueueingHint.QueueSkip
        if old is None:
            return QueueingHint.QueueSkip
        if pod_matches_all_affinity_terms(anti, old):
            return QueueingHint.Queue
        ns_labels = self._namespace_labels(pod.namespace)
        if any(t.matches(pod, ns_labels) for t in PodInfo(old).required_anti_affinity_terms):
            return QueueingHint.Queue
        return QueueingHint.QueueSkip

    def is_schedulable_after_node_change(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        """Affinity: a node added with a term's topology key, or updated to gain the
        key or change its value. Anti-affinity: any node added (a node without the
        key can always take the pod), or one updated to lose the key or change its
        value."""
        old, new = as_objects(Node, old, new)
        if new is None:
            return QueueingHint.QueueSkip
        aff, anti = self._required_terms(pod)
        for t in aff:
            if old is None:
                if t.topology_key in new.labels:
                    return QueueingHint.Queue
                continue
            before, after = old.labels.get(t.topology_key), new.labels.get(t.topology_key)
            if after is not None and before != after:  # gained, or changed value
                return QueueingHint.Queue
        for t in anti:
            if old is None:
                return QueueingHint.Queue
            before, after = old.labels.get(t.topology_key), new.labels.get(t.topology_key)
            if before is not None and before != after:  # lost, or changed value
                return QueueingHint.Queue
        return QueueingHint.QueueSkip

    @staticmethod
    def _required_terms(pod: Pod) -> tuple[tuple[AffinityTerm, ...], tuple[AffinityTerm, ...]]:
        terms = pod.pod_affinity_terms
        if terms.error:
            raise HintError(str(terms.error))
        return terms.required_affinity, terms.required_anti_affinity


def _weighted_key(terms: tuple[WeightedAffinityTerm, ...]) -> tuple:
    return tuple((wt.weight, terms_key((wt.term,))) for wt in terms)


PLUGINS = [InterPodAffinity]
