"""Function cases: one named piece of the algorithm run on the case's input."""
from __future__ import annotations

import random
from typing import Any

from framework.algorithm import num_feasible_nodes_to_find
from framework.host_selection import EMPTY_PRIORITY_LIST, select_host
from framework.interface import NodePluginScores
from conformance.extenders import FUNCTIONS as EXTENDER_FUNCTIONS


def run_num_feasible_nodes_to_find(case: dict[str, Any]) -> dict[str, Any]:
    inp = case["input"]
    return {"numNodes": num_feasible_nodes_to_find(inp.get("percentageOfNodesToScore"), inp["numAllNodes"])}


def run_select_host(case: dict[str, Any]) -> dict[str, Any]:
    scores = [NodePluginScores(s["name"], total_score=s["score"]) for s in case["input"].get("scores") or []]
    try:
        return {"oneOf": select_host(scores, random.Random())}
    except ValueError:
        return {"oneOf": None, "error": EMPTY_PRIORITY_LIST}


FUNCTIONS = {
    "numFeasibleNodesToFind": run_num_feasible_nodes_to_find,
    "selectHost": run_select_host,
    **EXTENDER_FUNCTIONS,
}
