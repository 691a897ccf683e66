"""Manifests for the CLI: every object in files, directories or stdin, read as
kubectl reads them (transport.protocol.manifests: go-yaml's rules on libyaml's
parser), either all at once (`load_manifests`) or one object at a time as the text
is parsed (`iter_manifests`, for `apply`'s streaming).
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Iterable, Iterator, TextIO

import yaml

from transport.protocol.manifests import ManifestError, ManifestLoader, _marked, decode_utf8

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")


class UsageError(Exception):
    """Bad input on the command line or in a manifest (exit code 2)."""


@dataclass(frozen=True, slots=True)
class Parsed:
    """One object read from a manifest, and how far through its source the parser is."""

    obj: dict[str, Any]
    source: str
    done: float  # 0..1 of the source's text parsed


def _objects_of(doc: Any, where: str, source: str) -> Iterator[dict[str, Any]]:
    """The objects in one document: itself, a JSON array's items, a `kind: List`'s items."""
    if doc is None:
        return
    if isinstance(doc, list):
        for i, d in enumerate(doc):
            yield from _objects_of(d, f"{where}[{i}]", source)
    elif isinstance(doc, dict) and doc.get("kind") == "List" and isinstance(doc.get("items"), list):
        yield from _objects_of(doc["items"], f"{where}.items", source)
    elif isinstance(doc, dict):
        if not isinstance(doc.get("kind"), str):
            raise UsageError(f"{source}: {where}: kind: is required")
        yield doc
    else:
        raise UsageError(f"{source}: {where}: must be an object, got {type(doc).__name__}")


def iter_text(text: str, source: str) -> Iterator[Parsed]:
    """Every object in a YAML or JSON text (YAML is a superset of JSON), yielded as
    soon as its document is parsed."""
    loader = ManifestLoader(text)
    size = max(len(text), 1)
    try:
        i = 0
        while True:
            try:
                if not loader.check_node():
                    return
                node = loader.get_node()
                doc = loader.construct_document(node) if node is not None else None
            except yaml.MarkedYAMLError as exc:
                raise UsageError(f"{source}: not valid YAML or JSON: {_marked(exc, source).detail}") from None
            except yaml.YAMLError as exc:
                raise UsageError(f"{source}: not valid YAML or JSON: {' '.join(str(exc).split())}") from None
            except RecursionError:
                raise UsageError(f"{source}: not valid YAML or JSON: nested too deeply") from None
            done = min(node.end_mark.index / size, 1.0) if node is not None else 1.0
            for obj in _objects_of(doc, f"document {i}", source):
                yield Parsed(obj, source, done)
            i += 1
    finally:
        loader.dispose()


def parse_manifests(text: str, source: str) -> list[dict[str, Any]]:
    """Every object in a YAML or JSON text: many documents, JSON arrays and `kind: List`,
    read as kubectl reads them (transport.protocol.manifests)."""
    return [p.obj for p in iter_text(text, source)]


def _read_text(data: bytes, source: str) -> str:
    try:
        return decode_utf8(data, source)
    except ManifestError as exc:
        raise UsageError(str(exc)) from None


def check_sources(paths: Iterable[str]) -> list[str | Path]:
    """"-" or each file to read, directories expanded, checked before anything is read."""
    out: list[str | Path] = []
    for p in paths:
        if p == "-":
            out.append(p)
            continue
        path = Path(p)
        try:
            if path.is_dir():
                out += sorted(f for f in path.iterdir() if f.is_file() and f.suffix in MANIFEST_SUFFIXES)
            elif path.exists():
                out.append(path)
            else:
                raise UsageError(f"{p}: no such file or directory")
        except OSError as exc:
            raise UsageError(f"{exc.filename or p}: cannot read: {exc.strerror or exc}") from None
    return out


def iter_manifests(paths: Iterable[str], stdin: BinaryIO | TextIO | None = None) -> Iterator[Parsed]:
    """Every object in `paths` (files, directories of .yaml/.yml/.json, "-" for
    stdin), as it is parsed; UsageError names the source and place of a problem."""
    for src in check_sources(paths):
        if src == "-":
            stream = stdin if stdin is not None else sys.stdin.buffer
            data = stream.read()
            text = data if isinstance(data, str) else _read_text(data, "<stdin>")
            yield from iter_text(text, "<stdin>")
            continue
        try:
            data = Path(src).read_bytes()
        except OSError as exc:
            raise UsageError(f"{exc.filename or src}: cannot read: {exc.strerror or exc}") from None
        yield from iter_text(_read_text(data, str(src)), str(src))


def load_manifests(paths: Iterable[str], stdin: BinaryIO | TextIO | None = None) -> list[dict[str, Any]]:
    return [p.obj for p in iter_manifests(paths, stdin)]
