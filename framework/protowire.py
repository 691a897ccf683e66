"""Protocol Buffers wire format, read without generated classes: the (field number, value)
pairs of one message. Used for Kubernetes' protobuf request bodies (transport/kube) and for
the serialized CEL AST whose cost is estimated (framework/dra/cel_cost.py)."""
from __future__ import annotations

from typing import Iterator


class ProtobufError(Exception):
    pass


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        if pos >= len(buf) or shift > 63:
            raise ProtobufError("truncated varint")
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7


def fields(buf: bytes) -> Iterator[tuple[int, int | bytes]]:
    """(field number, value) for each field: an int for varints and fixed widths, bytes for
    length-delimited ones (strings, messages, packed lists)."""
    pos = 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(buf, pos)
            yield number, value
        elif wire == 2:
            size, pos = _varint(buf, pos)
            if pos + size > len(buf):
                raise ProtobufError("truncated field")
            yield number, buf[pos:pos + size]
            pos += size
        elif wire in (1, 5):
            width = 8 if wire == 1 else 4
            if pos + width > len(buf):
                raise ProtobufError("truncated field")
            yield number, int.from_bytes(buf[pos:pos + width], "little")
            pos += width
        else:
            raise ProtobufError(f"unsupported wire type {wire}")
