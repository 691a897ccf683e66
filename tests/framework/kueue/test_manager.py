"""AdmissionState: admit, borrow, reclaim by preemption, release, and the property that
quota is never over-admitted whatever the interleaving of admits, evictions and deletions."""
import os

from hypothesis import HealthCheck, given, settings, strategies as st

from framework.kueue.cycle import Config
from framework.kueue.manager import AdmissionState
from framework.kueue.quota import CohortNode
from framework.kueue.snapshot import QuotaSnapshot
from tests.framework.kueue.builders import cohort, cq, flavor, lq, wl

EXAMPLES = int(os.environ.get("KSCHED_KUEUE_EXAMPLES", "40"))
RECLAIM = {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"}


def _two_teams(**kw) -> AdmissionState:
    s = AdmissionState(kw.pop("config", Config()))
    s.set_objects([flavor("default")],
                  [cq("team-a", "shared", {"default": {"cpu": "4"}}, preemption=RECLAIM, **kw),
                   cq("team-b", "shared", {"default": {"cpu": "4"}}, preemption=RECLAIM, **kw)],
                  [cohort("shared")], [lq("a", "team-a"), lq("b", "team-b")])
    return s


def _run(s: AdmissionState, now: int = 10, cycles: int = 10):
    for i in range(cycles):
        r = s.schedule(now + i)
        for v in r.evicted:  # the owner deletes the victims' pods at once
            s.release(v.key, now + i)


def test_team_borrows_idle_quota_and_owner_reclaims_it():
    s = _two_teams()
    for i in range(8):
        s.add_workload(wl(f"b{i}", "b", "1", created=i))
    _run(s)
    assert len(s.holding("team-b")) == 8  # 4 nominal + 4 borrowed from team-a
    assert s.cache.cluster_queues["team-b"].borrowing(("default", "cpu"))
    s.add_workload(wl("a0", "a", "2", created=100))
    r = s.schedule(200)
    assert {w.key for w in r.evicted} and not r.admitted
    victims = r.evicted
    assert all(v.conditions["Preempted"].reason == "InCohortReclamation" for v in victims)
    assert s.workloads["default/a0"].conditions["QuotaReserved"].reason == "WaitingForPreemptedWorkloads"
    for v in victims:
        s.release(v.key, 201)
    r = s.schedule(202)
    assert [w.key for w in r.admitted] == ["default/a0"]
    assert s.workloads["default/a0"].conditions["Admitted"].status == "True"
    assert sum(w.usage()[("default", "cpu")] for w in s.holding("team-b")) == 6000


def test_strict_fifo_head_blocks_its_queue():
    s = AdmissionState()
    s.set_objects([flavor("default")], [cq("q", "", {"default": {"cpu": "2"}}, strategy="StrictFIFO")], [],
                  [lq("l", "q")])
    s.add_workload(wl("big", "l", "3", created=1))
    s.add_workload(wl("small", "l", "1", created=2))
    _run(s)
    assert not s.holding("q")
    assert s.workloads["default/big"].conditions["QuotaReserved"].message == (
        "couldn't assign flavors to pod set main: insufficient quota for cpu in flavor default, previously "
        "considered podsets requests (0) + current podset request (3) > maximum capacity (2)")


def test_best_effort_fifo_lets_the_next_workload_through():
    s = AdmissionState()
    s.set_objects([flavor("default")], [cq("q", "", {"default": {"cpu": "2"}})], [], [lq("l", "q")])
    s.add_workload(wl("big", "l", "3", created=1))
    s.add_workload(wl("small", "l", "1", created=2))
    _run(s)
    assert [w.name for w in s.holding("q")] == ["small"]
    assert "default/big" in s.queues["q"].inadmissible


def test_fair_sharing_converges_to_the_weights():
    s = _two_teams(config=Config(fair_sharing=True))
    s.set_objects([flavor("default")],
                  [cq("team-a", "shared", {"default": {"cpu": "0"}}, weight="2", preemption=RECLAIM),
                   cq("team-b", "shared", {"default": {"cpu": "0"}}, weight="1", preemption=RECLAIM),
                   cq("lender", "shared", {"default": {"cpu": "12"}})],
                  [cohort("shared")], [lq("a", "team-a"), lq("b", "team-b")])
    for i in range(12):
        s.add_workload(wl(f"a{i}", "a", "1", created=i))
        s.add_workload(wl(f"b{i}", "b", "1", created=i))
    _run(s, cycles=30)
    assert (len(s.holding("team-a")), len(s.holding("team-b"))) == (8, 4)


def _check_never_over_admitted(s: AdmissionState) -> None:
    fresh = QuotaSnapshot.build(s.cluster_queues.values(), s.cohorts.values(), s.flavors.values(),
                           [w for w in s.workloads.values() if w.holds_quota])
    nodes = list(s.cache.cluster_queues.values()) + list(s.cache.cohorts.values())
    for n in nodes:
        other = fresh.cluster_queues.get(n.name) if not isinstance(n, CohortNode) else fresh.cohorts[n.name]
        assert {k: v for k, v in n.usage.items() if v} == {k: v for k, v in other.usage.items() if v}, n.name
        for fr in n.subtree:
            assert n.raw_available(fr) >= 0, (n.name, fr, n.usage, n.subtree)


OPS = st.lists(st.tuples(st.sampled_from(["add", "cycle", "release", "finish", "delete", "timeout"]),
                         st.integers(0, 2), st.integers(1, 5), st.integers(0, 3)), min_size=5, max_size=60)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)
@given(OPS, st.booleans())
def test_quota_is_never_over_admitted(ops, fair):
    s = AdmissionState(Config(fair_sharing=fair))
    s.set_objects([flavor("default")],
                  [cq("q0", "root", {"default": {"cpu": ("4", "2", None)}}, preemption=RECLAIM),
                   cq("q1", "sub", {"default": {"cpu": ("3", None, "1")}}, preemption=RECLAIM),
                   cq("q2", "sub", {"default": {"cpu": "2"}})],
                  [cohort("root"), cohort("sub", "root")], [lq(f"l{i}", f"q{i}") for i in range(3)])
    n = 0
    for t, (op, q, size, prio) in enumerate(ops):
        keys = sorted(s.workloads)
        pick = keys[(q * 7 + size) % len(keys)] if keys else None
        if op == "add":
            s.add_workload(wl(f"w{n}", f"l{q}", str(size), priority=prio, created=t))
            n += 1
        elif op == "cycle":
            s.schedule(t)
        elif op == "release" and pick:
            if s.workloads[pick].evicted:
                s.release(pick, t)
        elif op == "finish" and pick and s.workloads[pick].admission is not None:
            s.finish(pick, t)
        elif op == "delete" and pick:
            s.delete_workload(pick)
        elif op == "timeout" and pick:
            s.evict(pick, "PodsReadyTimeout", "Exceeded the PodsReady timeout", t)
        _check_never_over_admitted(s)


def test_a_workload_pushed_again_while_queued_is_handed_out_once():
    from framework.kueue.queues import ClusterQueueQueue
    q = ClusterQueueQueue("q")
    a, b = wl("a", "l", created=1), wl("b", "l", created=2)
    q.push(a)
    q.push(b)
    q.requeue(q.pop(), "NoFit")  # a parked
    q.requeue_inadmissible()  # a back
    q.push(a)  # pushed again while queued: still once
    got = [q.pop(), q.pop(), q.pop()]
    assert [w.name if w else None for w in got] == ["a", "b", None]


def test_a_cluster_queue_without_namespace_selector_admits_no_namespace_and_an_empty_one_admits_all():
    s = AdmissionState()
    s.set_objects([flavor("default")], [cq("none", "", namespace_selector=None), cq("all", "")], [],
                  [lq("n", "none"), lq("a", "all")])
    s.add_workload(wl("w-none", "n", created=1))
    s.add_workload(wl("w-all", "a", created=2))
    _run(s)
    assert [w.name for w in s.holding("all")] == ["w-all"] and not s.holding("none")
    reserved = s.workloads["default/w-none"].conditions["QuotaReserved"]
    assert (reserved.status, reserved.reason, reserved.message) == (
        "False", "Misconfigured", "workload namespace doesn't match ClusterQueue selector")
