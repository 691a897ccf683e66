"""Never a partial gang, over randomized workloads (hypothesis).

Random clusters, groups (sizes, extra members, priorities, same-second creation
times), plain pods, members and plain pods requesting no cpu at all, plugin args
(Permit's wait drawn from the shipped default, left unset, and shorter ones),
with and without Unreserve enabled, and random
activeQ interleavings (standing in for the backoff and flush timing that mixes
groups in a real queue). After every scheduling cycle, each group has either no
member bound or at least minMember bound (finished members still count: they
were bound together), and a member binds only while minMember of its group are
reserved or bound. Binding cycles finish a random number of cycles after
their Permit decision, as they run concurrently with the scheduling loop.

The count the invariant reads is held to the harness's own record of binds at
every cycle, so a count that saw nothing (always 0, "no member bound") fails.
"""
from __future__ import annotations

import random

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from framework.api.objects import POD_GROUP_LABEL
from tests.gang.harness import GangHarness, node, pod, pod_group, profile

group_st = st.fixed_dictionaries({
    "min": st.integers(1, 4),
    "extra": st.integers(0, 2),
    "cpus": st.lists(st.integers(0, 4), min_size=1, max_size=3),  # 0: a member requesting no cpu
    "priority": st.sampled_from([0, 10]),
    "created": st.integers(0, 2),
    "timeout": st.sampled_from([None, 3, 30]),
})

workload_st = st.fixed_dictionaries({
    "nodes": st.lists(st.integers(2, 8), min_size=1, max_size=4),
    "groups": st.lists(group_st, min_size=1, max_size=4),
    "plain": st.lists(st.integers(0, 3), max_size=3),
    "args": st.fixed_dictionaries({
        "podGroupRejectPercentage": st.sampled_from([0, 10, 50, 100]),
        "podGroupBackoffSeconds": st.sampled_from([0, 1]),
        # None: not set, so the plugin's default (60 s) applies.
        "permitWaitingTimeSeconds": st.sampled_from([None, 60, 2, 10]),
    }),
    "reserve": st.booleans(),
    "shuffle": st.booleans(),
    "seed": st.integers(0, 10_000),
    "finish": st.floats(0, 1),
})


def group_counts(h: GangHarness, group: str) -> int:
    """Members bound (finished ones included) or allowed and being bound."""
    bound = {p.key for p in h.objects.list("Pod") if p.node_name and p.labels.get(POD_GROUP_LABEL) == group}
    flying = {p.key for p in h.in_flight() if p.labels.get(POD_GROUP_LABEL) == group}
    return len(bound | flying)


def bound_by_record(h: GangHarness, group: str) -> int:
    """Members of the group the harness has recorded a bind for."""
    return len({key for kind, key, _ in h.record.events
                if kind == "bind" and h.pod(key).labels.get(POD_GROUP_LABEL) == group})


def check_no_partial_gang(mins: dict[str, int]):  # noqa: ANN201
    def check(h: GangHarness) -> None:
        for g, mm in mins.items():
            n = group_counts(h, g)
            assert n >= bound_by_record(h, g), f"group {g}: counted {n}, fewer than the binds recorded"
            assert n == 0 or n >= mm, f"group {g} has {n} members bound, minMember {mm}"
    return check


def build(w: dict) -> tuple[GangHarness, dict[str, int]]:
    args = {k: v for k, v in w["args"].items() if v is not None}
    h = GangHarness([node(f"n{i}", c) for i, c in enumerate(w["nodes"])], profile(args, reserve=w["reserve"]),
                    seed=w["seed"])
    rnd = random.Random(w["seed"])
    if w["shuffle"]:
        h.pick = lambda keys: keys[rnd.randrange(len(keys))]
    delays = random.Random(w["seed"] + 7)
    h.bind_delay = lambda: delays.choice([0, 0, 1, 2, 4])
    mins: dict[str, int] = {}
    raws = []
    for i, g in enumerate(w["groups"]):
        name = f"g{i}"
        mins[name] = g["min"]
        h.add_group(pod_group(name, g["min"], timeout=g["timeout"], created=f"2026-01-01T00:00:0{g['created']}Z"))
        for j in range(g["min"] + g["extra"]):
            raws.append(pod(f"{name}-{j}", g["cpus"][j % len(g["cpus"])], name, g["priority"]))
    raws += [pod(f"plain-{k}", c) for k, c in enumerate(w["plain"])]
    rnd.shuffle(raws)
    for r in raws:
        h.add_pod(r)
        if rnd.random() < 0.3:
            h.run_cycles(1)  # members arrive while others are being scheduled
    return h, mins


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workload_st)
def test_no_group_ever_has_fewer_than_min_member_bound(w: dict) -> None:
    h, mins = build(w)
    h.on_cycle.append(check_no_partial_gang(mins))
    h.run(max_cycles=3000, max_seconds=120)
    rnd = random.Random(w["seed"] + 1)
    for key in h.bound():
        if rnd.random() < w["finish"]:
            h.complete(key)
    h.run(max_cycles=3000, max_seconds=120)
    check_no_partial_gang(mins)(h)
    assert not h.waiting or h.cycles >= 3000 or all(wp.decided is None for wp in h.waiting)


contention_st = st.fixed_dictionaries({
    "nodes": st.lists(st.integers(2, 8), min_size=1, max_size=4),
    "cpu": st.integers(1, 3),
    "sizes": st.lists(st.integers(1, 6), min_size=2, max_size=4),
    "pct": st.sampled_from([0, 10, 50, 100]),
    "seed": st.integers(0, 10_000),
})


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(contention_st)
def test_gangs_that_each_fit_alone_never_deadlock(w: dict) -> None:
    # Groups of same-sized members, each fitting the empty cluster alone but not
    # necessarily together, popped in a random interleaving: within the first
    # Permit timeout some group binds completely, and every group binds once the
    # groups before it complete.
    slots = sum(c // w["cpu"] for c in w["nodes"])
    assume(slots > 0)
    sizes = [min(s, slots) for s in w["sizes"]]  # each group fits the empty cluster alone
    h = GangHarness([node(f"n{i}", c) for i, c in enumerate(w["nodes"])],
                    profile({"podGroupRejectPercentage": w["pct"], "permitWaitingTimeSeconds": 30}), seed=w["seed"])
    rnd = random.Random(w["seed"])
    h.pick = lambda keys: keys[rnd.randrange(len(keys))]
    for g, size in enumerate(sizes):
        h.add_group(pod_group(f"g{g}", size, timeout=30))
    members = [pod(f"g{g}-{j}", w["cpu"], f"g{g}") for g, size in enumerate(sizes) for j in range(size)]
    rnd.shuffle(members)
    for m in members:
        h.add_pod(m)
    mins = {f"g{g}": s for g, s in enumerate(sizes)}
    h.on_cycle.append(check_no_partial_gang(mins))
    start = h.clock
    for _ in range(len(sizes)):
        h.run(max_cycles=20_000, max_seconds=29)
        assert h.clock - start < 30, "a Permit timeout was needed"
        done = [g for g in mins if group_counts(h, g) >= mins[g]]
        assert done, "no group bound within the first Permit timeout"
        for key in h.bound():
            h.complete(key)
        for g in done:
            del mins[g]
        if not mins:
            break
        start = h.clock
    assert not mins
