"""The cluster page's first picture in Chromium: a page that starts from the
daemon's snapshot (rows of columns) holds exactly what a page that followed every
change as it happened holds, and then follows changes like it (a node deleted)."""
from __future__ import annotations

from pathlib import Path

from playwright.sync_api import expect

from tests.e2e.browser import chromium_page
from tests.e2e.conftest import daemon_factory  # noqa: F401 - the fixture is used by name

SECONDS = 15_000

CLUSTER = """
apiVersion: v1
kind: Node
metadata: {name: n-1, labels: {zone: a}}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "10"}}
---
apiVersion: v1
kind: Node
metadata: {name: n-2, labels: {zone: b}}
spec: {unschedulable: true, taints: [{key: dedicated, value: gpu, effect: NoSchedule}]}
status: {allocatable: {cpu: "2", memory: 4Gi, pods: "10"}}
---
apiVersion: v1
kind: Node
metadata: {name: n-10, labels: {zone: a}}
status: {allocatable: {cpu: "2", memory: 4Gi, pods: "10"}}
---
apiVersion: scheduling.x-k8s.io/v1alpha1
kind: PodGroup
metadata: {name: g}
spec: {minMember: 1}
---
apiVersion: v1
kind: Pod
metadata: {name: web, labels: {app: web, scheduling.x-k8s.io/pod-group: g}}
spec: {priority: 3, containers: [{name: c, image: pause, resources: {requests: {cpu: 1500m, memory: 1Gi}}}]}
---
apiVersion: v1
kind: Pod
metadata: {name: huge}
spec: {containers: [{name: c, image: pause, resources: {requests: {cpu: "64"}}}]}
---
apiVersion: v1
kind: Pod
metadata: {name: gated}
spec: {schedulingGates: [{name: example.com/wait}], containers: [{name: c, image: pause}]}
"""

# What a page holds, in a form two pages can be compared by: every object and view
# (keys sorted), the usage per node, and the resourceVersion it is at.
HELD = """(() => {
  const canon = (v) => Array.isArray(v) ? v.map(canon) : v && typeof v === "object"
    ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, canon(v[k])])) : v;
  const objects = Object.fromEntries(Object.entries(state.objects).map(([kind, m]) =>
    [kind, [...m.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, e]) => [k, canon(e.obj), canon(e.view)])]));
  const usage = [...state.usage.entries()].sort().map(([n, u]) => [n, u.cpu, u.memory, u.pods, [...u.names].sort()]);
  return JSON.stringify({rv: state.rv, objects, usage});
})()"""


def test_a_page_started_from_the_snapshot_holds_what_a_page_that_followed_every_change_holds(daemon_factory, tmp_path: Path) -> None:  # noqa: F811
    (tmp_path / "cluster.yaml").write_text(CLUSTER)
    d = daemon_factory()
    with chromium_page() as following:
        following.goto(f"http://127.0.0.1:{d.http_port}/")
        expect(following.locator("#conn")).to_have_text("live", timeout=SECONDS)
        d.cli("apply", "-f", str(tmp_path / "cluster.yaml"))
        pending = following.locator("#pending tbody")
        expect(pending.locator('tr[data-pod="default/huge"] .message')).to_contain_text("Insufficient cpu", timeout=SECONDS)
        expect(pending.locator('tr[data-pod="default/gated"]')).to_be_visible()
        expect(following.locator('[data-node="n-1"] .chip[data-pod="default/web"]')).to_be_visible(timeout=SECONDS)

        started = following.context.new_page()
        started.goto(f"http://127.0.0.1:{d.http_port}/")
        rv = following.evaluate("state.rv")
        started.wait_for_function(f"state.rv >= {rv}", timeout=SECONDS)
        held = following.evaluate(HELD)
        assert '"web"' in held and '"n-10"' in held and "Insufficient cpu" in held
        assert started.evaluate(HELD) == held
        # What a person sees on it: the bar, the natural order of the cards, the reasons.
        expect(started.locator('[data-node="n-1"] .bar.cpu .nums')).to_have_text("1.5/4 cores")
        assert started.locator("#nodes .node").evaluate_all("els => els.map(e => e.dataset.node)") == ["n-1", "n-2", "n-10"]
        expect(started.locator('#pending tr[data-pod="default/gated"] .message')).to_have_text("Scheduling is blocked due to non-empty scheduling gates")
        expect(started.locator('#gangs tr[data-group="default/g"] .bound')).to_have_text("1")

        # Then it follows the cluster: a node deleted leaves its cards.
        d.cli("delete", "node", "n-2")
        for page in (started, following):
            expect(page.locator("#nodes .node")).to_have_count(2, timeout=SECONDS)
            assert page.locator("#nodes .node").evaluate_all("els => els.map(e => e.dataset.node)") == ["n-1", "n-10"]
        started.close()
