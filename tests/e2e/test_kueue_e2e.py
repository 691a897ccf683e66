"""Kueue's admission layer against a real `ksched serve` (SQLite, loopback TCP): a team
borrows idle quota, the owner reclaims it by preemption across a kill -9 (quota rebuilt
from the stored Workloads), a gang is admitted whole, fair sharing converges to the weights."""
from __future__ import annotations

from tests.actors.admission.kueue_objects import cluster_queue, flavor, local_queue, node, queued_pod
from tests.e2e.conftest import poll


def _bound(c, prefix: str) -> int:
    items = c.list("Pod")
    items = items[0] if isinstance(items, tuple) else items
    return sum(1 for p in items if p["metadata"]["name"].startswith(prefix) and p["spec"].get("nodeName"))


def _workloads(c) -> list[dict]:
    items = c.list("Workload")
    return items[0] if isinstance(items, tuple) else items


def _holding(c, cq: str) -> list[str]:
    return sorted(w["metadata"]["name"] for w in _workloads(c)
                  if (w.get("status") or {}).get("admission", {}).get("clusterQueue") == cq)


def _wait(fn, what: str):
    return poll(lambda: True if fn() else None, what, attempts=1200)


def two_teams(*extra) -> list[dict]:
    return [flavor("on-demand", tier="on-demand"), cluster_queue("team-a", "shared", "4"),
            cluster_queue("team-b", "shared", "4"), local_queue("a", "team-a"), local_queue("b", "team-b"), *extra]


def test_borrow_then_owner_reclaims_after_kill9_with_quota_rebuilt(daemon_factory, tmp_path):
    d = daemon_factory()
    with d.client() as c:
        c.apply(two_teams(*[node(f"n{i}", "4", tier="on-demand") for i in range(4)]))
        for i in range(8):
            c.create(queued_pod(f"b{i}", "b"))
        _wait(lambda: _bound(c, "b") == 8, "team-b to borrow team-a's idle quota")
        assert len(_holding(c, "team-b")) == 8
    d.kill9()
    d2 = daemon_factory(data_dir=d.data_dir)
    with d2.client() as c:
        for i in range(4):
            c.create(queued_pod(f"a{i}", "a"))
        _wait(lambda: _bound(c, "a") == 4, "team-a to reclaim its quota")
        _wait(lambda: len(_holding(c, "team-b")) == 4, "team-b back to its nominal quota")
        preempted = [w for w in _workloads(c) if any(
            x["type"] == "Preempted" and x["status"] == "True" and x["reason"] == "InCohortReclamation"
            for x in w["status"]["conditions"])]
        assert len(preempted) == 4  # the rebuilt quota knew team-b was borrowing all of team-a's
        assert len(_holding(c, "team-a")) == 4


def test_gang_admitted_whole(daemon_factory):
    d = daemon_factory()
    with d.client() as c:
        c.apply(two_teams(*[node(f"n{i}", "4", tier="on-demand") for i in range(4)]))
        for i in range(3):
            c.create(queued_pod(f"g{i}", "a", "2", group="gang", total=3))
        for i in range(5):
            c.create(queued_pod(f"h{i}", "a", "2", group="huge", total=5))
        _wait(lambda: _bound(c, "g") == 3, "the gang to be admitted and bound whole")

        def huge_reason():
            w = next((w for w in _workloads(c) if w["metadata"]["name"] == "huge"), None)
            conds = {x["type"]: x for x in ((w or {}).get("status") or {}).get("conditions", [])}
            return conds.get("QuotaReserved")
        reserved = poll(huge_reason, "the 10-cpu gang's QuotaReserved=False", attempts=1200)
        assert reserved["status"] == "False" and reserved["reason"] == "ExceedsMaxQuota"
        assert _bound(c, "h") == 0 and len(_holding(c, "team-a")) == 1


def test_fair_sharing_converges_to_the_weights(daemon_factory, tmp_path):
    cfg = tmp_path / "ksched.yaml"
    cfg.write_text("apiVersion: ksched.io/v1alpha1\nkind: DaemonConfiguration\nkueue:\n  fairSharing: {}\n")
    d = daemon_factory("--config", str(cfg))
    with d.client() as c:
        c.apply([flavor("on-demand", tier="on-demand"),
                 cluster_queue("team-a", "shared", "0", weight="2"), cluster_queue("team-b", "shared", "0", weight="1"),
                 cluster_queue("lender", "shared", "12"), local_queue("a", "team-a"), local_queue("b", "team-b"),
                 *[node(f"n{i}", "4", tier="on-demand") for i in range(3)]])
        for i in range(12):
            c.create(queued_pod(f"a{i}", "a"))
            c.create(queued_pod(f"b{i}", "b"))
        # weights 2:1 over the lender's 12 cpu: 8 and 4 (equal weighted shares), reached by preemption
        _wait(lambda: (len(_holding(c, "team-a")), len(_holding(c, "team-b"))) == (8, 4), "shares 8:4")
        _wait(lambda: _bound(c, "a") == 8 and _bound(c, "b") == 4, "the pods of the shares bound")


def test_cli_shows_kueues_columns(daemon_factory):
    d = daemon_factory()
    with d.client() as c:
        c.apply(two_teams({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort", "metadata": {"name": "shared"}},
                          node("n0", "4", tier="on-demand")))
        for i in range(3):
            c.create(queued_pod(f"g{i}", "a", "1", group="gang", total=3))
        c.create(queued_pod("big", "a", "9"))
        _wait(lambda: _bound(c, "g") == 3, "the gang bound")
        poll(lambda: next((w for w in _workloads(c) if w["metadata"]["name"].startswith("pod-big-")
                           and w.get("status")), None), "big's status", attempts=1200)
    out = d.cli("get", "cq").stdout.splitlines()
    assert out[0].split() == ["NAME", "COHORT", "PENDING", "WORKLOADS"]
    assert out[1].split() == ["team-a", "shared", "1"] and out[2].split() == ["team-b", "shared", "0"]
    wide = d.cli("get", "clusterqueues", "-o", "wide").stdout.splitlines()
    assert wide[1].split() == ["team-a", "shared", "BestEffortFIFO", "1", "1", "on-demand/cpu=3/4"]
    lq = d.cli("get", "lq").stdout.splitlines()
    assert lq[0].split() == ["NAME", "CLUSTERQUEUE", "PENDING", "WORKLOADS", "ADMITTED", "WORKLOADS"]
    assert lq[1].split() == ["a", "team-a", "1", "1"]
    wl = {line.split()[0]: line.split() for line in d.cli("get", "kwl").stdout.splitlines()[1:]}
    assert wl["gang"][1:4] == ["a", "team-a", "True"]  # QUEUE, RESERVED IN, ADMITTED (FINISHED empty)
    big = next(v for k, v in wl.items() if k.startswith("pod-big-"))
    assert big[1:3] == ["a", "False"]  # not reserved anywhere, not admitted
    assert d.cli("get", "rf").stdout.split()[:3] == ["NAME", "AGE", "on-demand"]
    assert d.cli("get", "cohorts").stdout.split()[:3] == ["NAME", "AGE", "shared"]
    desc = d.cli("describe", "kwl", "gang").stdout
    assert "Admission:   ClusterQueue team-a" in desc and "QuotaReserved" in desc and "Quota reserved in ClusterQueue team-a" in desc


def test_metrics_use_kueues_names(daemon_factory):
    d = daemon_factory()
    with d.client() as c:
        c.apply(two_teams(node("n0", "4", tier="on-demand")))
        c.create(queued_pod("p0", "a", "2"))
        _wait(lambda: _bound(c, "p0") == 1, "p0 bound")
    # The usage gauges are set at the end of the admission actor's turn, after the writes that
    # release the pod (its bind can be seen first): wait for them, the last figure written.
    usage = ('kueue_cluster_queue_resource_usage{cluster_queue="team-a",cohort="shared",flavor="on-demand",'
             'replica_role="leader",resource="cpu"} 2.0')
    text = poll(lambda: (lambda t: t if usage in t else None)(d.http_get("/metrics")), "kueue metrics")
    assert 'kueue_admitted_workloads_total{cluster_queue="team-a",priority_class="",replica_role="leader"} 1.0' in text
    assert 'kueue_cluster_queue_nominal_quota{' in text and 'kueue_pending_workloads{' in text


def test_page_queues_view_shows_usage_against_nominal_and_borrowed(daemon_factory):
    from playwright.sync_api import expect
    from tests.e2e.browser import chromium_page
    d = daemon_factory()
    with d.client() as c:
        c.apply(two_teams(*[node(f"n{i}", "4", tier="on-demand") for i in range(2)]))
        for i in range(6):
            c.create(queued_pod(f"b{i}", "b"))
        c.create(queued_pod("huge", "a", "9"))
        _wait(lambda: _bound(c, "b") == 6, "team-b borrowing 2")
    with chromium_page() as page:
        page.goto(f"http://127.0.0.1:{d.http_port}/")
        row = page.locator('#queues tr[data-cq="team-b"]')
        expect(row.locator('[data-fr="on-demand/cpu"] .nums')).to_have_text("6/4", timeout=15_000)
        expect(row.locator('[data-fr="on-demand/cpu"] .borrowed')).to_have_text("borrowed 2")
        expect(row.locator(".admitted")).to_have_text("6")
        a = page.locator('#queues tr[data-cq="team-a"]')
        expect(a.locator(".pending")).to_have_text("1")
        expect(a.locator('[data-fr="on-demand/cpu"] .nums')).to_have_text("0/4")
        expect(a.locator(".cohort")).to_have_text("shared")


def test_the_configs_example_walk_through(daemon_factory):
    d = daemon_factory()
    for f in ("queues", "nodes", "team-b-jobs"):
        d.cli("apply", "-f", f"configs/kueue/{f}.yaml")
    with d.client() as c:
        _wait(lambda: _bound(c, "b-") == 12, "team-b's 12 pods: own quota, borrowed on-demand, then spot")
        pods = {p["metadata"]["name"]: p for p in c.list("Pod")[0]}
        on_spot = [p for p in pods.values() if p["spec"]["nodeName"].startswith("spot-")]
        assert len(on_spot) == 4 and all(p["spec"]["nodeSelector"] == {"instance-type": "spot"} for p in on_spot)
        assert all({"key": "spot", "operator": "Equal", "value": "true", "effect": "NoSchedule"} in p["spec"]["tolerations"]
                   for p in on_spot)
    d.cli("apply", "-f", "configs/kueue/team-a-jobs.yaml")
    with d.client() as c:
        _wait(lambda: _bound(c, "a-") == 4 and _bound(c, "b-") == 8, "team-a reclaiming its on-demand quota")
    out = d.cli("get", "cq", "-o", "wide").stdout
    assert "team-a" in out and "on-demand/cpu=8/8" in out


def _series(text: str, name: str, **labels: str) -> float:
    """The value of the one series of `name` whose labels include `labels`."""
    for line in text.splitlines():
        if line.startswith(name + "{") and all(f'{k}="{v}"' in line for k, v in labels.items()):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"no {name} with {labels}")


def test_pending_workloads_metric_agrees_with_the_cluster_queue_status(daemon_factory):
    d = daemon_factory()
    with d.client() as c:
        c.apply(two_teams(node("n0", "4", tier="on-demand")))
        c.create(queued_pod("fits", "a", "2"))
        c.create(queued_pod("too-big", "a", "20"))  # above nominal + what team-b lends: pending for good
        _wait(lambda: _bound(c, "fits") == 1, "fits bound")
        status = poll(lambda: (lambda s: s if s.get("pendingWorkloads") == 1 else None)(
            c.get("ClusterQueue", "team-a").get("status") or {}), "team-a's status")
    text = d.http_get("/metrics")
    pending = sum(_series(text, "kueue_pending_workloads", cluster_queue="team-a", status=s)
                  for s in ("active", "inadmissible"))
    assert pending == status["pendingWorkloads"] == 1
    assert _series(text, "kueue_reserving_active_workloads", cluster_queue="team-a") == status["reservingWorkloads"] == 1
    assert _series(text, "kueue_admitted_active_workloads", cluster_queue="team-a") == status["admittedWorkloads"] == 1
