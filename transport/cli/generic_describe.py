"""kubectl's generic describer (k8s.io/kubectl/pkg/describe: genericDescriber), which
kubectl uses for kinds without a describer of their own, DRA's four among them: Name,
Namespace, Labels and Annotations, then every other field of the object, keys sorted,
nested maps indented two spaces a level, keys made "smart labels" (creationTimestamp:
Creation Timestamp, apiVersion: API Version), then the events; laid out by Go's
text/tabwriter as kubectl's tabbedString does (min width 0, padding 2, spaces)."""
from __future__ import annotations

from typing import Any, Mapping, Sequence

SKIPPED = frozenset({".metadata.name", ".metadata.namespace", ".metadata.labels", ".metadata.annotations"})
ACRONYMS = frozenset({"API", "URL", "UID", "OSB", "GUID"})
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
MAX_ANNOTATION_LEN = 140
PADDING = 2


def tabbed(text: str) -> str:
    """Go's text/tabwriter over `text` (cells end with a tab; a column block is the run
    of consecutive lines that have a cell in that column; each cell is padded to the
    block's widest cell plus PADDING)."""
    lines = [line.split("\t") for line in text.split("\n")]
    out: list[str] = []
    _format(lines, 0, len(lines), [], out)
    return "\n".join(out)


def _format(lines: list[list[str]], line0: int, line1: int, widths: list[int], out: list[str]) -> None:
    column = len(widths)
    this = line0
    while this < line1:
        if column >= len(lines[this]) - 1:
            this += 1
            continue
        _write(lines, line0, this, widths, out)
        line0 = this
        width = 0
        while this < line1 and column < len(lines[this]) - 1:
            width = max(width, len(lines[this][column]) + PADDING)
            this += 1
        _format(lines, line0, this, [*widths, width], out)
        line0 = this
    _write(lines, line0, line1, widths, out)


def _write(lines: list[list[str]], line0: int, line1: int, widths: list[int], out: list[str]) -> None:
    for cells in lines[line0:line1]:
        out.append("".join(cell.ljust(widths[j]) if j < len(widths) else cell for j, cell in enumerate(cells)))


def smart_label(field: str) -> str:
    """kubectl's smartLabelFor: camel-case words titled, known acronyms upper-cased; a
    name with characters other than letters and '-' as it is."""
    if any(not (ch.isalpha() or ch == "-") for ch in field):
        return field
    parts = []
    for part in _camel_split(field):
        parts.append(part.upper() if part.upper() in ACRONYMS else part[:1].upper() + part[1:])
    return " ".join(parts)


def _kind_of(ch: str) -> int:
    return 1 if ch.islower() else 2 if ch.isupper() else 3 if ch.isdigit() else 4


def _camel_split(s: str) -> list[str]:
    """github.com/fatih/camelcase Split: runs of one character class; an upper-case run
    followed by lower case gives its last letter to the next word (HTMLParser: HTML Parser)."""
    runs: list[list[str]] = []
    last = 0
    for ch in s:
        k = _kind_of(ch)
        if k == last:
            runs[-1].append(ch)
        else:
            runs.append([ch])
        last = k
    for i in range(len(runs) - 1):
        if runs[i][0].isupper() and runs[i + 1][0].islower():
            runs[i + 1].insert(0, runs[i].pop())
    return ["".join(r) for r in runs if r]


def _value(v: Any) -> str:
    """Go's %v of a decoded JSON value."""
    if v is None:
        return "<nil>"
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def _content(out: list[str], level: int, content: Mapping[str, Any], prefix: str) -> None:
    """kubectl's printUnstructuredContent."""
    indent = "  " * level
    for key in sorted(content):
        value = content[key]
        path = f"{prefix}.{key}"
        if path in SKIPPED:
            continue
        if isinstance(value, Mapping):
            out.append(f"{indent}{smart_label(key)}:")
            _content(out, level + 1, value, path)
        elif isinstance(value, list):
            out.append(f"{indent}{smart_label(key)}:")
            for child in value:
                if isinstance(child, Mapping):
                    _content(out, level + 1, child, path)
                else:
                    out.append(f"{indent}  {_value(child)}")
        else:
            out.append(f"{indent}{smart_label(key)}:\t{_value(value)}")


def _multiline(out: list[str], title: str, pairs: list[str]) -> None:
    """printLabelsMultiline / printAnnotationsMultiline: the first on the title's line,
    the rest one per line in the value column."""
    if not pairs:
        out.append(f"{title}:\t<none>")
        return
    out.append(f"{title}:\t{pairs[0]}")
    out.extend(f"\t{p}" for p in pairs[1:])


def describe_generic(raw: Mapping[str, Any], events: Sequence[Mapping[str, Any]], events_table: str) -> str:
    """The page kubectl's generic describer prints for `raw`; `events_table` is the
    Events section for a non-empty `events` (kubectl's DescribeEvents)."""
    meta = raw.get("metadata") or {}
    out = [f"Name:\t{meta.get('name', '')}", f"Namespace:\t{meta.get('namespace', '')}"]
    labels = meta.get("labels") or {}
    _multiline(out, "Labels", [f"{k}={labels[k]}" for k in sorted(labels)])
    annotations = {k: v for k, v in (meta.get("annotations") or {}).items() if k != LAST_APPLIED}
    lines = [f"{k}: {annotations[k]}" for k in sorted(annotations)]
    _multiline(out, "Annotations", [f"{x[:MAX_ANNOTATION_LEN]}..." if len(x) > MAX_ANNOTATION_LEN else x for x in lines])
    _content(out, 0, raw, "")
    if not events:
        out.append("Events:\t<none>")
        return tabbed("\n".join(out))
    return tabbed("\n".join(out)) + "\n" + events_table
