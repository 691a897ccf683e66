"""Frames on the wire: a 4-byte big-endian length, then one msgpack map.

Pure: no sockets, no event loop. `FrameDecoder.feed(data)` takes bytes as they
arrive in any split and returns the frames completed so far. A length above the
limit is rejected as soon as its 4-byte header is seen, before any of the body is
buffered, so a hostile peer cannot make the daemon allocate it.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any, Generator

import msgpack

HEADER = struct.Struct(">I")
DEFAULT_MAX_FRAME = 16 * 1024 * 1024


class FrameTooLarge(Exception):
    """The header announced a body above the limit. The stream cannot be resynchronised."""

    def __init__(self, length: int, limit: int) -> None:
        super().__init__(f"frame of {length} bytes exceeds the limit of {limit} bytes")
        self.length = length
        self.limit = limit


@dataclass(frozen=True, slots=True)
class BadFrame:
    """A complete frame whose body is not a msgpack map. The stream stays in sync
    (the length was valid), so the connection can carry on."""

    message: str


def encode_frame(obj: Any, limit: int = DEFAULT_MAX_FRAME) -> bytes:
    body = msgpack.packb(obj, use_bin_type=True)
    if len(body) > limit:
        raise FrameTooLarge(len(body), limit)
    return HEADER.pack(len(body)) + body


def decode_body(body: bytes) -> dict[str, Any] | BadFrame:
    try:
        obj = msgpack.unpackb(body, raw=False, strict_map_key=False)
    except Exception as exc:  # msgpack raises several unrelated types for bad input
        return BadFrame(f"frame body is not valid msgpack: {type(exc).__name__}")
    if not isinstance(obj, dict):
        return BadFrame(f"frame body must be a msgpack map, got {type(obj).__name__}")
    return obj


STEPPED_LEVELS = 3  # a frame's map, its lists of objects, each object's top-level fields


def decode_body_steps(body: bytes) -> Generator[None, None, dict[str, Any] | BadFrame]:
    """decode_body, as steps a caller may pause between (a generator that yields
    after each part it decoded and returns the frame): the frame's map, its lists
    and maps and theirs down to STEPPED_LEVELS are read a header at a time, what
    is below them in one call each. The result equals decode_body's."""
    unpacker = msgpack.Unpacker(raw=False, strict_map_key=False, max_buffer_size=max(len(body), 1))
    unpacker.feed(body)
    try:
        obj = yield from _stepped_value(unpacker, body, STEPPED_LEVELS)
        if unpacker.tell() != len(body):
            raise msgpack.ExtraData(obj, b"")
    except Exception as exc:  # msgpack raises several unrelated types for bad input
        return BadFrame(f"frame body is not valid msgpack: {type(exc).__name__}")
    if not isinstance(obj, dict):
        return BadFrame(f"frame body must be a msgpack map, got {type(obj).__name__}")
    return obj


def _stepped_value(unpacker: msgpack.Unpacker, body: bytes, levels: int) -> Generator[None, None, Any]:
    at = unpacker.tell()
    first = body[at] if at < len(body) else -1
    if levels and (0x80 <= first <= 0x8F or first in (0xDE, 0xDF)):
        out: dict[Any, Any] = {}
        for _ in range(unpacker.read_map_header()):
            key = unpacker.unpack()
            out[key] = yield from _stepped_value(unpacker, body, levels - 1)
            yield
        return out
    if levels and (0x90 <= first <= 0x9F or first in (0xDC, 0xDD)):
        items: list[Any] = []
        for _ in range(unpacker.read_array_header()):
            items.append((yield from _stepped_value(unpacker, body, levels - 1)))
            yield
        return items
    return unpacker.unpack()


def encode_reply_steps(rid: int | None, result: dict[str, Any], limit: int = DEFAULT_MAX_FRAME
                       ) -> Generator[None, None, bytes | None]:
    """encode_frame(ok reply) for a result with a long `items` list, as steps a
    caller may pause between (one per item); None when the frame would be above
    `limit` (found as soon as it passes it)."""
    packer = msgpack.Packer(use_bin_type=True)
    parts = [packer.pack_map_header(3), packer.pack("id"), packer.pack(rid), packer.pack("ok"), packer.pack(True),
             packer.pack("result"), packer.pack_map_header(len(result))]
    size = sum(map(len, parts))
    for key, value in result.items():
        parts.append(packer.pack(key))
        if key == "items" and isinstance(value, list):
            parts.append(packer.pack_array_header(len(value)))
            for item in value:
                parts.append(packer.pack(item))
                size += len(parts[-1])
                if size > limit:
                    return None
                yield
        else:
            parts.append(packer.pack(value))
        size += len(parts[-2]) + len(parts[-1])
        if size > limit:
            return None
    body = b"".join(parts)
    return HEADER.pack(len(body)) + body


class FrameDecoder:
    """Incremental decoder. After FrameTooLarge the decoder is poisoned: the caller
    must close the connection (the rest of the stream has no frame boundaries)."""

    __slots__ = ("limit", "_buf", "_need", "_failed")

    def __init__(self, limit: int = DEFAULT_MAX_FRAME) -> None:
        self.limit = limit
        self._buf = bytearray()
        self._need: int | None = None  # body length once the header is read
        self._failed: FrameTooLarge | None = None

    def feed(self, data: bytes) -> list[dict[str, Any] | BadFrame]:
        self.push(data)
        out: list[dict[str, Any] | BadFrame] = []
        while (frame := self.next_frame()) is not None:
            out.append(frame)
        return out

    def push(self, data: bytes) -> None:
        """Buffer bytes; take frames with next_frame()."""
        if self._failed is not None:
            raise self._failed
        self._buf += data

    def next_frame(self) -> dict[str, Any] | BadFrame | None:
        """The next complete frame, or None until more bytes come. The limit is
        read at each header, so a caller may change it between frames (the server
        allows a few KB before hello and its full limit after)."""
        body = self.next_body()
        return None if body is None else decode_body(body)

    def next_body(self) -> bytes | None:
        """The next complete frame's body, undecoded (see decode_body, decode_body_steps)."""
        if self._failed is not None:
            raise self._failed
        if self._need is None:
            if len(self._buf) < HEADER.size:
                return None
            (length,) = HEADER.unpack_from(self._buf)
            if length > self.limit:
                self._failed = FrameTooLarge(length, self.limit)
                self._buf.clear()
                raise self._failed
            del self._buf[: HEADER.size]
            self._need = length
        if len(self._buf) < self._need:
            return None
        body = bytes(self._buf[: self._need])
        del self._buf[: self._need]
        self._need = None
        return body

    @property
    def buffered(self) -> int:
        return len(self._buf)
