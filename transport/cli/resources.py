"""kubectl's command-line habits, read before and after argparse.

- `-n NS`, `--namespace NS`, `-A` and `--all-namespaces` may stand anywhere on the
  line, before the verb too (kubectl's flags are global), and so may the connection
  flags `--server`, `--token`, `--tls-ca` and `--timeout`: `hoist_namespace_flags`
  moves them to just after the client verb, where its parser reads them.
- Resources are named as kubectl names them (`resource_targets`): `TYPE`,
  `TYPE NAME...`, `TYPE1,TYPE2 [NAME...]`, or `TYPE/NAME...` (then every argument
  has that form).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from transport.cli.tables import resolve_kind

# The verbs whose parsers have -n/-A (transport.cli.main.add_client_parsers).
NAMESPACED_VERBS = frozenset({"apply", "create", "get", "describe", "delete", "watch", "explain", "complete"})
# Every verb whose parser has the connection flags (transport.cli.main._client_parent).
CLIENT_VERBS = NAMESPACED_VERBS | {"stats"}
_WITH_VALUE = ("-n", "--namespace")
_FLAGS = ("-A", "--all-namespaces")
_CONNECTION = ("--server", "--token", "--tls-ca", "--timeout")


class ResourceArgError(ValueError):
    """Resource arguments kubectl would refuse; the message says what to write."""


def _namespace_flag_len(args: Sequence[str], i: int) -> int:
    """How many tokens the namespace flag at args[i] takes (0: it is not one)."""
    tok = args[i]
    if tok in _FLAGS:
        return 1
    if tok in _WITH_VALUE:
        return 2 if i + 1 < len(args) else 1
    if tok.startswith("--namespace=") or (tok.startswith("-n") and len(tok) > 2 and not tok.startswith("--")):
        return 1
    return 0


def _connection_flag_len(args: Sequence[str], i: int) -> int:
    """How many tokens the connection flag at args[i] takes (0: it is not one)."""
    tok = args[i]
    if tok in _CONNECTION:
        return 2 if i + 1 < len(args) else 1
    return 1 if tok.startswith(tuple(f"{flag}=" for flag in _CONNECTION)) else 0


def hoist_namespace_flags(argv: Sequence[str]) -> list[str]:
    """argv with every -n/-A flag, and every connection flag before the verb, moved to
    just after the client verb (the first word that is not a flag or a flag's value);
    unchanged for other commands."""
    args = list(argv)
    hoisted: list[str] = []
    rest: list[str] = []
    verb_at = -1
    i = 0
    while i < len(args):
        n = _namespace_flag_len(args, i) or (_connection_flag_len(args, i) if verb_at < 0 else 0)
        if args[i] == "--":
            rest += args[i:]
            break
        if n:
            hoisted += args[i:i + n]
            i += n
            continue
        if verb_at < 0 and not args[i].startswith("-"):
            verb_at = len(rest)
        rest.append(args[i])
        i += 1
    if verb_at < 0 or rest[verb_at] not in CLIENT_VERBS or not hoisted:
        return args
    return rest[:verb_at + 1] + hoisted + rest[verb_at + 1:]


@dataclass(frozen=True, slots=True)
class Target:
    kind: str
    name: str | None  # None: every object of the kind


def resource_targets(args: Sequence[str]) -> list[Target]:
    """kubectl's resource arguments as (kind, name) targets, in the order given."""
    if not args:
        return []
    if any("/" in a for a in args):
        targets = []
        for a in args:
            kind, slash, name = a.partition("/")
            if not slash or not kind or not name:
                raise ResourceArgError(
                    f"there is no need to specify a resource type as a separate argument when passing arguments "
                    f"in resource/name form (e.g. 'ksched get resource/<resource_name>' instead of "
                    f"'ksched get resource resource/<resource_name>'); got {a!r}")
            targets.append(Target(resolve_kind(kind), name))
        return targets
    kinds = [resolve_kind(k) for k in args[0].split(",") if k]
    if not kinds:
        raise ResourceArgError(f"no resource type in {args[0]!r}")
    names = list(args[1:])
    if not names:
        return [Target(k, None) for k in kinds]
    return [Target(k, n) for k in kinds for n in names]


def kinds_in_order(targets: Sequence[Target]) -> list[str]:
    seen: list[str] = []
    for t in targets:
        if t.kind not in seen:
            seen.append(t.kind)
    return seen
