"""NodeAffinity: spec.nodeSelector and required node affinity filter nodes;
preferred node affinity scores them. Args `addedAffinity` add scheduler-enforced
terms on top of every pod's own (upstream's NodeAffinityArgs)."""
from __future__ import annotations

import re
from dataclasses import dataclass
from collections.abc import Mapping
from typing import Any, Hashable, Sequence

from framework.api.errors import ValidationError
from framework.api.labels import LabelSelector, NodeSelector, NodeSelectorTerm, parse_node_selector_term
from framework.api.objects import Node, Pod
from framework.cache import NodeInfo
from framework.interface import (SKIP, ActionType, ClusterEvent, ClusterEventWithHint, Code, CycleState, FilterReads,
                                 PreFilterResult, QueueingHint, SignPurpose, Status)
from framework.plugins.helper import DEFAULT_NORMALIZER, DefaultNormalizer
from framework.plugins.helper.hints import HintError, as_objects
from framework.plugins.helper.signing import ALL_SIGNED, ANY_POD_EVENT

ERR_REASON_POD = "node(s) didn't match Pod's node affinity/selector"
ERR_REASON_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
ERR_REASON_CONFLICT = "pod affinity terms conflict"
PRE_FILTER_STATE_KEY = "PreFilterNodeAffinity"
PRE_SCORE_STATE_KEY = "PreScoreNodeAffinity"
_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
_PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"

# --- label syntax (apimachinery validation), which upstream checks when it parses terms --

_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


def label_key_error(key: str) -> str | None:
    """Why `key` is not a qualified name ("prefix/name" or "name"), or None."""
    parts = key.split("/")
    if len(parts) > 2:
        return "a qualified name must consist of an optional DNS subdomain prefix and a name, separated by '/'"
    if len(parts) == 2:
        prefix, name = parts
        if not prefix:
            return "prefix part must be non-empty"
        if len(prefix) > 253 or not _DNS1123_SUBDOMAIN.fullmatch(prefix):
            return "prefix part must be a lowercase RFC 1123 subdomain"
    else:
        name = parts[0]
    if not name:
        return "name part must be non-empty"
    if len(name) > 63:
        return "name part must be no more than 63 characters"
    if not _LABEL_VALUE.fullmatch(name):
        return ("name part must consist of alphanumeric characters, '-', '_' or '.', "
                "and must start and end with an alphanumeric character")
    return None


def label_value_error(value: str) -> str | None:
    if len(value) > 63:
        return "must be no more than 63 characters"
    if not _LABEL_VALUE.fullmatch(value):
        return ("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
                "and must start and end with an alphanumeric character")
    return None


def term_parse_errors(raw: Mapping[str, Any], path: str) -> list[ValidationError]:
    """What upstream's nodeaffinity parser rejects in a term beyond what
    labels.parse_node_selector_term already refuses: label key and value syntax,
    and matchFields requirements without exactly one value."""
    errs: list[ValidationError] = []
    for i, expr in enumerate(raw.get("matchExpressions") or []):
        p = f"{path}.matchExpressions[{i}]"
        if (why := label_key_error(expr.get("key", ""))) is not None:
            errs.append(ValidationError(f"{p}.key", why))
        for j, v in enumerate(expr.get("values") or []):
            if (why := label_value_error(v)) is not None:
                errs.append(ValidationError(f"{p}.values[{j}]", f"Invalid value: {v!r}: {why}"))
    for i, req in enumerate(raw.get("matchFields") or []):
        if len(req.get("values") or []) != 1:
            errs.append(ValidationError(f"{path}.matchFields[{i}].values", "must have one element"))
    return errs


def _is_empty(term: NodeSelectorTerm) -> bool:
    return not term.expressions and not term.fields


# --- parsed forms ------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class PreferredTerms:
    """Weighted terms; a node scores the sum of the weights of the terms it matches."""

    terms: tuple[tuple[int, NodeSelectorTerm], ...]

    def score(self, node: Node) -> int:
        return sum(w for w, t in self.terms if t.matches(node.labels, node.name))


@dataclass(frozen=True, slots=True)
class RequiredNodeAffinity:
    """spec.nodeSelector ANDed with the required terms (ORed). Terms upstream could
    not parse are kept out: they match no node (upstream's lazy-error selector)."""

    label_selector: LabelSelector | None  # None: no nodeSelector entries
    terms: tuple[NodeSelectorTerm, ...] | None  # None: no required node affinity
    parse_errors: tuple[str, ...] = ()  # why the terms left out could not be parsed

    def matches(self, node: Node) -> bool:
        if self.label_selector is not None and not self.label_selector.matches(node.labels):
            return False
        if self.terms is None:
            return True
        return any(t.matches(node.labels, node.name) for t in self.terms)

    def matches_or_raise(self, node: Node) -> bool:
        """matches(), but a node that no parsed term matches while some term could
        not be parsed is an error (upstream's RequiredNodeAffinity.Match)."""
        ok = self.matches(node)
        label_ok = self.label_selector is None or self.label_selector.matches(node.labels)
        if not ok and label_ok and self.parse_errors:
            raise HintError("; ".join(self.parse_errors))
        return ok


def _valid_terms(selector: NodeSelector, raw_terms: Sequence[Any], path: str) -> tuple[tuple[NodeSelectorTerm, ...], list[ValidationError]]:
    kept: list[NodeSelectorTerm] = []
    errs: list[ValidationError] = []
    for i, (term, raw) in enumerate(zip(selector.terms, raw_terms)):
        if _is_empty(term):
            continue
        term_errs = term_parse_errors(raw, f"{path}.nodeSelectorTerms[{i}]")
        if term_errs:
            errs.extend(term_errs)
        else:
            kept.append(term)
    return tuple(kept), errs


def _node_affinity_raw(pod: Pod) -> Mapping[str, Any]:
    return pod.affinity.get("nodeAffinity") or {}


def required_node_affinity(pod: Pod) -> RequiredNodeAffinity:
    """upstream's nodeaffinity.GetRequiredNodeAffinity."""
    selector = LabelSelector.from_map(pod.node_selector) if pod.node_selector else None
    terms = None
    if pod.required_node_affinity is not None:
        raw_terms = _node_affinity_raw(pod)[_REQUIRED].get("nodeSelectorTerms") or []
        terms, errs = _valid_terms(pod.required_node_affinity, raw_terms, _REQUIRED)
        return RequiredNodeAffinity(selector, terms, tuple(str(e) for e in errs))
    return RequiredNodeAffinity(selector, terms)


def _preferred_terms(parsed: Sequence[tuple[int, NodeSelectorTerm]], raw: Sequence[Any], path: str) -> PreferredTerms:
    """Terms with weight 0 or nothing in them are dropped unchecked; any other
    term upstream cannot parse makes the whole list an error."""
    kept: list[tuple[int, NodeSelectorTerm]] = []
    errs: list[ValidationError] = []
    for i, ((weight, term), raw_term) in enumerate(zip(parsed, raw)):
        if weight == 0 or _is_empty(term):
            continue
        term_errs = term_parse_errors(raw_term.get("preference") or {}, f"{path}[{i}].preference")
        if term_errs:
            errs.extend(term_errs)
        else:
            kept.append((weight, term))
    if errs:
        raise errs[0]
    return PreferredTerms(tuple(kept))


def pod_preferred_terms(pod: Pod) -> PreferredTerms | None:
    """The pod's preferred terms; None when the pod has no such field.
    Raises ValidationError for a term upstream cannot parse."""
    raw = _node_affinity_raw(pod).get(_PREFERRED)
    if raw is None:
        return None
    return _preferred_terms(pod.preferred_node_affinity, raw, _PREFERRED)


# --- args --------------------------------------------------------------------------------

def _parse_added_affinity(args: Mapping[str, Any] | None) -> tuple[tuple[NodeSelectorTerm, ...] | None, PreferredTerms | None]:
    """NodeAffinityArgs.addedAffinity -> (required terms or None, preferred terms or None)."""
    added = (args or {}).get("addedAffinity")
    if added is None:
        return None, None
    if not isinstance(added, Mapping):
        raise ValidationError("addedAffinity", "must be an object")
    required = None
    if (raw_req := added.get(_REQUIRED)) is not None:
        path = f"addedAffinity.{_REQUIRED}"
        selector = NodeSelector.parse(raw_req, path)
        required, errs = _valid_terms(selector, raw_req["nodeSelectorTerms"], path)
        if errs:
            raise errs[0]
    preferred = None
    raw_pref = added.get(_PREFERRED)
    if raw_pref:
        path = f"addedAffinity.{_PREFERRED}"
        if not isinstance(raw_pref, list):
            raise ValidationError(path, "must be a list")
        parsed: list[tuple[int, NodeSelectorTerm]] = []
        for i, p in enumerate(raw_pref):
            pf = f"{path}[{i}]"
            if not isinstance(p, Mapping):
                raise ValidationError(pf, "must be an object")
            weight = p.get("weight", 0)
            if not isinstance(weight, int) or isinstance(weight, bool):
                raise ValidationError(f"{pf}.weight", "must be an integer")
            parsed.append((weight, parse_node_selector_term(p.get("preference") or {}, f"{pf}.preference")))
        preferred = _preferred_terms(parsed, raw_pref, path)
    return required, preferred


# --- the plugin --------------------------------------------------------------------------

class NodeAffinity:
    name = "NodeAffinity"

    filter_reads = FilterReads.NODE  # FilterReadsPlugin: the node alone decides
    score_node_local = True  # NodeLocalScorePlugin: the preferred terms the node's labels match

    def monotone_events(self, pod: Pod) -> Sequence[ClusterEvent]:
        """No pod event changes a verdict that reads only the node (MonotoneEventsPlugin)."""
        return (ANY_POD_EVENT,)

    def sign_pod(self, pod: Pod, purpose: SignPurpose) -> Hashable | None:
        """Reads nothing of the pod beyond the common signature (SignPlugin)."""
        return ALL_SIGNED

    def __init__(self, added_terms: tuple[NodeSelectorTerm, ...] | None, added_preferred: PreferredTerms | None,
                 queueing_hints: bool = True) -> None:
        self._added_terms = added_terms  # scheduler-enforced required terms, ORed
        self._added_preferred = added_preferred
        self._queueing_hints = queueing_hints

    @classmethod
    def new(cls, args: dict[str, Any] | None, handle: Any) -> "NodeAffinity":
        features = getattr(handle, "features", None)
        hints = features.enabled("SchedulerQueueingHints") if features is not None else True
        return cls(*_parse_added_affinity(args), queueing_hints=hints)

    def _matches_added(self, node: Node) -> bool:
        return self._added_terms is None or any(t.matches(node.labels, node.name) for t in self._added_terms)

    # --- queueing ------------------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        action = ActionType.Add | ActionType.UpdateNodeLabel
        if not self._queueing_hints:  # upstream's preCheck may drop Node/Add: taint updates too
            action |= ActionType.UpdateNodeTaint
        return [ClusterEventWithHint(ClusterEvent("Node", action), self.is_schedulable_after_node_change)]

    def is_schedulable_after_node_change(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        """Queue when the new node matches and (for updates) the old one did not."""
        old, new = as_objects(Node, old, new)
        if not self._matches_added(new):
            return QueueingHint.QueueSkip
        required = required_node_affinity(pod)
        if not required.matches_or_raise(new):
            return QueueingHint.QueueSkip
        if old is None or not required.matches_or_raise(old):
            return QueueingHint.Queue
        return QueueingHint.QueueSkip

    # --- filtering -----------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> tuple[PreFilterResult | None, Status | None]:
        required = pod.required_node_affinity
        if required is None and self._added_terms is None and pod.spec.get("nodeSelector") is None:
            return None, SKIP
        state.write(PRE_FILTER_STATE_KEY, required_node_affinity(pod))
        if required is None or not required.terms:
            return None, None
        names = _node_names_of_terms(required.terms)
        if names is None:
            return None, None
        if not names:
            return None, Status(Code.UnschedulableAndUnresolvable, ERR_REASON_CONFLICT)
        return PreFilterResult(names), None

    def pre_filter_extensions(self) -> None:
        return None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        node = node_info.node
        if node is None:
            return Status.error_of("node not found")
        if not self._matches_added(node):
            return Status(Code.UnschedulableAndUnresolvable, ERR_REASON_ENFORCED)
        required = state.get(PRE_FILTER_STATE_KEY)
        if required is None:  # PreFilter disabled: compute it here
            required = required_node_affinity(pod)
        if not required.matches(node):
            return Status(Code.UnschedulableAndUnresolvable, ERR_REASON_POD)
        return None

    def filter_nodes(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> list[Status | None]:
        required = state.get(PRE_FILTER_STATE_KEY)
        if required is None:
            return [self.filter(state, pod, ni) for ni in nodes]
        out: list[Status | None] = []
        for ni in nodes:
            node = ni.node
            ok = node is not None and self._matches_added(node) and required.matches(node)
            out.append(None if ok else self.filter(state, pod, ni))
        return out

    # --- scoring -------------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> Status | None:
        try:
            preferred = pod_preferred_terms(pod)
        except ValidationError as err:
            return Status.error_of(err)
        if preferred is None and self._added_preferred is None:
            return SKIP
        state.write(PRE_SCORE_STATE_KEY, _PreScoreState(preferred))
        return None

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]:
        node = node_info.node
        if node is None:
            return 0, Status.error_of("node not found")
        count = self._added_preferred.score(node) if self._added_preferred is not None else 0
        s = state.get(PRE_SCORE_STATE_KEY)
        if s is None:  # PreScore disabled: compute it here
            try:
                s = _PreScoreState(pod_preferred_terms(pod))
            except ValidationError as err:
                return 0, Status.error_of(err)
        if s.preferred is not None:
            count += s.preferred.score(node)
        return count, None

    def score_nodes(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> tuple[list[int], Status | None]:
        s = state.get(PRE_SCORE_STATE_KEY)
        if s is None or any(ni.node is None for ni in nodes):
            out: list[int] = []
            for ni in nodes:
                score, st = self.score(state, pod, ni)
                if st is not None:
                    return [], st
                out.append(score)
            return out, None
        added = self._added_preferred
        preferred = s.preferred
        return [(added.score(ni.node) if added is not None else 0) + (preferred.score(ni.node) if preferred is not None else 0)
                for ni in nodes], None

    def score_extensions(self) -> DefaultNormalizer:
        return DEFAULT_NORMALIZER


@dataclass(frozen=True, slots=True)
class _PreScoreState:
    preferred: PreferredTerms | None


def _node_names_of_terms(terms: Sequence[NodeSelectorTerm]) -> set[str] | None:
    """The only node names the terms can match, from matchFields metadata.name In;
    None when some term does not pin names (terms are ORed, so any node may match)."""
    names: set[str] = set()
    for term in terms:
        term_names: set[str] | None = None
        for r in term.fields:
            if r.key == "metadata.name" and r.operator == "In":
                term_names = set(r.values) if term_names is None else term_names & r.values
        if term_names is None:
            return None
        names |= term_names
    return names


PLUGINS = [NodeAffinity]
