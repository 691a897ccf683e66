"""Scores of the feasible placements of a gang (KEP-5732's PlacementScore plugins,
equal weights, plus ksched's best fit). Pure, integer arithmetic.

- PodGroupPodsCount (upstream): scheduled + proposed members, normalized to
  MinScore + count * (MaxScore - MinScore) / max over the placements.
- NodeResourcesFit over the placement (upstream names MostAllocated): cpu and memory
  requested after the placement over the placement's allocatable, each
  requested * 100 / allocatable, averaged with equal weights.
- BestFit (ksched, Kueue TAS's BestFit): the placement left with the least free cpu
  (then memory) after the group scores MaxScore, the one left with the most MinScore,
  linearly between, so a big empty domain is not fragmented while a fuller one fits."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

from framework.types import MAX_NODE_SCORE

MIN_SCORE = 0
# upstream's PodGroupPodsCount.NormalizePlacementScore error
NO_PODS_ASSIGNED = "no pods from pod group are assigned to any of the candidate placements"


@dataclass(frozen=True, slots=True)
class Capacity:
    """A node's (or a domain's, summed) allocatable and free cpu (millicores) and memory (bytes)."""

    alloc_cpu: int
    alloc_memory: int
    free_cpu: int
    free_memory: int

    @staticmethod
    def total(parts: Iterable["Capacity"]) -> "Capacity":
        a = b = c = d = 0
        for p in parts:
            a += p.alloc_cpu
            b += p.alloc_memory
            c += p.free_cpu
            d += p.free_memory
        return Capacity(a, b, c, d)


def pods_count_scores(counts: Sequence[int]) -> list[int]:
    """PodGroupPodsCount's normalization of (scheduled + proposed) per placement;
    every count 0 is upstream's error (NO_PODS_ASSIGNED), raised as ValueError."""
    top = max(counts, default=0)
    if top <= 0:
        raise ValueError(NO_PODS_ASSIGNED)
    return [MIN_SCORE + c * (MAX_NODE_SCORE - MIN_SCORE) // top for c in counts]


def most_allocated_score(cap: Capacity, used_cpu: int, used_memory: int) -> int:
    parts = []
    for alloc, free, used in ((cap.alloc_cpu, cap.free_cpu, used_cpu), (cap.alloc_memory, cap.free_memory, used_memory)):
        if alloc <= 0:
            continue
        requested = min(alloc, alloc - free + used)
        parts.append(requested * MAX_NODE_SCORE // alloc)
    return sum(parts) // len(parts) if parts else MIN_SCORE


def best_fit_scores(left: Sequence[tuple[int, int]]) -> list[int]:
    """`left`: (free cpu, free memory) after placing the group, per placement."""
    if not left:
        return []
    lo, hi = min(left), max(left)
    if lo == hi:
        return [MAX_NODE_SCORE for _ in left]
    span_cpu = hi[0] - lo[0]
    out = []
    for cpu, mem in left:
        if span_cpu:
            out.append(MAX_NODE_SCORE - (cpu - lo[0]) * (MAX_NODE_SCORE - MIN_SCORE) // span_cpu)
        else:
            span_mem = max(m for _, m in left) - min(m for _, m in left)
            out.append(MAX_NODE_SCORE - (mem - min(m for _, m in left)) * (MAX_NODE_SCORE - MIN_SCORE) // span_mem)
    return out


def placement_counts(proposed: Sequence[int], *, scheduled: int) -> list[int]:
    """PodGroupPodsCount's raw score per placement: members already scheduled (bound
    or assumed) plus the placement's proposed members."""
    return [scheduled + p for p in proposed]


def score_placements(feasible: Sequence[tuple[Capacity, int, int, int]], *, scheduled: int) -> list[int]:
    """Total score per feasible placement, given (domain capacity before, members placed,
    their cpu, their memory) each, and the members already scheduled outside the cycle."""
    counts = pods_count_scores(placement_counts([placed for _, placed, _, _ in feasible], scheduled=scheduled))
    fit = [most_allocated_score(c, cpu, mem) for c, _, cpu, mem in feasible]
    best = best_fit_scores([(c.free_cpu - cpu, c.free_memory - mem) for c, _, cpu, mem in feasible])
    return [a + b + c for a, b, c in zip(counts, fit, best)]


__all__ = ["NO_PODS_ASSIGNED", "Capacity", "placement_counts", "best_fit_scores", "most_allocated_score", "pods_count_scores", "score_placements"]
