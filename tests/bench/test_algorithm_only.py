"""bench/algorithm_only.py: the algorithm-only harness places its pods where cycles
without the node-local columns place them (its digest is the evidence it prints)."""
from __future__ import annotations

from bench.algorithm_only import run


def test_the_harness_places_pods_as_cycles_without_the_columns_do() -> None:
    # 5,000 nodes: windows of 500, ten to a lap; 25 pods read their windows from the columns.
    with_columns = run(5000, 25, columns=True)
    without = run(5000, 25, columns=False)
    assert with_columns[1] == without[1]
    assert with_columns[0] > 0
