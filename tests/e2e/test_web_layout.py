"""The cluster page's layout in a real headless Chromium against the real daemon:
pending work is in the first screen even with many nodes, gang members are marked,
and the throughput chart has labelled axes."""
from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from playwright.sync_api import Page, expect

from tests.e2e.browser import chromium_page
from tests.e2e.conftest import ROOT, daemon_factory  # noqa: F401 - the fixture is used by name

SECONDS = 15_000  # Playwright's wait for what the page should show, in ms
VIEWPORT_HEIGHT = 1000
NODES = 50

CONFIG = (ROOT / "configs" / "coscheduling.yaml").read_text()

CLUSTER = "".join(f"""---
apiVersion: v1
kind: Node
metadata: {{name: node-{i:02d}, labels: {{topology.kubernetes.io/zone: zone-{i % 3}}}}}
status: {{allocatable: {{cpu: "4", memory: 8Gi, pods: "10"}}}}
""" for i in range(NODES)) + """---
apiVersion: v1
kind: Pod
metadata: {name: huge}
spec: {containers: [{name: c, image: pause, resources: {requests: {cpu: "64"}}}]}
---
apiVersion: scheduling.x-k8s.io/v1alpha1
kind: PodGroup
metadata: {name: train}
spec: {minMember: 2, scheduleTimeoutSeconds: 600}
""" + "".join(f"""---
apiVersion: v1
kind: Pod
metadata: {{name: train-{i}, labels: {{scheduling.x-k8s.io/pod-group: train}}}}
spec: {{containers: [{{name: c, image: pause, resources: {{requests: {{cpu: "64"}}}}}}]}}
""" for i in range(2))


@contextmanager
def fifty_node_page(daemon_factory, tmp_path: Path) -> Iterator[Page]:  # noqa: F811
    """The page, live, over a daemon holding 50 nodes, a lone pending pod and a pending gang of two."""
    (tmp_path / "config.yaml").write_text(CONFIG)
    (tmp_path / "cluster.yaml").write_text(CLUSTER)
    d = daemon_factory("--config", str(tmp_path / "config.yaml"))
    d.cli("apply", "-f", str(tmp_path / "cluster.yaml"))
    with chromium_page(height=VIEWPORT_HEIGHT) as page:
        page.goto(f"http://127.0.0.1:{d.http_port}/")
        expect(page.locator("#conn")).to_have_text("live", timeout=SECONDS)
        expect(page.locator("#nodes .node")).to_have_count(NODES, timeout=SECONDS)
        expect(page.locator('#pending tr[data-pod="default/train-1"]')).to_be_visible(timeout=SECONDS)
        yield page
        page.screenshot(path=str(tmp_path / "fifty-nodes.png"))
    print(f"screenshot: {tmp_path / 'fifty-nodes.png'}")


def test_at_fifty_nodes_pending_pods_and_gangs_start_within_the_first_screen(daemon_factory, tmp_path: Path) -> None:  # noqa: F811
    with fifty_node_page(daemon_factory, tmp_path) as page:
        # Pending work comes before the node map, so a person sees it without scrolling.
        for section in ("#pending-view", "#gangs-view"):
            top = page.locator(section).bounding_box()["y"]
            assert top < VIEWPORT_HEIGHT, f"{section} starts at {top}px, below the first {VIEWPORT_HEIGHT}px"


def test_a_pending_member_of_a_coscheduling_gang_is_marked_with_its_gang(daemon_factory, tmp_path: Path) -> None:  # noqa: F811
    with fifty_node_page(daemon_factory, tmp_path) as page:
        member = page.locator('#pending tr[data-pod="default/train-0"] .gang')
        expect(member).to_have_attribute("data-gang", "default/train", timeout=SECONDS)
        expect(member).to_have_text("gang train")
        expect(page.locator('#pending tr[data-pod="default/huge"] .gang')).to_have_count(0)


def test_the_throughput_chart_has_labelled_time_and_rate_axes_with_ticks(daemon_factory, tmp_path: Path) -> None:  # noqa: F811
    with fifty_node_page(daemon_factory, tmp_path) as page:
        expect(page.locator("#chart .x-axis text.label")).to_have_text("time (minutes ago)", timeout=SECONDS)
        expect(page.locator("#chart .y-axis text.label")).to_have_text("bound/s")
        expect(page.locator("#chart .x-axis text.tick")).to_have_text(["-5m", "-4m", "-3m", "-2m", "-1m", "now"])
        expect(page.locator("#chart .y-axis text.tick").first).to_have_text("0")
