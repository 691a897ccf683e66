"""SelectorSpread: spread the pods of one Service / ReplicationController /
ReplicaSet / StatefulSet over nodes and zones.

Upstream removed this plugin in 1.27; this follows its last version
(pkg/scheduler/framework/plugins/selectorspread in release-1.26) and its
helper.DefaultSelector. It is not in the default profile. Like upstream it has no
EnqueueExtensions: a score plugin never rejects a pod.

PreScore merges the selectors of everything that selects the pod; Score counts the
node's pods (same namespace, not being deleted) that match; NormalizeScore turns
counts into 0..100, fewer matches scoring higher, with 2/3 of the weight on the
zone's count when nodes carry zone labels. The float arithmetic is upstream's
(float64, truncated to an integer at the end).
"""
from __future__ import annotations

from typing import Any, Mapping

from framework.api.labels import LabelSelector, Requirement
from framework.api.objects import Node, Pod
from framework.cache import NodeInfo
from framework.interface import MAX_NODE_SCORE, Code, CycleState, Handle, NodeScore, Status

NAME = "SelectorSpread"
PRE_SCORE_STATE_KEY = "PreScore" + NAME

# Share of the score that zone spreading gets when nodes have zone labels.
ZONE_WEIGHTING = 2.0 / 3.0

LABEL_TOPOLOGY_ZONE = "topology.kubernetes.io/zone"
LABEL_TOPOLOGY_REGION = "topology.kubernetes.io/region"
LABEL_FAILURE_DOMAIN_BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
LABEL_FAILURE_DOMAIN_BETA_REGION = "failure-domain.beta.kubernetes.io/region"

# (apiVersion group, kind) of the controllers whose selector joins the pod's.
_RC = ("", "ReplicationController")
_RS = ("apps", "ReplicaSet")
_SS = ("apps", "StatefulSet")
# The kinds default_selector reads.
SELECTOR_KINDS = ("Service", "ReplicationController", "ReplicaSet", "StatefulSet")


def zone_key(node: Node | None) -> str:
    """A key unique per region and zone, "" for none (component-helpers GetZoneKey:
    the beta labels win when present, even when empty)."""
    if node is None:
        return ""
    labels = node.labels
    zone = labels.get(LABEL_FAILURE_DOMAIN_BETA_ZONE)
    if zone is None:
        zone = labels.get(LABEL_TOPOLOGY_ZONE, "")
    region = labels.get(LABEL_FAILURE_DOMAIN_BETA_REGION)
    if region is None:
        region = labels.get(LABEL_TOPOLOGY_REGION, "")
    if not region and not zone:
        return ""
    return region + ":\x00:" + zone


def skip_selector_spread(pod: Pod) -> bool:
    """Pods with their own topology spread constraints are left to PodTopologySpread."""
    return len(pod.topology_spread_constraints) != 0


def _controller_of(pod: Pod) -> Mapping[str, Any] | None:
    """The owner reference with controller=true (metav1.GetControllerOf)."""
    for ref in pod.meta.owner_references:
        if isinstance(ref, Mapping) and ref.get("controller") is True:
            return ref
    return None


def _group_version_kind(ref: Mapping[str, Any]) -> tuple[str, str, str] | None:
    """(group, version, kind) of an owner reference; None when apiVersion does
    not parse (schema.ParseGroupVersion)."""
    api_version = ref.get("apiVersion") or ""
    kind = ref.get("kind") or ""
    if not isinstance(api_version, str) or not isinstance(kind, str):
        return None
    if not api_version:
        return ("", "", kind)
    parts = api_version.split("/")
    if len(parts) == 1:
        return ("", parts[0], kind)
    if len(parts) == 2:
        return (parts[0], parts[1], kind)
    return None


def _selector_map(obj: Any) -> Mapping[str, str] | None:
    """spec.selector of a Service or ReplicationController as written (a map)."""
    spec = obj.raw.get("spec") or {}
    sel = spec.get("selector")
    return sel if isinstance(sel, Mapping) else None


def default_selector(pod: Pod, handle: Handle) -> LabelSelector:
    """The union of the selectors of the Services selecting the pod and of its
    controlling RC / ReplicaSet / StatefulSet (upstream helper.DefaultSelector)."""
    label_set: dict[str, str] = {}
    for svc in handle.list_objects("Service", pod.namespace):
        # A Service without a selector selects nothing; an empty one adds nothing.
        if svc.selector is not None and svc.selector.matches(pod.labels):
            label_set.update(_selector_map(svc) or {})
    extra: tuple[Requirement, ...] = ()

    owner = _controller_of(pod)
    gvk = _group_version_kind(owner) if owner is not None else None
    if owner is not None and gvk is not None and gvk[1] == "v1":
        group_kind = (gvk[0], gvk[2])
        name = owner.get("name") or ""
        if group_kind == _RC:
            rc = handle.get_object("ReplicationController", pod.namespace, name)
            if rc is not None:
                label_set.update(_selector_map(rc) or {})
        elif group_kind in (_RS, _SS):
            ctrl = handle.get_object(group_kind[1], pod.namespace, name)
            # A nil selector selects nothing and adds no requirement.
            if ctrl is not None and ctrl.selector is not None:
                extra = ctrl.selector.requirements
    return LabelSelector([*LabelSelector.from_map(label_set).requirements, *extra])


class DefaultSelectors:
    """default_selector per pod, kept while the lister's objects stay as they were: the
    selector reads the pod's namespace, labels and controller reference, and Services,
    ReplicationControllers, ReplicaSets and StatefulSets (SELECTOR_KINDS). The lister's
    revision moves with a change of any object but a Pod (a PodGroup's status too); the
    kept selectors survive a move that touched none of those kinds (`Handle.changed_objects`).
    Pods of one template share one entry. A lister that cannot tell what changed is read
    for every pod."""

    SIZE = 256

    def __init__(self) -> None:
        self._revision: int | None = None  # the lister's revision the kept selectors are of
        self._kept: dict[Any, LabelSelector] = {}

    def _refresh(self, handle: Handle, revision: int, services_changed: list[str] | None) -> None:
        """The lister's revision moved (or none is kept): drop the kept selectors unless
        no object they read changed since they were made; then they are of `revision`."""
        since = self._revision
        if services_changed is not None and not services_changed and all(
                handle.changed_objects(kind, since)[1] == [] for kind in SELECTOR_KINDS[1:]):
            self._revision = revision
            return
        self._kept.clear()
        # Kept only when the lister can tell whether anything moved after this revision.
        self._revision = revision if handle.changed_objects(SELECTOR_KINDS[0], revision)[1] is not None else None

    def of(self, pod: Pod, handle: Handle) -> LabelSelector:
        key = self._key(pod) if handle is not None else None
        if key is None:
            return default_selector(pod, handle)
        revision, services_changed = handle.changed_objects(SELECTOR_KINDS[0], self._revision)
        if self._revision is None or revision != self._revision:
            self._refresh(handle, revision, services_changed)
        try:
            selector = self._kept.get(key)
        except TypeError:  # a reference field that does not hash: not kept
            return default_selector(pod, handle)
        if selector is None:
            selector = default_selector(pod, handle)
            if self._revision is not None:
                if len(self._kept) >= self.SIZE:
                    self._kept.clear()
                self._kept[key] = selector
        return selector

    @staticmethod
    def _key(pod: Pod) -> tuple[Any, ...] | None:
        """What default_selector reads of the pod."""
        owner = _controller_of(pod)
        ref = None if owner is None else (owner.get("apiVersion"), owner.get("kind"), owner.get("name"))
        return (pod.namespace, tuple(pod.labels.items()), ref)


def count_matching_pods(namespace: str, selector: LabelSelector, node_info: NodeInfo) -> int:
    if not node_info.pods or selector.empty:
        return 0
    count = 0
    for pi in node_info.pods:
        p = pi.pod
        # Pods being deleted do not count for spreading.
        if p.namespace == namespace and p.meta.deletion_timestamp is None and selector.matches(p.labels):
            count += 1
    return count


class _PreScoreState:
    __slots__ = ("selector",)

    def __init__(self, selector: LabelSelector) -> None:
        self.selector = selector

    def clone(self) -> "_PreScoreState":
        # Never changed after PreScore, so sharing is safe.
        return self


class SelectorSpread:
    name = NAME

    def __init__(self, handle: Handle) -> None:
        self._handle = handle
        # The pod's merged selector per pod template, as PodTopologySpread keeps it.
        self._selectors = DefaultSelectors()

    @classmethod
    def new(cls, args: dict[str, Any] | None, handle: Handle) -> "SelectorSpread":
        return cls(handle)

    def pre_score(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> Status | None:
        if skip_selector_spread(pod):
            return None
        state.write(PRE_SCORE_STATE_KEY, _PreScoreState(self._selectors.of(pod, self._handle)))
        return None

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]:
        if skip_selector_spread(pod):
            return 0, None
        s = state.get(PRE_SCORE_STATE_KEY)
        if not isinstance(s, _PreScoreState):
            return 0, Status(Code.Error, f'reading "{PRE_SCORE_STATE_KEY}" from cycleState: not found')
        return count_matching_pods(pod.namespace, s.selector, node_info), None

    def score_extensions(self) -> "SelectorSpread":
        return self

    def normalize_score(self, state: CycleState, pod: Pod, scores: list[NodeScore]) -> Status | None:
        if skip_selector_spread(pod):
            return None
        snapshot = self._handle.snapshot()
        zones: list[str] = []
        counts_by_zone: dict[str, int] = {}
        max_count_by_node = 0
        for s in scores:
            max_count_by_node = max(max_count_by_node, s.score)
            node_info = snapshot.get(s.name)
            if node_info is None:
                return Status(Code.Error, f'getting node "{s.name}" from Snapshot: not found')
            zone = zone_key(node_info.node)
            zones.append(zone)
            if zone:
                counts_by_zone[zone] = counts_by_zone.get(zone, 0) + s.score
        max_count_by_zone = max(counts_by_zone.values(), default=0)
        have_zones = bool(counts_by_zone)

        max_score = float(MAX_NODE_SCORE)
        for s, zone in zip(scores, zones):
            f_score = max_score
            if max_count_by_node > 0:
                f_score = max_score * (float(max_count_by_node - s.score) / float(max_count_by_node))
            if have_zones and zone:
                zone_score = max_score
                if max_count_by_zone > 0:
                    zone_score = max_score * (float(max_count_by_zone - counts_by_zone[zone]) / float(max_count_by_zone))
                f_score = (f_score * (1.0 - ZONE_WEIGHTING)) + (ZONE_WEIGHTING * zone_score)
            s.score = int(f_score)
        return None


PLUGINS = [SelectorSpread]
