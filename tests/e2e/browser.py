"""Debian's Chromium driven by Playwright (never a browser downloaded at run time).

`chromium_page()` gives a fresh headless page; a missing Chromium or Playwright
fails the test with how to install it, rather than skipping it."""
from __future__ import annotations

import os
import tempfile
from contextlib import contextmanager
from typing import Any, Iterator

import pytest

CHROMIUM = os.environ.get("KSCHED_CHROMIUM", "/usr/bin/chromium")
# Without these, Chromium on a machine with no outside network waits on
# connections (updates, sync, QUIC probes) and the first page load hangs.
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def require_browser() -> Any:
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(f"the browser test needs Chromium at {CHROMIUM}: install it with `apt-get install -y chromium` "
                    "(Debian; .ci/run does this in CI) or point KSCHED_CHROMIUM at a Chromium binary", pytrace=False)
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail("the browser test needs Playwright: `make test` installs it with the test extra "
                    "(pip install -e '.[test]')", pytrace=False)
    return sync_playwright


@contextmanager
def chromium_page(width: int = 1300, height: int = 1000, ignore_https_errors: bool = False) -> Iterator[Any]:
    sync_playwright = require_browser()
    with tempfile.TemporaryDirectory(prefix="ksched-chromium-") as profile, sync_playwright() as pw:
        ctx = pw.chromium.launch_persistent_context(profile, executable_path=CHROMIUM, headless=True, args=FLAGS,
                                                    viewport={"width": width, "height": height},
                                                    ignore_https_errors=ignore_https_errors)
        try:
            page = ctx.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            yield page
            assert not errors, f"the page raised: {errors}"
        finally:
            ctx.close()
