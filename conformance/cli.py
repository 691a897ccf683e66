"""The `ksched conformance` subcommand."""
from __future__ import annotations

import argparse

from conformance import add_arguments, run


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("conformance", help="run upstream-translated conformance cases",
                       description="Run conformance case files; ends with 'N passed, N failed'.")
    add_arguments(p)
    p.set_defaults(func=run)
