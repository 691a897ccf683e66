"""Every translated upstream case in ../shared/conformance passes through the real code."""
from pathlib import Path

import pytest

from transport.conformance import evaluate, load_cases

SHARED = Path(__file__).resolve().parents[2] / "shared" / "conformance"
CASES = load_cases([str(SHARED)]) if SHARED.is_dir() else []


@pytest.mark.skipif(not CASES, reason="../shared/conformance is not beside this checkout")
@pytest.mark.parametrize("case", CASES, ids=[f"{c['_file']}::{c['name']}" for c in CASES])
def test_conformance_case(case):
    actual, error, diffs = evaluate(case)
    assert error is None, error
    assert not diffs, diffs
