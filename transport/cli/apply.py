"""`ksched apply -f`: stream objects to the daemon in chunks as they are parsed.

The files are parsed document by document (libyaml's parser with go-yaml's rules,
transport.cli.manifests); every `chunk_size` objects go out as one apply request
while parsing goes on, with at most WINDOW requests in flight. Each object's line
(`pod/x created`) is printed when its chunk is acknowledged, in the order the
objects were read, as kubectl prints each object as it is applied. Each chunk is
all or nothing; a chunk the daemon refuses is reported (exit 1) and the others
still apply, as kubectl goes on past an object it cannot apply. A file that
cannot be parsed stops the apply at that document (exit 2) after the chunks
before it. On a terminal (or with --progress always) stderr shows a progress bar.
"""
from __future__ import annotations

import argparse
import asyncio
import collections
import itertools
import sys
import time
from typing import Any, Iterator, TextIO

from framework.api.groups import kind_key
from framework.api.objects import KINDS
from transport.cli.manifests import Parsed, UsageError, iter_manifests
from transport.cli.tables import ref
from transport.client.tcp import Client, applied_items
from transport.protocol.wire import ApiError

WINDOW = 4  # apply requests in flight at once
# kubectl's --validate values and the fieldValidation each sends (true/false: older spellings).
VALIDATE = {"strict": "Strict", "true": "Strict", "warn": "Warn", "ignore": "Ignore", "false": "Ignore"}
PROGRESS_AFTER = 0.5  # seconds before a progress bar appears
PROGRESS_EVERY = 0.1  # seconds between redraws


class Progress:
    """A one-line bar on stderr: share of the input parsed, objects acknowledged."""

    def __init__(self, stream: TextIO, enabled: bool, delay: float = PROGRESS_AFTER) -> None:
        self.stream, self.enabled, self.delay = stream, enabled, delay
        self.started = time.monotonic()
        self.drawn_at = 0.0
        self.shown = False
        self.files: dict[str, float] = {}

    def update(self, item: Parsed | None, acknowledged: int) -> None:
        if not self.enabled:
            return
        if item is not None:
            self.files[item.source] = item.done
        now = time.monotonic()
        if now - self.started < self.delay or now - self.drawn_at < PROGRESS_EVERY:
            return
        self.drawn_at, self.shown = now, True
        done = sum(self.files.values()) / max(len(self.files), 1)
        width = 30
        bar = "=" * int(done * width)
        self.stream.write(f"\r[{bar:<{width}}] {done * 100:3.0f}% read, {acknowledged} applied")
        self.stream.flush()

    def finish(self) -> None:
        if self.shown:
            self.stream.write("\r\033[K")
            self.stream.flush()


def progress_wanted(mode: str, stream: TextIO) -> bool:
    if mode == "always":
        return True
    if mode == "never":
        return False
    return stream.isatty()


def _chunks(items: Iterator[Parsed], size: int) -> Iterator[list[Parsed]]:
    chunk: list[Parsed] = []
    for item in items:
        chunk.append(item)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def print_warnings(result: dict[str, Any], err: TextIO | None = None) -> None:
    """A write's warnings, as kubectl prints kube-apiserver's Warning headers."""
    for text in result.get("warnings") or ():
        print(f"Warning: {text}", file=err or sys.stderr)


def no_generate_name(objects: list[dict[str, Any]]) -> None:
    """apply needs each object's name to find it again (kubectl's check)."""
    for obj in objects:
        meta = obj.get("metadata") if isinstance(obj, dict) else None
        if isinstance(meta, dict) and not meta.get("name") and meta.get("generateName"):
            raise UsageError(f"from {meta['generateName']}: cannot use generate name with apply")


class _Outcome:
    def __init__(self) -> None:
        self.applied = 0
        self.failed = False
        self.groups: list[str] = []  # the PodGroups sent, as kind/name


def read_chunks(args: argparse.Namespace) -> Iterator[list[Parsed]]:
    """The first chunk is parsed now, before connecting, so that a small apply's
    unreadable input is refused before any connection is made (as kubectl does);
    the rest is parsed as it is sent."""
    chunks = _chunks(iter_manifests(args.filename), max(args.chunk_size, 1))
    first = next(chunks, None)
    return iter(()) if first is None else itertools.chain([first], chunks)


async def stream_apply(client: Client, args: argparse.Namespace, chunks: Iterator[list[Parsed]], out: TextIO,
                       err: TextIO) -> _Outcome:
    """Send the parsed objects chunk by chunk; print each chunk's lines as it is acknowledged."""
    outcome = _Outcome()
    progress = Progress(err, progress_wanted(args.progress, err), 0.0 if args.progress == "always" else PROGRESS_AFTER)
    inflight: collections.deque[tuple[list[dict[str, Any]], asyncio.Task[Any]]] = collections.deque()

    async def settle(keep: int) -> None:
        """Print what is acknowledged, waiting until at most `keep` requests are in flight."""
        while inflight and (len(inflight) > keep or inflight[0][1].done()):
            objects, task = inflight.popleft()
            try:
                result = await task
            except ApiError as e:
                progress.finish()
                where = f" (objects {ref(objects[0])} to {ref(objects[-1])}, none applied)" if len(objects) > 1 else ""
                print(f"Error from server ({e.reason}): {e.message}{where}", file=err, flush=True)
                outcome.failed = True
                continue
            print_warnings(result, err)
            _print_result(result, objects, out)
            outcome.applied += len(objects)
            progress.update(None, outcome.applied)

    try:
        for chunk in chunks:
            objects = [p.obj for p in chunk]
            if args.namespace:
                objects = [in_namespace(o, args.namespace) for o in objects]
            no_generate_name(objects)
            # Coscheduling's PodGroups only: GangScheduling (scheduling.k8s.io) is in the default profile.
            outcome.groups += [ref(o) for o in objects if kind_key(o) == "PodGroup"]
            # compact: the reply names each object and its action; the stored objects are not sent back
            request = client.request("apply", objects=objects, fieldValidation=VALIDATE[args.validate], compact=True)
            inflight.append((objects, asyncio.ensure_future(request)))
            progress.update(chunk[-1], outcome.applied)
            await asyncio.sleep(0)  # let replies that arrived be read
            await settle(keep=WINDOW - 1)
    finally:
        try:
            await settle(keep=0)
        finally:
            progress.finish()
    return outcome


def in_namespace(obj: dict[str, Any], ns: str) -> dict[str, Any]:
    """kubectl's -n for apply and create: objects that name no namespace go to `ns`; one that
    names another is an error."""
    kind = kind_key(obj)
    if kind in KINDS and not KINDS[kind].namespaced:
        return obj
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    have = meta.get("namespace")
    if have and have != ns:
        raise UsageError(f'the namespace from the provided object "{have}" does not match the namespace "{ns}". '
                         f"You must pass '--namespace={have}' to perform this operation.")
    if have:
        return obj
    return {**obj, "metadata": {**meta, "namespace": ns}}


def _print_result(result: dict[str, Any], objects: list[dict[str, Any]], out: TextIO) -> None:
    if "actions" not in result:  # too many objects to name in one reply: counts only
        print(", ".join(f"{n} {action}" for action, n in sorted(result.get("counts", {}).items())), file=out)
        return
    lines = [f"{ref(obj)} {action}" for obj, action in zip(applied_items(result, objects), result["actions"])]
    out.write("\n".join(lines) + "\n")
    out.flush()

