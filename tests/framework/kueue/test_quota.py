"""The quota tree: queues.md §5's worked example, lending limits and borrowing limits."""
from framework.kueue.quota import available
from framework.kueue.snapshot import QuotaSnapshot
from tests.framework.kueue.builders import cohort, cq, flavor, wl

FR = ("default", "cpu")


def _admitted(name: str, cq_name: str, cpu_milli: int):
    w = wl(name, "q")
    from framework.kueue.workload import Admission, PodSetAssignment
    w.admission = Admission(cq_name, [PodSetAssignment("main", {"cpu": "default"}, {"cpu": cpu_milli}, 1)])
    return w


def test_lending_limit_keeps_part_private_worked_example():
    a = cq("a", "r", {"default": {"cpu": ("10", None, "4")}})
    b = cq("b", "r", {"default": {"cpu": "5"}})
    s = QuotaSnapshot.build([a, b], [cohort("r")], [flavor("default")],
                       [_admitted("a1", "a", 3000), _admitted("b1", "b", 5000)])
    r = s.cohorts["r"]
    assert r.subtree[FR] == 9000 and r.usage[FR] == 5000  # A's 3 stay in its private 6
    assert available(s.cluster_queues["b"], FR) == 4000
    assert s.cluster_queues["b"].potential_available(FR) == 9000
    assert available(s.cluster_queues["a"], FR) == 7000


def test_usage_charges_the_parent_only_beyond_the_private_part():
    a = cq("a", "r", {"default": {"cpu": ("10", None, "4")}})
    s = QuotaSnapshot.build([a, cq("b", "r", {"default": {"cpu": "5"}})], [cohort("r")], [flavor("default")])
    qa = s.cluster_queues["a"]
    qa.add_usage(FR, 8000)
    assert s.cohorts["r"].usage[FR] == 2000
    qa.remove_usage(FR, 8000)
    assert s.cohorts["r"].usage[FR] == 0 and qa.usage[FR] == 0


def test_borrowing_limit_caps_what_a_queue_takes_from_the_cohort():
    a = cq("a", "r", {"default": {"cpu": ("2", "1", None)}})
    s = QuotaSnapshot.build([a, cq("b", "r", {"default": {"cpu": "10"}})], [cohort("r")], [flavor("default")])
    assert available(s.cluster_queues["a"], FR) == 3000
    assert s.cluster_queues["a"].potential_available(FR) == 3000


def test_no_cohort_means_nominal_only():
    s = QuotaSnapshot.build([cq("a", "", {"default": {"cpu": "2"}})], [], [flavor("default")], [_admitted("x", "a", 500)])
    assert available(s.cluster_queues["a"], FR) == 1500
