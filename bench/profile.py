"""`python -m bench.profile WORKLOAD --nodes N --pods P`: where the measured phase's time goes.

Runs one in-process workload as `ksched bench` does (durable SQLite store unless
`--store memory`), with cProfile on for the measured phase only (set-up is not
profiled), and prints the deterministic counts beside the profile: function calls
per pod, mailbox puts per actor per pod (`Mailbox.puts`), store turns and commits.
The wall-clock figure under the profiler is several times slower than without it;
compare the counts and the shares, not the time (`--no-profile`: counts and the
process CPU time of the phase, without the profiler).
"""
from __future__ import annotations

import argparse
import asyncio
import cProfile
import collections
import io
import json
import pstats
import sys
import time
from typing import Any

from actors.pipeline import Pipeline
from bench.harness import apply_tracked, measured_keys, set_up, until_idle
from bench.measure import BindTracker
from bench.gang import gang_bench_workload
from bench.runner import GANG_APIS, WORKLOADS as RUNNER_WORKLOADS  # scheduler_perf's workloads, the DRA ones too

# The scheduling.k8s.io gang workloads as BenchWorkloads (the bench runs them with its
# own driver); their counts are given per group too.
WORKLOADS = {**RUNNER_WORKLOADS, **{name: gang_bench_workload(api) for name, api in GANG_APIS.items()}}

# The actors of a pipeline whose inboxes are counted, by the name the report gives them.
ACTORS = ("store", "queue", "scheduler", "waiting_room", "preemption", "admission", "resourceclaims",
          "podgroup_status")
# Where a function's cumulative time is reported as one share of the measured phase.
AREAS = {
    "scheduling cycle (Scheduler.schedule_one)": ("actors/scheduler.py", "schedule_one"),
    "the algorithm (SchedulingAlgorithm.schedule)": ("framework/algorithm.py", "schedule"),
    "whole-group cycle (GroupCycle.run)": ("actors/group_cycle.py", "run"),
    "placing a group's members (place_group)": ("framework/workload/group_cycle.py", "place_group"),
    "a group's hand-over to binding (GroupCycle._bind_placed)": ("actors/group_cycle.py", "_bind_placed"),
    "store turns (Store.handle_turn)": ("actors/store/actor.py", "handle_turn"),
    "write chain create (WriteChain.create)": ("actors/store/write_chain.py", "create"),
    "queue actor (QueueActor.handle_turn)": ("actors/queue/actor.py", "handle_turn"),
    "scheduler's store events (ClusterEvents.on_store_change)": ("actors/scheduler_events.py", "on_store_change"),
    "binding cycles (BindingCycles.run)": ("actors/binding.py", "run"),
    "bind outcomes (Outcomes.finish_bindings)": ("actors/scheduler_outcomes.py", "finish_bindings"),
    "watch fan-out (Store._fan_out)": ("actors/store/actor.py", "_fan_out"),
    "event loop select": ("selectors.py", "select"),
    "resourceclaim controller turns (ResourceClaimController.handle_turn)": ("actors/resourceclaims/controller.py",
                                                                            "handle_turn"),
    "resourceclaim syncs (ResourceClaimController._retrying)": ("actors/resourceclaims/controller.py", "_retrying"),
    "DynamicResources PreEnqueue": ("framework/plugins/dynamicresources/dynamic_resources.py", "pre_enqueue"),
    "DynamicResources PreFilter": ("framework/plugins/dynamicresources/dynamic_resources.py", "pre_filter"),
    "DynamicResources Reserve": ("framework/plugins/dynamicresources/dynamic_resources.py", "reserve"),
}


def puts(p: Pipeline) -> dict[str, int]:
    return {name: getattr(getattr(p, name).inbox, "puts", 0) for name in ACTORS if hasattr(p, name)}


def count_types(p: Pipeline) -> dict[str, collections.Counter[str]]:
    """Count the messages each actor's inbox accepts from now on, by message type: the
    inbox's `put` is wrapped on the instance (the class and other pipelines untouched)."""
    counters: dict[str, collections.Counter[str]] = {}
    for name in ACTORS:
        if not hasattr(p, name):
            continue
        inbox = getattr(p, name).inbox
        counter = counters[name] = collections.Counter()

        def counted(msg: Any, put: Any = inbox.put, counter: collections.Counter[str] = counter) -> None:
            put(msg)
            counter[type(msg).__name__] += 1

        inbox.put = counted
    return counters


def per_pod_types(counters: dict[str, collections.Counter[str]], pods: float) -> dict[str, dict[str, float]]:
    return {name: {kind: round(n / pods, 3) for kind, n in c.most_common()} for name, c in counters.items() if c}


async def profile_measured(workload: str, nodes: int, pods: int, store: str,
                           profile: bool = True) -> tuple[dict[str, Any], pstats.Stats | None]:
    """The counts of one measured phase, and its profile (None with `profile` off: then
    `cpu_seconds`, the process's CPU time over the phase, is not inflated by the profiler)."""
    w = WORKLOADS[workload](nodes, pods)
    tracker = BindTracker()
    prof = cProfile.Profile() if profile else None
    async with set_up(w, store, tracker) as p:
        keys = measured_keys(w)
        before_puts, before_commits, before_syncs = puts(p), p.store.commits, _claim_syncs(p)
        by_type = count_types(p)
        print("measured phase begins", file=sys.stderr, flush=True)  # for a sampling profiler to attach
        start, cpu = time.perf_counter(), time.process_time()
        if prof is not None:
            prof.enable()
        await apply_tracked(p.client.apply, w.measured, tracker)
        done = asyncio.ensure_future(tracker.wait(keys, w.expected_bound))
        idle = asyncio.ensure_future(until_idle(p))
        await asyncio.wait({done, idle}, return_when=asyncio.FIRST_COMPLETED)
        if prof is not None:
            prof.disable()
        for f in (done, idle):
            f.cancel()
        elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
        after_puts = puts(p)
        counts = {
            "pods": len(keys), "bound": tracker.bound(keys), "seconds": round(elapsed, 3),
            "cpu_seconds": round(cpu, 3), "profiled": profile,
            "store_commits": p.store.commits - before_commits,
            "puts_per_pod": {name: round((after_puts[name] - before_puts[name]) / len(keys), 3) for name in after_puts},
            "messages_per_pod": per_pod_types(by_type, len(keys)),
            "claim_syncs_per_pod": round((_claim_syncs(p) - before_syncs) / len(keys), 3),
        }
        gang_size = w.extra.get("gang_size")
        if gang_size:
            groups = len(keys) / gang_size
            counts["groups"] = round(groups)
            counts["puts_per_group"] = {name: round((after_puts[name] - before_puts[name]) / groups, 2)
                                        for name in after_puts}
            counts["messages_per_group"] = per_pod_types(by_type, groups)
    if prof is None:
        return counts, None
    stats = pstats.Stats(prof)
    counts["calls_per_pod"] = round(stats.total_calls / len(keys), 1)  # type: ignore[attr-defined]
    if "groups" in counts:
        counts["calls_per_group"] = round(stats.total_calls / counts["groups"], 1)  # type: ignore[attr-defined]
    counts["store_turns"] = _calls(stats, "actors/store/actor.py", "handle_turn")
    counts["queue_turns"] = _calls(stats, "actors/queue/actor.py", "handle_turn") or \
        _calls(stats, "actors/queue/actor.py", "handle")  # before the queue took turns
    counts["areas"] = _areas(stats)
    return counts, stats


def _claim_syncs(p: Pipeline) -> int:
    """The resourceclaim controller's pod and claim syncs run so far (0 without one)."""
    controller = getattr(p, "resourceclaims", None)
    return getattr(controller, "synced", 0)


def _calls(stats: pstats.Stats, file_end: str, func: str) -> int:
    return sum(v[1] for (f, _, name), v in stats.stats.items()  # type: ignore[attr-defined]
               if f.endswith(file_end) and name == func)


def _areas(stats: pstats.Stats) -> dict[str, str]:
    total = stats.total_tt  # type: ignore[attr-defined]
    out = {}
    for label, (file_end, func) in AREAS.items():
        cum = sum(v[3] for (f, _, name), v in stats.stats.items()  # type: ignore[attr-defined]
                  if f.endswith(file_end) and name == func)
        calls = _calls(stats, file_end, func)
        out[label] = f"{100 * cum / total if total else 0.0:.1f} % ({calls} calls)"
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.profile", description=__doc__.splitlines()[0])
    ap.add_argument("workload", choices=sorted(WORKLOADS))
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--pods", type=int, default=2000)
    ap.add_argument("--store", choices=("sqlite", "memory"), default="sqlite")
    ap.add_argument("--top", type=int, default=40, help="functions listed by own time")
    ap.add_argument("--dump", help="write the raw pstats here")
    ap.add_argument("--no-profile", action="store_true", help="counts and CPU time only, no cProfile")
    args = ap.parse_args(argv)
    counts, stats = asyncio.run(profile_measured(args.workload, args.nodes, args.pods, args.store,
                                                 profile=not args.no_profile))
    if stats is None:
        print(json.dumps(counts, indent=1))
        return
    if args.dump:
        stats.dump_stats(args.dump)
    out = io.StringIO()
    stats.stream = out  # type: ignore[attr-defined]
    stats.sort_stats("tottime").print_stats(args.top)
    print(out.getvalue())
    print(json.dumps(counts, indent=1))


if __name__ == "__main__":
    main()
