"""`make serve` installs what serving needs, not the test extra."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_serve_installs_ksched_without_the_test_extra(tmp_path: Path) -> None:
    dry = subprocess.run(["make", "-n", "serve", f"VENV={tmp_path / 'venv'}"], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout
    installs = [line for line in dry.splitlines() if "pip install" in line and "upgrade pip" not in line]
    assert installs and all("[test]" not in line for line in installs), dry
    assert "ksched serve" in dry
