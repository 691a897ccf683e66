"""A client command starts without the daemon's, the bench's or the conformance runner's imports:
`ksched get pods` used to spend over a second importing the whole pipeline for its parser."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("actors.pipeline", "actors.scheduler", "actors.store.actor", "conformance.runner", "bench.runner",
         "framework.config", "numpy")


def modules_after(code: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", code + "\nimport sys; print('\\n'.join(sys.modules))"],
                         cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return set(out.split())


def test_building_the_whole_parser_imports_none_of_the_heavy_modules() -> None:
    loaded = modules_after("from transport.cli.main import build_parser; build_parser()")
    assert "conformance.cli" in loaded and "bench.cli" in loaded  # both subcommands are registered
    assert sorted(m for m in HEAVY if m in loaded) == []


def test_the_conformance_and_bench_subcommands_still_reach_their_runners() -> None:
    loaded = modules_after("from transport.cli.main import build_parser\n"
                           "args = build_parser().parse_args(['conformance', '/nonexistent.json'])\n"
                           "assert args.func(args) == 2")
    assert "conformance.runner" in loaded
    loaded = modules_after("from transport.cli.main import build_parser\n"
                           "args = build_parser().parse_args(['bench', 'SchedulingBasic', '--nodes', '0'])\n"
                           "assert args.func(args) == 2")
    assert "bench.runner" in loaded
