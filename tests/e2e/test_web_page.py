"""The cluster page in a real headless Chromium against the real daemon: what a
person sees on it, and that it follows the cluster without a reload."""
from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import urlsplit

from playwright.sync_api import expect

from tests.e2e.browser import chromium_page
from tests.e2e.conftest import ROOT, daemon_factory  # noqa: F401 - the fixture is used by name

SECONDS = 15_000  # Playwright's wait for what the page should show, in ms

# A member that fails (train-2 needs a disktype=ssd node) leaves the gang waiting
# at Permit rather than rejected when under half of minMember is missing.
CONFIG = (ROOT / "configs" / "coscheduling.yaml").read_text().replace(
    "podGroupRejectPercentage: 10", "podGroupRejectPercentage: 50")

CLUSTER = """
apiVersion: v1
kind: Node
metadata: {name: node-a, labels: {zone: a}}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "10"}}
---
apiVersion: v1
kind: Node
metadata: {name: node-b, labels: {zone: b, gpu: "true"}}
spec: {taints: [{key: dedicated, value: gpu, effect: NoSchedule}]}
status: {allocatable: {cpu: "2", memory: 4Gi, pods: "10"}}
---
apiVersion: v1
kind: Pod
metadata: {name: web-1, labels: {app: web}}
spec: {containers: [{name: c, image: pause, resources: {requests: {cpu: "1", memory: 1Gi}}}]}
---
apiVersion: v1
kind: Pod
metadata: {name: web-2, labels: {app: web}}
spec: {containers: [{name: c, image: pause, resources: {requests: {cpu: 1500m, memory: 512Mi}}}]}
---
apiVersion: v1
kind: Pod
metadata: {name: big}
spec: {priority: 10, containers: [{name: c, image: pause, resources: {requests: {cpu: "8"}}}]}
---
apiVersion: scheduling.x-k8s.io/v1alpha1
kind: PodGroup
metadata: {name: train}
spec: {minMember: 3, scheduleTimeoutSeconds: 600}
""" + "".join(f"""---
apiVersion: v1
kind: Pod
metadata: {{name: train-{i}, labels: {{scheduling.x-k8s.io/pod-group: train}}}}
spec: {{{"nodeSelector: {disktype: ssd}, " if i == 2 else ""}containers: [{{name: c, image: pause, resources: {{requests: {{cpu: 100m}}}}}}]}}
""" for i in range(3))

WEB_3 = """apiVersion: v1
kind: Pod
metadata: {name: web-3, labels: {app: web}}
spec: {containers: [{name: c, image: pause, resources: {requests: {cpu: 500m, memory: 512Mi}}}]}
"""


def bar(page, node: str, resource: str):  # noqa: ANN001, ANN201
    return page.locator(f'[data-node="{node}"] .bar.{resource} .nums')


def failed_scheduling_message(d, name: str) -> str:  # noqa: ANN001
    pod = json.loads(d.cli("get", "pod", name, "-o", "json").stdout)  # the CLI: Playwright's loop owns this thread
    return next(c["message"] for c in pod["status"]["conditions"] if c["type"] == "PodScheduled")


def test_the_page_shows_nodes_pending_pods_gangs_and_explain_and_follows_a_new_binding(daemon_factory, tmp_path: Path) -> None:  # noqa: F811
    (tmp_path / "config.yaml").write_text(CONFIG)
    (tmp_path / "cluster.yaml").write_text(CLUSTER)
    (tmp_path / "web-3.yaml").write_text(WEB_3)
    (tmp_path / "web-4.yaml").write_text(WEB_3.replace("web-3", "web-4"))
    d = daemon_factory("--config", str(tmp_path / "config.yaml"))
    d.cli("apply", "-f", str(tmp_path / "cluster.yaml"))

    with chromium_page() as page:
        requested: list[str] = []
        page.on("request", lambda r: requested.append(urlsplit(r.url).path))
        page.on("websocket", lambda ws: requested.append(urlsplit(ws.url).path))
        page.goto(f"http://127.0.0.1:{d.http_port}/")
        expect(page.locator("#conn")).to_have_text("live", timeout=SECONDS)

        # Nodes: requested / allocatable, as `ksched get nodes` counts them, in cores, GiB and pods.
        expect(bar(page, "node-a", "cpu")).to_have_text("2.5/4 cores", timeout=SECONDS)
        expect(bar(page, "node-a", "memory")).to_have_text("1.5/8 GiB")
        expect(bar(page, "node-a", "pods")).to_have_text("2/10 pods")
        expect(bar(page, "node-b", "cpu")).to_have_text("0/2 cores")
        expect(page.locator('[data-node="node-b"] .taints')).to_have_text("taints: dedicated=gpu:NoSchedule")
        expect(page.locator('#nodes [data-node="node-b"]')).to_have_attribute("title", "gpu=true\nzone=b")  # on hover
        page.fill("#node-filter", "gpu=true")
        expect(page.locator("#nodes .node")).to_have_count(1)
        expect(page.locator("#nodes .node")).to_have_attribute("data-node", "node-b")
        page.fill("#node-filter", "")

        # The pending pod carries upstream's FailedScheduling message, as stored.
        big = page.locator('#pending tr[data-pod="default/big"]')
        expect(big.locator(".message")).to_contain_text("0/2 nodes are available: 1 Insufficient cpu, "
                                                        "1 node(s) had untolerated taint(s).", timeout=SECONDS)
        assert big.locator(".message").inner_text() == failed_scheduling_message(d, "big")
        expect(big.locator(".priority")).to_have_text("10")
        page.click('#pending th[data-sort="priority"]')  # ascending, then descending
        expect(page.locator("#pending tbody tr").last).to_have_attribute("data-pod", "default/big")
        page.click('#pending th[data-sort="priority"]')
        expect(page.locator("#pending tbody tr").first).to_have_attribute("data-pod", "default/big")

        # The gang: two members wait at Permit for the third, with a deadline counting down.
        gang = page.locator('#gangs tr[data-group="default/train"]')
        expect(gang.locator(".waiting")).to_have_text("2", timeout=SECONDS)
        expect(gang.locator(".bound")).to_have_text("0")
        expect(gang.locator(".pending")).to_have_text("1")
        expect(gang.locator(".min")).to_have_text("3")
        expect(gang.locator(".deadline")).to_have_text(re.compile(r"^(9m|10m|\d+m\d+s) left$"))
        expect(gang.locator(".deadline")).not_to_have_text(gang.locator(".deadline").inner_text())  # counting down
        expect(gang.locator(".reason")).to_contain_text("2/3 members reserved, waiting for quorum", timeout=SECONDS)

        # Explain an unschedulable pod: each node's Filter verdicts.
        big.click()
        table = page.locator("#explain")
        expect(table.locator('tr[data-node="node-a"]')).to_contain_text("Insufficient cpu", timeout=SECONDS)
        expect(table.locator('tr[data-node="node-b"]')).to_contain_text("untolerated taint")
        expect(table.locator("tr.chosen")).to_have_count(0)

        # Explain a bound pod: Score columns and the chosen node highlighted.
        page.locator('[data-node="node-a"] .chip[data-pod="default/web-1"]').click()
        expect(page.locator("#explain-pod")).to_have_text("web-1")
        expect(table.locator("tr.chosen")).to_have_attribute("data-node", "node-a", timeout=SECONDS)
        table.locator('tr[data-node="node-a"] .plugins-toggle').click()  # the per-plugin breakdown, one click away
        expect(table.locator('tr.breakdown[data-for="node-a"]')).to_contain_text("NodeResourcesBalancedAllocation")
        expect(page.locator("#explain-summary")).to_contain_text("Chosen node: node-a")

        # A new pod bound shows up without a reload.
        page.evaluate("window.__sameDocument = true")
        d.cli("apply", "-f", str(tmp_path / "web-3.yaml"))
        expect(bar(page, "node-a", "cpu")).to_have_text("3/4 cores", timeout=SECONDS)
        expect(bar(page, "node-a", "pods")).to_have_text("3/10 pods")
        expect(page.locator('[data-node="node-a"] .chip[data-pod="default/web-3"]')).to_be_visible()
        assert page.evaluate("window.__sameDocument") is True

        # Throughput from the daemon's samples: pods were bound, two wait in the unschedulable queue.
        expect(page.locator("#chart text.peak")).to_have_text(re.compile(r"^peak (?!0\.0 )[\d.]+ bound/s, \d+ pending"),
                                                         timeout=SECONDS)
        expect(page.locator("#pending-now")).to_have_text("2")

        # A lost connection resumes from the last resourceVersion and misses nothing.
        page.evaluate("state.ws.close()")
        d.cli("apply", "-f", str(tmp_path / "web-4.yaml"))
        page.wait_for_function("state.connects === 2", timeout=SECONDS)
        assert page.evaluate("state.lastResumed") is True
        expect(bar(page, "node-a", "cpu")).to_have_text("3.5/4 cores", timeout=SECONDS)
        expect(page.locator('[data-node="node-a"] .chip[data-pod="default/web-4"]')).to_have_count(1)
        assert page.evaluate("window.__sameDocument") is True

        page.screenshot(path=str(tmp_path / "cluster-page.png"), full_page=True)
        # Everything came over the one stream: no list was polled, nothing fetched from elsewhere.
        assert sorted(set(requested)) == ["/", "/static/app.css", "/static/app.js", "/static/explain.js",
                                        "/static/format.js", "/static/nodes.js", "/stream"]

        # An open page does not hold the daemon up when it stops; the page says it lost the stream.
        assert d.terminate() == 0
        expect(page.locator("#conn")).to_have_text("reconnecting…", timeout=SECONDS)
    print(f"screenshot: {tmp_path / 'cluster-page.png'}")


def test_with_a_token_the_page_shows_only_the_login_form_until_the_right_token_is_given(daemon_factory, tmp_path: Path) -> None:  # noqa: F811
    (tmp_path / "token").write_text("s3cret-page-token\n")
    (tmp_path / "token").chmod(0o600)  # a token others can read is refused
    d = daemon_factory("--token-file", str(tmp_path / "token"))
    with d.client("s3cret-page-token") as c:
        c.apply([{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-a"},
                  "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "10"}}}])

    assert d.scheme == "https"  # with a token the page (and the Kubernetes API) is served over TLS
    with chromium_page(ignore_https_errors=True) as page:
        page.goto(f"{d.base_url}/")
        expect(page.locator("#login")).to_be_visible(timeout=SECONDS)
        expect(page.locator("#app")).to_be_hidden()
        assert page.locator("[data-node]").count() == 0

        page.fill("#token", "wrong")
        page.click("#login button")
        expect(page.locator("#login-error")).to_contain_text("token", timeout=SECONDS)
        expect(page.locator("#app")).to_be_hidden()

        page.fill("#token", "s3cret-page-token")
        page.click("#login button")
        expect(bar(page, "node-a", "cpu")).to_have_text("0/4 cores", timeout=SECONDS)
        expect(page.locator("#login")).to_be_hidden()
        page.screenshot(path=str(tmp_path / "signed-in.png"))
