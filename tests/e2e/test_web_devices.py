"""The cluster page shows devices per node (issue 30), in a real headless Chromium
against the real daemon: each device a node's ResourceSlices publish, free or held,
and by which claim and pod; a new allocation shows without a reload."""
from __future__ import annotations

import yaml
from playwright.sync_api import expect

from tests import dra_manifests as m
from tests.actors.helpers import node
from tests.e2e.browser import chromium_page
from tests.e2e.conftest import daemon_factory, poll  # noqa: F401 - the fixture is used by name

SECONDS = 15_000


def _claim_of(c, pod: str) -> str | None:  # noqa: ANN001
    for c in c.list("ResourceClaim", "default")[0]:
        if (c.get("status") or {}).get("allocation") and any(
                r.get("name") == pod for r in c["status"].get("reservedFor") or []):
            return c["metadata"]["name"]
    return None


def test_the_page_shows_each_nodes_devices_and_which_claim_and_pod_hold_them(daemon_factory, tmp_path) -> None:  # noqa: F811
    d = daemon_factory()
    with d.client() as c:
        c.apply([node("node-1"), node("node-2"), m.device_class(), m.claim_template(),
                 m.resource_slice("node-1", gpus=2), m.pod_with_template("trainer")])
        claim = poll(lambda: _claim_of(c, "trainer"), "the trainer's claim allocated")

    with chromium_page() as page:
        page.goto(f"http://127.0.0.1:{d.http_port}/")
        expect(page.locator("#conn")).to_have_text("live", timeout=SECONDS)
        card = page.locator('#nodes [data-node="node-1"]')
        expect(card.locator(".devices .what")).to_have_text("devices 1/2 allocated", timeout=SECONDS)
        held = card.locator(".device.held")
        expect(held).to_have_count(1)
        expect(held).to_have_text(f"gpu-0 · {claim} (trainer)")
        expect(held).to_have_attribute("data-device", "gpu.example.com/node-1/gpu-0")
        expect(card.locator('.device[data-device="gpu.example.com/node-1/gpu-1"]')).to_have_text("gpu-1 · free")
        expect(page.locator('#nodes [data-node="node-2"] .devices')).to_have_count(0)  # no slice there

        (tmp_path / "second.yaml").write_text(yaml.safe_dump(m.pod_with_template("second")))
        d.cli("apply", "-f", str(tmp_path / "second.yaml"))  # followed live (the CLI: Playwright's loop owns this thread)
        expect(card.locator(".devices .what")).to_have_text("devices 2/2 allocated", timeout=SECONDS)
        expect(card.locator('.device[data-device="gpu.example.com/node-1/gpu-1"]')).to_contain_text("(second)")
