"""`ksched conformance`: translated upstream cases run against the real code.

The runner is conformance.runner; conformance.cli registers the subcommand without
importing it, so every other `ksched` command starts without the runner's imports.
"""
