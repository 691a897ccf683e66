"""The cluster page lists scheduling.k8s.io PodGroups beside the Coscheduling gangs:
name, policy, minCount, members bound of total (by spec.schedulingGroup) and the
PodGroupScheduled condition, in a real headless Chromium against the real daemon."""
from __future__ import annotations

import re
from pathlib import Path

from playwright.sync_api import expect

from tests.e2e.browser import chromium_page
from tests.e2e.conftest import daemon_factory  # noqa: F401 - the fixture is used by name

SECONDS = 15_000

CLUSTER = """apiVersion: v1
kind: Node
metadata: {name: node-0}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "10"}}
---
apiVersion: scheduling.k8s.io/v1alpha2
kind: PodGroup
metadata: {name: train}
spec:
  schedulingPolicy: {gang: {minCount: 3}}
status:
  conditions:
  - {type: PodGroupScheduled, status: "False", reason: Unschedulable, message: "0/1 nodes are available",
     lastTransitionTime: "2026-01-01T00:00:00Z"}
---
apiVersion: scheduling.x-k8s.io/v1alpha1
kind: PodGroup
metadata: {name: train}
spec: {minMember: 2}
""" + "".join(f"""---
apiVersion: v1
kind: Pod
metadata: {{name: train-{i}}}
spec:
  schedulingGroup: {{podGroupName: train}}
  containers: [{{name: c, image: pause, resources: {{requests: {{cpu: "{cpu}"}}}}}}]
""" for i, cpu in enumerate(("1", "64", "64")))


def test_the_page_lists_scheduling_podgroups_with_policy_mincount_members_and_condition(
        daemon_factory, tmp_path: Path) -> None:  # noqa: F811
    (tmp_path / "cluster.yaml").write_text(CLUSTER)
    d = daemon_factory()
    d.cli("apply", "-f", str(tmp_path / "cluster.yaml"))
    with chromium_page() as page:
        page.goto(f"http://127.0.0.1:{d.http_port}/")
        expect(page.locator("#conn")).to_have_text("live", timeout=SECONDS)
        row = page.locator('#pod-groups tr[data-group="default/train"]')
        expect(row.locator(".policy")).to_have_text("Gang", timeout=SECONDS)
        expect(row.locator(".min")).to_have_text("3")
        # two members can never fit: GangScheduling binds none of the three (not the one that fits)
        expect(row.locator(".members")).to_have_text("0/3", timeout=SECONDS)
        expect(row.locator(".scheduled")).to_have_text("False (Unschedulable)")
        # the scheduler's own PodGroupScheduled replaces the applied one: the group cycle's reason
        expect(row.locator(".reason")).to_have_text(re.compile(r"^minCount \(3\) cannot be satisfied: "))
        # the Coscheduling gang of the same name stays in its own table
        expect(page.locator('#gangs tr[data-group="default/train"] .min')).to_have_text("2")
