"""`make serve` installs what serving needs, not the test extra; `make serve`, `make test` and
.ci/run get their system packages from one script, which installs only what is missing."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "system-packages"
needs_make = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")

# A stand-in for apt-get (the real one would change this machine): it logs its arguments and
# fails the first install, as apt-get does on a fresh machine whose package lists are empty.
FAKE_APT_GET = """#!/bin/sh
echo "$*" >> "$APT_LOG"
case "$1" in
    install) [ -e "$APT_LOG.updated" ] || exit 100 ;;
    update) : > "$APT_LOG.updated" ;;
esac
"""


def dry_run(target: str, venv: Path) -> list[str]:
    return subprocess.run(["make", "-n", target, f"VENV={venv}"], cwd=ROOT,
                          capture_output=True, text=True, check=True).stdout.splitlines()


@needs_make
def test_make_serve_installs_ksched_without_the_test_extra(tmp_path: Path) -> None:
    dry = "\n".join(dry_run("serve", tmp_path / "venv"))
    installs = [line for line in dry.splitlines() if "pip install" in line and "upgrade pip" not in line]
    assert installs and all("[test]" not in line for line in installs), dry
    assert "ksched serve" in dry


@needs_make
def test_make_serve_make_test_and_ci_run_install_system_packages_through_the_one_script(tmp_path: Path) -> None:
    serve = dry_run("serve", tmp_path / "venv")
    test = dry_run("test", tmp_path / "venv")
    venv_made = next(i for i, line in enumerate(test) if " -m venv " in line)
    assert [line for line in serve if "scripts/system-packages" in line] == ["PY=python3 scripts/system-packages serve"]
    assert serve.index("PY=python3 scripts/system-packages serve") < next(
        i for i, line in enumerate(serve) if " -m venv " in line)
    script_lines = [i for i, line in enumerate(test) if "scripts/system-packages" in line]
    assert [test[i] for i in script_lines] == ["PY=python3 scripts/system-packages serve",
                                                 "PY=python3 scripts/system-packages test"]
    assert max(script_lines) < venv_made
    ci = [line for line in (ROOT / ".ci" / "run").read_text().splitlines() if line and not line.startswith("#")]
    assert "scripts/system-packages test" in ci and ci[-1] == "make test"
    assert not [line for line in ci if "apt-get" in line], "apt-get belongs in scripts/system-packages only"


def run_script(tmp_path: Path, target: str, present: tuple[str, ...], chromium: Path) -> tuple[str, list[str]]:
    """Run the script with only `present` (and a logging apt-get) on PATH."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("env", "id", *present):  # env and id: the script's own tools
        (bin_dir / name).symlink_to(shutil.which(name) or pytest.fail(f"{name} is not on this machine"))
    (bin_dir / "python3").symlink_to(sys.executable)
    (bin_dir / "apt-get").write_text(FAKE_APT_GET)
    (bin_dir / "apt-get").chmod(0o755)
    log = tmp_path / "apt.log"
    env = {"PATH": str(bin_dir), "APT_LOG": str(log), "KSCHED_CHROMIUM": str(chromium),
           "HOME": os.environ.get("HOME", "/")}
    done = subprocess.run([shutil.which("bash") or "/bin/bash", str(SCRIPT), target], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout, log.read_text().splitlines() if log.exists() else []


@pytest.mark.skipif(os.geteuid() != 0, reason="the script asks for sudo when not root")
def test_the_script_installs_nothing_and_says_nothing_when_everything_is_present(tmp_path: Path) -> None:
    browser = tmp_path / "chromium"
    browser.write_text("#!/bin/sh\n")
    browser.chmod(0o755)
    out, apt = run_script(tmp_path, "test", ("openssl", "make", "kubectl"), browser)
    assert (out, apt) == ("", [])


@pytest.mark.skipif(os.geteuid() != 0, reason="the script asks for sudo when not root")
def test_a_missing_browser_and_openssl_are_installed_with_apt_get_updating_the_lists_when_install_fails(
        tmp_path: Path) -> None:
    out, apt = run_script(tmp_path, "test", ("make", "kubectl"), tmp_path / "no-chromium")
    assert apt == ["install -y openssl chromium", "update", "install -y openssl chromium"]
    assert "openssl: the HTTPS certificate" in out and "chromium: the cluster page's browser tests" in out


@pytest.mark.skipif(os.geteuid() != 0, reason="the script asks for sudo when not root")
def test_serving_needs_no_browser(tmp_path: Path) -> None:
    out, apt = run_script(tmp_path, "serve", ("openssl",), tmp_path / "no-chromium")
    assert (out, apt) == ("", [])


@needs_make
def test_make_test_caches_compiled_modules_under_the_venv_whatever_the_environment_says(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    dry = " ".join(line.rstrip("\\").strip() for line in dry_run("test", venv))
    run = dry[dry.index("env -u PYTHONDONTWRITEBYTECODE"):]
    assert run.split("-m pytest")[0].split()[3] == f"PYTHONPYCACHEPREFIX={venv}/pycache", run
    assert "-m pytest" in run
