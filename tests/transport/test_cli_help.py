"""Every positional argument and flag of every `ksched` command has help text, and
`ksched --version` prints the version (issue 22, "Help")."""
from __future__ import annotations

import argparse
import subprocess
import sys
from importlib.metadata import version

from transport.cli.main import build_parser
from transport.cli.resources import hoist_namespace_flags

ROOT = __import__("pathlib").Path(__file__).resolve().parents[2]


def _walk(parser: argparse.ArgumentParser, path: str):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _walk(sub, f"{path} {name}")
        else:
            yield path, action


def test_every_argument_of_every_command_has_help():
    missing = [f"{path} {'/'.join(a.option_strings) or a.dest}" for path, a in _walk(build_parser(), "ksched")
               if not (a.help or "").strip() or a.help == argparse.SUPPRESS]
    assert missing == []


def test_help_names_what_the_issue_asked_for():
    def help_of(*cmd: str) -> str:
        p = build_parser()
        sub = next(a for a in p._actions if isinstance(a, argparse._SubParsersAction)).choices[cmd[0]]
        return " ".join(sub.format_help().split())

    assert "cluster page" in help_of("serve")
    assert "etcd" in help_of("bench").split("--store")[2].split("--tcp")[0]
    assert "(default: 30.0)" in help_of("get")  # defaults are shown
    assert "may stand anywhere" in help_of("get")


def test_version_flag():
    out = subprocess.run([sys.executable, "-m", "transport.cli.main", "--version"], cwd=ROOT, capture_output=True,
                         text=True, check=True)
    assert out.stdout.strip() == f"ksched {version('ksched')}"


def test_namespace_flags_are_moved_after_the_verb():
    assert hoist_namespace_flags(["-n", "x", "get", "po", "a"]) == ["get", "-n", "x", "po", "a"]
    assert hoist_namespace_flags(["-A", "get", "pods"]) == ["get", "-A", "pods"]
    assert hoist_namespace_flags(["get", "po", "a", "--namespace=x", "b"]) == ["get", "--namespace=x", "po", "a", "b"]
    assert hoist_namespace_flags(["serve", "-n", "x"]) == ["serve", "-n", "x"]  # not a client verb
