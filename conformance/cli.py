"""The `ksched conformance` subcommand: its arguments, and the runner imported only when it runs."""
from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="+", help="case files or directories of *.json cases")
    parser.add_argument("--json", action="store_true", help="print every case's actual results as JSON")
    parser.add_argument("-k", dest="match", default="", help="only cases whose name contains this text")


def run(args: argparse.Namespace) -> int:
    from conformance.runner import run as run_cases

    return run_cases(args)


def main(argv: list[str] | None = None) -> int:
    """`python -m conformance PATH...`: the same command outside `ksched`."""
    parser = argparse.ArgumentParser(prog="ksched conformance", description="Run conformance case files.")
    add_arguments(parser)
    return run(parser.parse_args(argv))


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("conformance", help="run upstream-translated conformance cases",
                       description="Run conformance case files; ends with 'N passed, N failed'.")
    add_arguments(p)
    p.set_defaults(func=run)
