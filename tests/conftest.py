"""Suite-wide pytest hooks.

`summary` is a fixture for tests that report figures (fuzz, crash, load, chaos):
each line it is given is printed in the closing section of every run, so
`make test` shows the figures without `-s`. The lines travel on the test's report
(user_properties), so they reach the closing section from pytest-xdist's workers too.
"""
from __future__ import annotations

from typing import Callable

import pytest

_SUMMARY_LINES: list[str] = []


@pytest.fixture
def summary(request: pytest.FixtureRequest) -> Callable[[str], None]:
    """Call with one line of figures, e.g. `summary("fuzz: cases=3000 invalid=2811 crashes=0")`."""
    return lambda line: request.node.user_properties.append(("figures", line))


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when == "teardown":  # the last report of a test carries every line it gave
        _SUMMARY_LINES.extend(line for name, line in report.user_properties if name == "figures")


def pytest_terminal_summary(terminalreporter, exitstatus, config):  # noqa: ARG001 (pytest's hook signature)
    if _SUMMARY_LINES:
        terminalreporter.section("figures")
        for line in _SUMMARY_LINES:
            terminalreporter.write_line(line)
