"""Explain: a dry run of one pod through the same runtime a scheduling cycle uses.

PreFilter is the algorithm's (framework.algorithm.pre_filter); every node then gets
the cycle's Filter (`run_filter_with_nominated_pods`: pods nominated to the node
count, an Error is worded and named as in a cycle); the feasible nodes go through
the cycle's filter extenders, PreScore and Score (`run_score`, with its range checks
and weights; its trace gives each plugin's raw and normalized scores) and the
prioritizing extenders; the host is selected as a cycle selects it. Unlike a cycle,
every node is filtered (not only as many as percentageOfNodesToScore asks for), so
each node has its verdict, and nothing is assumed or changed.

The report: per node its PreFilter exclusion or its Filter verdicts (the plugins
that passed, then the one that rejected), each extender's verdict, each score and
the total; the node chosen, or the FitError message, or the error that would fail
the attempt.
"""
from __future__ import annotations

import random
from typing import Any, Sequence

from framework.algorithm import pre_filter
from framework.api.objects import Pod
from framework.attempt_outcome import NO_NODES_AVAILABLE, Diagnosis, FitError, SchedulingError
from framework.cache import NodeInfo, Snapshot
from framework.extender import (
    Extender,
    ExtenderError,
    FilterResult,
    add_extender_scores,
    find_nodes_that_pass_extenders,
    scaled_extender_score,
)
from framework.host_selection import select_host
from framework.interface import Code, CycleState, NodePluginScores, Status
from framework.runtime import Framework

EXCLUDED_BY_PRE_FILTER = {"code": "UnschedulableAndUnresolvable", "reasons": ["excluded by PreFilter result"]}


async def explain(fwk: Framework, pod: Pod, snapshot: Snapshot, extenders: Sequence[Extender] = (),
                  rand: random.Random | None = None) -> dict[str, Any]:
    """Dry-run `pod` on `snapshot` with `fwk` (and the configured `extenders`)."""
    state = CycleState()
    fwk.handle.set_snapshot(snapshot)
    nodes_out: dict[str, dict[str, Any]] = {ni.name: {"filters": {}, "feasible": False} for ni in snapshot.list()}
    result: dict[str, Any] = {"pod": pod.key, "profile": fwk.profile_name, "nodes": nodes_out, "chosen": None}
    listing = _ExtenderListing(extenders, pod, nodes_out)
    if extenders:
        result["extenders"] = listing.entries
    if snapshot.num_nodes() == 0:
        result["message"] = NO_NODES_AVAILABLE
        return result
    try:
        diagnosis, nodes = pre_filter(fwk, state, pod, snapshot)
    except SchedulingError as e:
        return _pre_filter_refused(result, e.status)
    if nodes is None:
        _pre_filter_refused(result, diagnosis.node_to_status.absent)
        result["message"] = FitError(pod, snapshot.num_nodes(), diagnosis).message()
        return result
    kept = {ni.name for ni in nodes}
    for name, entry in nodes_out.items():
        if name not in kept:
            entry["preFilter"] = dict(EXCLUDED_BY_PRE_FILTER)
    feasible = _filter_every_node(fwk, state, pod, nodes, diagnosis, nodes_out)
    if isinstance(feasible, Status):
        result["error"] = result["message"] = feasible.message()
        return result
    try:
        feasible = await find_nodes_that_pass_extenders(extenders, pod, feasible, diagnosis.node_to_status,
                                                        listing.filtered)
    except ExtenderError as e:
        feasible = listing.refused_all()
        result["error"] = result["message"] = str(e)
        return result
    if not feasible:
        result["message"] = FitError(pod, snapshot.num_nodes(), diagnosis).message()
        return result
    scores = await _scores(fwk, state, pod, feasible, extenders, listing, nodes_out)
    if len(feasible) == 1:  # a cycle takes a lone feasible node unscored: a scoring error is only shown
        result["chosen"] = feasible[0].name
        return result
    if isinstance(scores, Status):
        result["error"] = result["message"] = scores.message()
        return result
    result["chosen"] = select_host(scores, rand or random.Random())
    return result


def _pre_filter_refused(result: dict[str, Any], st: Status) -> dict[str, Any]:
    verdict = {"plugin": st.plugin, **st.to_dict()}
    result["preFilter"] = verdict
    for entry in result["nodes"].values():
        entry["preFilter"] = dict(verdict)
    if st.code == Code.Error:
        result["error"] = result["message"] = st.message()
    return result


def _filter_every_node(fwk: Framework, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo],
                       diagnosis: Diagnosis, nodes_out: dict[str, dict[str, Any]]) -> list[NodeInfo] | Status:
    """The cycle's Filter on every node; the feasible nodes, or the first Error."""
    feasible: list[NodeInfo] = []
    error: Status | None = None
    filter_one = fwk.filtering.run_filter_with_nominated_pods
    for ni in nodes:
        st = filter_one(state, pod, ni)
        entry = nodes_out[ni.name]
        entry["filters"] = _verdicts(fwk, state, st)
        if st.is_success():
            entry["feasible"] = True
            feasible.append(ni)
        elif st.code == Code.Error:
            error = error or st
        else:
            diagnosis.node_to_status.set(ni.name, st)
            diagnosis.add_plugin_status(st)
            detail = _rejection_detail(fwk, state, pod, ni, st)
            if detail is not None:
                entry["claims"] = detail
    return error if error is not None else feasible


def _rejection_detail(fwk: Framework, state: CycleState, pod: Pod, ni: NodeInfo, st: Status) -> Any:
    """The rejecting plugin's own account of the node, when it gives one
    (DynamicResources' `explain_node`: which claim could not be satisfied, and why)."""
    pl = next((p for p in fwk.filtering.filter_plugins if p.name == st.plugin), None)
    detail = getattr(pl, "explain_node", None)
    return detail(state, pod, ni) if detail is not None else None


def _verdicts(fwk: Framework, state: CycleState, st: Status) -> dict[str, dict[str, Any]]:
    """Each Filter plugin's word on one node: the runtime stops at the first that
    does not pass (named in `st.plugin`), so the ones before it passed."""
    out: dict[str, dict[str, Any]] = {}
    for pl in fwk.filtering.filter_plugins:
        if pl.name in state.skip_filter_plugins:
            out[pl.name] = {"code": "Skip"}
        elif not st.is_success() and pl.name == st.plugin:
            out[pl.name] = st.to_dict()
            break
        else:
            out[pl.name] = {"code": "Success"}
    return out


async def _scores(fwk: Framework, state: CycleState, pod: Pod, feasible: list[NodeInfo],
                  extenders: Sequence[Extender], listing: "_ExtenderListing",
                  nodes_out: dict[str, dict[str, Any]]) -> list[NodePluginScores] | Status:
    """PreScore, Score and the prioritizing extenders as in a cycle, each score
    written beside its node; the Error when scoring fails the attempt."""
    for ni in feasible:
        nodes_out[ni.name]["scores"] = {}
    if not fwk.has_score_plugins() and not extenders:
        for ni in feasible:
            nodes_out[ni.name]["totalScore"] = 1
        return [NodePluginScores(ni.name, total_score=1) for ni in feasible]
    st = fwk.run_pre_score(state, pod, feasible)
    if st.is_success():
        def trace(plugin: str, raw: list[int], normalized: list[int], weight: int) -> None:
            for ni, r, n in zip(feasible, raw, normalized):
                nodes_out[ni.name]["scores"][plugin] = {"raw": r, "normalized": n, "weight": weight,
                                                        "weighted": n * weight}

        scores, st = fwk.run_score(state, pod, feasible, trace)
    if not st.is_success():
        for ni in feasible:
            nodes_out[ni.name]["scoreError"] = st.message()
        return st
    entries = list(scores)
    await add_extender_scores(extenders, pod, feasible, entries, listing.prioritized)
    for e in entries:
        nodes_out[e.name]["totalScore"] = e.total_score
    return entries


class _ExtenderListing:
    """What each extender said, for the report: its interest, errors, verdicts and scores."""

    def __init__(self, extenders: Sequence[Extender], pod: Pod, nodes_out: dict[str, dict[str, Any]]) -> None:
        self.nodes_out = nodes_out
        self.by_name: dict[str, dict[str, Any]] = {}
        self.entries: list[dict[str, Any]] = []
        for ext in extenders:
            info = {"name": ext.name, "interested": ext.is_interested(pod), "ignorable": ext.config.ignorable}
            self.by_name[ext.name] = info
            self.entries.append(info)

    def filtered(self, ext: Extender, answer: FilterResult | ExtenderError, asked: Sequence[Any]) -> None:
        if isinstance(answer, ExtenderError):
            self.by_name[ext.name]["filterError"] = str(answer)
            return
        kept = set(answer.nodes)
        for ni in asked:
            out = self.nodes_out[ni.name]
            verdicts = out.setdefault("extenders", {})
            if ni.name in kept:
                verdicts[ext.name] = {"code": "Success"}
                continue
            if ni.name in answer.failed_and_unresolvable:
                st = Status(Code.UnschedulableAndUnresolvable, answer.failed_and_unresolvable[ni.name])
            elif ni.name in answer.failed:
                st = Status(Code.Unschedulable, answer.failed[ni.name])
            else:
                st = Status(Code.Unschedulable, "not kept by the extender")
            verdicts[ext.name] = st.to_dict()
            out["feasible"] = False

    def refused_all(self) -> list[NodeInfo]:
        """A filter extender failed the attempt: no node is feasible."""
        for out in self.nodes_out.values():
            out["feasible"] = False
        return []

    def prioritized(self, ext: Extender, answer: dict[str, int] | BaseException, asked: Sequence[Any]) -> None:
        if isinstance(answer, BaseException):
            self.by_name[ext.name]["prioritizeError"] = str(answer)
            return
        for ni in asked:
            if ni.name in answer:
                raw = answer[ni.name]
                self.nodes_out[ni.name].setdefault("scores", {})[ext.name] = {
                    "raw": raw, "normalized": scaled_extender_score(raw, 1), "weight": ext.config.weight,
                    "weighted": scaled_extender_score(raw, ext.config.weight)}
