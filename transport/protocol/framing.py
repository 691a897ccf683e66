"""Frames on the wire: a 4-byte big-endian length, then one msgpack map.

Pure: no sockets, no event loop. `FrameDecoder.feed(data)` takes bytes as they
arrive in any split and returns the frames completed so far. A length above the
limit is rejected as soon as its 4-byte header is seen, before any of the body is
buffered, so a hostile peer cannot make the daemon allocate it.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

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
        return decode_body(body)

    @property
    def buffered(self) -> int:
        return len(self._buf)
