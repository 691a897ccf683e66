"""The cluster page in Chromium at 1,400 px: units a person reads at a glance, names in
natural order, the decision view with the chosen node in view, and the utilisation map
a large cluster gets (cells, hover text, the card on click, the label filter)."""
from __future__ import annotations

from pathlib import Path

from playwright.sync_api import expect

from tests.e2e.browser import chromium_page
from tests.e2e.conftest import daemon_factory  # noqa: F401 - the fixture is used by name

SECONDS = 15_000
WIDTH, HEIGHT = 1400, 900
ZONE = "topology.kubernetes.io/zone"
NODES = 12  # big-1 .. big-12: a plain string sort puts big-10 before big-2


def node_yaml(i: int) -> str:
    zone = "zone-a" if i % 2 else "zone-b"
    slot = ", slot: three" if i == 3 else ""
    return f"""---
apiVersion: v1
kind: Node
metadata: {{name: big-{i}, labels: {{{ZONE}: {zone}{slot}}}}}
status: {{allocatable: {{cpu: "2", memory: 4Gi, pods: "10"}}}}
"""


CLUSTER = "".join(node_yaml(i) for i in range(1, NODES + 1)) + """---
apiVersion: v1
kind: Pod
metadata: {name: hog}
spec: {nodeSelector: {slot: three}, containers: [{name: c, image: pause, resources: {requests: {cpu: 1500m, memory: 1536Mi}}}]}
"""


def inside_viewport(box: dict[str, float] | None) -> bool:
    return box is not None and box["x"] >= 0 and box["y"] >= 0 and box["x"] + box["width"] <= WIDTH \
        and box["y"] + box["height"] <= HEIGHT


def test_units_natural_order_and_the_decision_of_a_bound_pod_with_its_node_in_view(daemon_factory, tmp_path: Path) -> None:  # noqa: F811
    (tmp_path / "cluster.yaml").write_text(CLUSTER)
    d = daemon_factory()
    d.cli("apply", "-f", str(tmp_path / "cluster.yaml"))

    with chromium_page(WIDTH, HEIGHT) as page:
        page.goto(f"http://127.0.0.1:{d.http_port}/")
        cpu = page.locator('[data-node="big-3"] .bar.cpu')
        expect(cpu.locator(".nums")).to_have_text("1.5/2 cores", timeout=SECONDS)
        expect(page.locator('[data-node="big-3"] .bar.memory .nums')).to_have_text("1.5/4 GiB")
        expect(page.locator('[data-node="big-3"] .bar.pods .nums')).to_have_text("1/10 pods")
        # The numbers sit beside the bar, not over its edge.
        track, nums = cpu.locator(".track").bounding_box(), cpu.locator(".nums").bounding_box()
        assert track and nums and nums["x"] >= track["x"] + track["width"], (track, nums)
        shown = page.locator("#nodes .node").evaluate_all("els => els.map(e => e.dataset.node)")
        assert shown == [f"big-{i}" for i in range(1, NODES + 1)]

        # The bound pod's decision: its own node fits (the pod is not counted against itself).
        page.locator('[data-node="big-3"] .chip[data-pod="default/hog"]').click()
        table = page.locator("#explain")
        chosen = table.locator("tr.chosen")
        expect(chosen).to_have_attribute("data-node", "big-3", timeout=SECONDS)
        expect(chosen).to_contain_text("✓ fits")
        expect(page.locator("#explain-summary")).to_contain_text("Bound to big-3; explained as if it were not bound yet")
        assert inside_viewport(chosen.bounding_box()), chosen.bounding_box()
        assert inside_viewport(chosen.locator(".total").bounding_box())
        assert chosen.locator(".total").inner_text().isdigit()
        # The top ten first, the rest one click away; the others fail the node selector.
        expect(table.locator("tbody tr[data-node]")).to_have_count(10)
        expect(table.locator('tr[data-node="big-1"]')).to_contain_text("NodeAffinity")
        page.click("#explain-all")
        expect(table.locator("tbody tr[data-node]")).to_have_count(NODES)
        rows = table.locator("tbody tr[data-node]").evaluate_all("els => els.map(e => e.dataset.node)")
        assert rows == ["big-3"] + [f"big-{i}" for i in range(1, NODES + 1) if i != 3]
        # The per-plugin breakdown is one click on the row.
        chosen.click()
        breakdown = table.locator('tr.breakdown[data-for="big-3"]')
        expect(breakdown).to_contain_text("NodeResourcesFit")
        expect(breakdown).to_contain_text("× ")  # raw / normalized × weight = weighted
        assert inside_viewport(breakdown.bounding_box())
        # The label filter applies to the decision too.
        page.fill("#node-filter", f"{ZONE}=zone-b")
        expect(table.locator("tbody tr[data-node]")).to_have_count(NODES // 2)
        expect(table.locator("tr.chosen")).to_have_count(0)
        expect(page.locator("#explain-more")).to_contain_text(f"{NODES // 2} nodes hidden by the label filter")
        page.screenshot(path=str(tmp_path / "decision.png"))
    print(f"screenshot: {tmp_path / 'decision.png'}")


def test_the_map_groups_nodes_by_zone_shows_numbers_on_hover_opens_the_card_and_follows_new_nodes(daemon_factory, tmp_path: Path) -> None:  # noqa: F811
    (tmp_path / "cluster.yaml").write_text(CLUSTER)
    (tmp_path / "more.yaml").write_text(node_yaml(13))
    d = daemon_factory()
    d.cli("apply", "-f", str(tmp_path / "cluster.yaml"))

    with chromium_page(WIDTH, HEIGHT) as page:
        page.goto(f"http://127.0.0.1:{d.http_port}/")
        expect(page.locator('[data-node="big-3"] .bar.pods .nums')).to_have_text("1/10 pods", timeout=SECONDS)
        page.select_option("#node-mode", "map")  # "auto" picks the map above 60 nodes
        groups = page.locator("#map .map-group")
        expect(groups).to_have_count(2)
        expect(groups.nth(0).locator("h3")).to_contain_text(f"{ZONE}=zone-a 6 nodes · cpu 13% · memory 6% · 1 pods")
        expect(groups.nth(1).locator("h3")).to_contain_text(f"{ZONE}=zone-b 6 nodes · cpu 0%")
        assert page.locator("#nodes .node").count() == 0  # no cards: one canvas per group

        # Hover shows the numbers; the cell is coloured by use.
        at = page.evaluate("nodeMap.cellCenter('big-3')")
        page.mouse.move(at["x"], at["y"])
        tip = page.locator("#map-tip")
        expect(tip).to_be_visible()
        expect(tip).to_have_text("big-3\ncpu 1.5/2 cores (75%)\nmemory 1.5/4 GiB (38%)\npods 1/10 pods (10%)")
        colour = page.evaluate(f"""(() => {{ const c = nodeMap.cellCenter('big-3'), e = document.elementFromPoint(c.x, c.y);
            const r = e.getBoundingClientRect(); return [...e.getContext('2d').getImageData(c.x - r.left, c.y - r.top, 1, 1).data]; }})()""")
        idle = page.evaluate(f"""(() => {{ const c = nodeMap.cellCenter('big-1'), e = document.elementFromPoint(c.x, c.y);
            const r = e.getBoundingClientRect(); return [...e.getContext('2d').getImageData(c.x - r.left, c.y - r.top, 1, 1).data]; }})()""")
        assert colour != idle and colour[0] > idle[0], (colour, idle)  # warmer where more is used
        # A click opens the node's card.
        at = page.evaluate("nodeMap.cellCenter('big-3')")
        page.mouse.click(at["x"], at["y"])
        expect(page.locator('#node-detail [data-node="big-3"] .bar.cpu .nums')).to_have_text("1.5/2 cores")
        expect(page.locator('#node-detail .chip[data-pod="default/hog"]')).to_be_visible()

        # The label filter applies to the map.
        page.fill("#node-filter", f"{ZONE}=zone-b")
        expect(groups).to_have_count(1)
        expect(groups.nth(0).locator("h3")).to_contain_text("zone-b 6 nodes")
        page.fill("#node-filter", "")
        # A node added later shows without a reload.
        d.cli("apply", "-f", str(tmp_path / "more.yaml"))
        expect(groups.nth(0).locator("h3")).to_contain_text("zone-a 7 nodes", timeout=SECONDS)
        assert page.evaluate("nodeMap.cellCenter('big-13')") is not None
        page.screenshot(path=str(tmp_path / "map.png"))
    print(f"screenshot: {tmp_path / 'map.png'}")
