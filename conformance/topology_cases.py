"""Topology placement cases (TopologyPlacement-plugin.json beside this file), run by
the gang driver (gang_cases.py):

- `GeneratePlacements`: upstream's TestGeneratePlacements rows (the PodGroup ones;
  the CompositePodGroup rows need an API ksched does not serve). `input.topologyKey`
  is the PodGroup's constraint ("" for none), `input.placementNodes` the parent
  placement's nodes and `input.otherNodes` the rest of the snapshot (each {name,
  labels}), `input.scheduledPods` the members already placed ({name, node}).
  framework/workload/topology.py's `generate_placements` runs over a LabelledNodes of
  them. Output: the code and each placement's node names ({parent name: its nodes}
  when the parent placement is returned unchanged).
- `PodGroupPodsCountScore`: upstream's TestScorePlacement rows: `input.assigned`,
  `input.assumed` (members bound or assumed) and `input.proposed` (the placement's
  assignments) give the raw score (score_placements' count). Output: {score}.
- `PodGroupPodsCountNormalize`: upstream's TestNormalizePlacementScore rows over
  `input.scores`; topology_score.py's `pods_count_scores`. Output: the code and the
  normalized scores, or the Error's message.

Expectations are read only to compare."""
from __future__ import annotations

from typing import Any

from framework.interface import Code
from framework.workload.topology import LabelledNodes, generate_placements
from framework.workload.topology_score import Capacity, placement_counts, pods_count_scores
from conformance.plugin_cases import CaseError

FUNCTIONS = ("GeneratePlacements", "PodGroupPodsCountScore", "PodGroupPodsCountNormalize")
NAMESPACE = "default"


def _nodes(raw: Any, at: str) -> list[tuple[str, dict[str, str]]]:
    if not isinstance(raw, list):
        raise CaseError(f"{at}: want a list of {{name, labels}}")
    return [(str(n["name"]), {str(k): str(v) for k, v in (n.get("labels") or {}).items()}) for n in raw]


def _no_capacity(name: str) -> Capacity:
    return Capacity(0, 0, 0, 0)


def run_topology_case(case: dict[str, Any]) -> dict[str, Any]:
    inp = case.get("input") or {}
    if case.get("function") == "GeneratePlacements":
        placement = _nodes(inp.get("placementNodes") or [], "input.placementNodes")
        others = _nodes(inp.get("otherNodes") or [], "input.otherNodes")
        pinned = [(f"{NAMESPACE}/{p['name']}", str(p["node"])) for p in inp.get("scheduledPods") or []]
        view = LabelledNodes(placement, _no_capacity, others)
        domains, status = generate_placements(str(inp.get("topologyKey") or ""), view, pinned)
        out: dict[str, Any] = {"code": status.code.name}
        if status.is_success():
            if domains is None:
                out["placements"] = {str(inp.get("parentPlacement", "")): [n for n, _ in placement]}
            else:
                out["placements"] = {d.value: list(d.nodes) for d in domains}
        return out
    if case.get("function") == "PodGroupPodsCountScore":
        scheduled = int(inp.get("assigned", 0)) + int(inp.get("assumed", 0))
        return {"score": placement_counts([int(inp.get("proposed", 0))], scheduled=scheduled)[0]}
    if case.get("function") == "PodGroupPodsCountNormalize":
        try:
            return {"code": Code.Success.name, "scores": pods_count_scores([int(x) for x in inp.get("scores") or []])}
        except ValueError as e:
            return {"code": Code.Error.name, "message": str(e)}
    raise CaseError(f"unknown topology function {case.get('function')!r}")


__all__ = ["FUNCTIONS", "run_topology_case"]
