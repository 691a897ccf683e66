"""`ksched`: the command line.

`serve` runs the daemon; the client commands (apply, create, get, describe, delete, watch,
explain, complete, stats) talk to it through transport.client.tcp.SyncClient. The
daemon address comes from --server or KSCHED_SERVER, the token from --token or
KSCHED_TOKEN. `conformance` and `bench` are registered by add_conformance_parser /
add_bench_parser below (owned by their own modules).

Heavy imports happen inside the command functions so `ksched --help` stays quick.
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import Callable, Sequence

DEFAULT_SERVER = "127.0.0.1:7777"
Handler = Callable[[argparse.Namespace], int]


def _cmd_serve(args: argparse.Namespace) -> int:
    from transport.cli.serve import serve_main

    return serve_main(args)


def _client_command(name: str) -> Handler:
    """A handler that runs transport.cli.commands.<name>(args); the import is deferred."""

    def run(args: argparse.Namespace) -> int:
        from transport.cli import commands

        return getattr(commands, name)(args)

    return run


class HelpFormatter(argparse.HelpFormatter):
    """Help with each option's default, unless its text already gives it or there is none."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        if ("default" in text or default in (None, False, argparse.SUPPRESS) or default == []
                or action.option_strings == [] and action.nargs in ("*", "?") and not default):
            return text
        return f"{text} (default: %(default)s)"


def add_serve_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("serve", help="run the scheduling daemon")
    p.add_argument("--config", metavar="FILE",
                   help="KubeSchedulerConfiguration YAML, optionally with a ksched.io/v1alpha1 DaemonConfiguration "
                        "document; fields ksched does not use are logged at start-up as ignored")
    p.add_argument("--listen", metavar="HOST:PORT",
                   help="msgpack TCP address, where the CLI and clients connect (default 127.0.0.1:7777)")
    p.add_argument("--http", metavar="HOST:PORT",
                   help="HTTP address: the cluster page (/), the Kubernetes API (for kubectl), health (/healthz, "
                        "/readyz) and metrics (/metrics) "
                        "(default 127.0.0.1:10251)")
    p.add_argument("--data-dir", metavar="DIR", help="where the SQLite store lives (default ./.ksched)")
    p.add_argument("--token-file", metavar="FILE",
                   help="file holding the token clients must send (ksched --token / KSCHED_TOKEN; default: none)")
    p.add_argument("--log-level", default=None, help="DEBUG, INFO, WARNING, ERROR (default INFO)")
    p.add_argument("--max-watch-backlog-bytes", type=int, default=None, metavar="N",
                   help="bytes of a watch's events a client may leave unread before the watch ends (default 64 MiB)")
    p.add_argument("--etcd-servers", metavar="HOST:PORT,...", default=None,
                   help="keep state in etcd at these endpoints (store.backend etcd; several daemons, one leader; "
                        "default: SQLite in --data-dir)")
    p.add_argument("--max-http-connections", type=int, default=None, metavar="N",
                   help="HTTP connections at once (limits.maxHttpConnections; default 1000)")
    p.add_argument("--http-idle-timeout", type=float, default=None, metavar="SECONDS",
                   help="close an HTTP connection that sends no complete request for this long "
                        "(limits.httpIdleTimeoutSeconds; default 32)")
    p.add_argument("--event-ttl", metavar="DURATION", default=None,
                   help="how long Events are kept (kube-apiserver's --event-ttl; limits.store.eventTTLSeconds; "
                        "default 1h; e.g. 30m, 90s)")
    p.add_argument("--feature-gates", metavar="A=true,B=false", default=None,
                   help="kube-scheduler's feature gates (over the config file's featureGates); "
                        "unknown gates are an error (default: upstream's defaults)")
    p.set_defaults(func=_cmd_serve)


def _client_parent() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument("--server", default=os.environ.get("KSCHED_SERVER", DEFAULT_SERVER), metavar="HOST:PORT",
                   help="the daemon's msgpack address (serve --listen; env KSCHED_SERVER)")
    p.add_argument("--token", default=os.environ.get("KSCHED_TOKEN"),
                   help="the token the daemon was started with (serve --token-file; env KSCHED_TOKEN; default: none)")
    p.add_argument("--tls-ca", default=os.environ.get("KSCHED_TLS_CA"), metavar="FILE",
                   help="connect with TLS, verifying the daemon against this CA bundle (env KSCHED_TLS_CA)")
    p.add_argument("--timeout", type=float, default=30.0, metavar="SECONDS", help="seconds to wait for each reply")
    return p


def _namespace_args(p: argparse.ArgumentParser, *, all_namespaces: bool = True) -> None:
    p.add_argument("-n", "--namespace", default=None, metavar="NS",
                   help="namespace of namespaced objects; may stand anywhere on the line (default: default)")
    if all_namespaces:
        p.add_argument("-A", "--all-namespaces", action="store_true",
                       help="every namespace; may stand anywhere on the line")


RESOURCES_HELP = "TYPE [NAME...], TYPE1,TYPE2 or TYPE/NAME... (kubectl's names and short names: pods, po, nodes, ...)"


def add_client_parsers(sub: argparse._SubParsersAction) -> None:
    common = _client_parent()

    for name, helptext in (("apply", "create or update objects from YAML/JSON"),
                           ("create", "create objects from YAML/JSON (generateName honoured)")):
        p = sub.add_parser(name, parents=[common], help=helptext)
        p.add_argument("-f", "--filename", action="append", required=True, metavar="FILE|DIR|-",
                       help="file, directory of .yaml/.yml/.json files, or - for stdin (repeatable)")
        p.add_argument("--validate", default="strict", choices=["strict", "warn", "ignore", "true", "false"],
                       help="unknown fields: strict refuses them (default), warn stores the object without "
                            "them and prints a warning, ignore drops them (the server's fieldValidation)")
        if name == "apply":
            p.add_argument("--chunk-size", type=int, default=500, metavar="N",
                           help="objects sent in one request as the files are read; each request is all or nothing")
            p.add_argument("--progress", choices=["auto", "always", "never"], default="auto",
                           help="progress bar on stderr for long applies (auto: when stderr is a terminal)")
        _namespace_args(p, all_namespaces=False)
        p.set_defaults(func=_client_command(f"cmd_{name}"))

    p = sub.add_parser("get", parents=[common], help="list objects or show some")
    p.add_argument("resources", nargs="*", metavar="TYPE[/NAME]", help=RESOURCES_HELP)
    _namespace_args(p)
    p.add_argument("-l", "--selector", default=None, help="label selector, e.g. app=web,tier!=db")
    p.add_argument("--field-selector", default=None, help="e.g. spec.nodeName=node-1,status.phase=Pending")
    p.add_argument("-o", "--output", choices=["wide", "json", "yaml", "name"], default=None,
                   help="wide: more columns; json/yaml: the objects; name: TYPE/NAME lines (default: a table)")
    p.add_argument("-w", "--watch", action="store_true",
                   help="after the table, print a row for every change (one TYPE; Ctrl-C to stop)")
    p.set_defaults(func=_client_command("cmd_get"))

    p = sub.add_parser("describe", parents=[common], help="show objects with their conditions and events")
    p.add_argument("resources", nargs="+", metavar="TYPE[/NAME]", help=RESOURCES_HELP + "; TYPE alone: every one")
    _namespace_args(p, all_namespaces=False)
    p.set_defaults(func=_client_command("cmd_describe"))

    p = sub.add_parser("delete", parents=[common], help="delete objects by name or from files")
    p.add_argument("resources", nargs="*", metavar="TYPE[/NAME]", help="TYPE NAME... or TYPE/NAME...")
    _namespace_args(p, all_namespaces=False)
    p.add_argument("-f", "--filename", action="append", metavar="FILE|DIR|-",
                   help="delete the objects these files name (repeatable)")
    p.set_defaults(func=_client_command("cmd_delete"))

    p = sub.add_parser("watch", parents=[common], help="stream ADDED/MODIFIED/DELETED events")
    p.add_argument("kinds", nargs="*", metavar="TYPE", help="types to watch (default: all)")
    _namespace_args(p, all_namespaces=False)
    p.add_argument("--resource-version", type=int, default=None, metavar="RV",
                   help="start after this resourceVersion (default: every current object as ADDED first)")
    p.add_argument("-o", "--output", choices=["text", "json"], default="text", help="one line per event, or JSON")
    p.add_argument("--count", type=int, default=None, metavar="N", help="exit after this many events (default: never)")
    p.set_defaults(func=_client_command("cmd_watch"))

    p = sub.add_parser("explain", parents=[common],
                       help="dry-run one pod: per node and plugin verdicts and scores (a bound pod as if unbound)")
    p.add_argument("resources", nargs="*", metavar="pod/NAME",
                   help="a stored pod: pod/NAME or pod NAME (or give -f)")
    p.add_argument("-f", "--filename", metavar="FILE|-", help="a file holding one Pod (need not be stored)")
    _namespace_args(p, all_namespaces=False)
    p.add_argument("-o", "--output", choices=["text", "json"], default="text", help="a report, or the JSON result")
    p.set_defaults(func=_client_command("cmd_explain"))

    p = sub.add_parser("complete", parents=[common], help="finish a pod (status.phase Succeeded, or Failed)")
    p.add_argument("name", help="the pod's name")
    _namespace_args(p, all_namespaces=False)
    p.add_argument("--failed", action="store_true", help="set Failed instead of Succeeded")
    p.set_defaults(func=_client_command("cmd_complete"))

    p = sub.add_parser("stats", parents=[common], help="daemon counters: objects, queue, resourceVersion")
    p.set_defaults(func=_client_command("cmd_stats"))


def add_conformance_parser(sub: argparse._SubParsersAction) -> None:
    """Hook point: `ksched conformance PATH... [--json]` (conformance, owned by the lead)."""
    try:
        from conformance.cli import add_parser
    except ModuleNotFoundError as exc:
        if exc.name not in ("conformance", "conformance.cli"):
            raise
        return
    add_parser(sub)


def add_bench_parser(sub: argparse._SubParsersAction) -> None:
    """Hook point: `ksched bench WORKLOAD [--nodes N] [--pods M] [--json]` (bench.cli, owned by the lead)."""
    try:
        from bench.cli import add_parser
    except ModuleNotFoundError as exc:
        if exc.name not in ("bench", "bench.cli"):
            raise
        return
    add_parser(sub)


def version() -> str:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    try:
        return dist_version("ksched")
    except PackageNotFoundError:
        return "dev"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ksched", description="kube-scheduler's scheduling framework as a daemon",
                                     formatter_class=HelpFormatter)
    parser.add_argument("--version", action="version", version=f"ksched {version()}", help="print the version")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    add_serve_parser(sub)
    add_client_parsers(sub)
    add_conformance_parser(sub)
    add_bench_parser(sub)
    for p in sub.choices.values():
        p.formatter_class = HelpFormatter
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    from transport.cli.resources import hoist_namespace_flags

    args = build_parser().parse_args(hoist_namespace_flags(sys.argv[1:] if argv is None else argv))
    try:
        code = args.func(args)
    except KeyboardInterrupt:
        code = 130
    except BrokenPipeError:
        code = 0
    sys.exit(code)


if __name__ == "__main__":
    main()
