"""The pure frame decoder: any split of a valid stream, oversize headers, bad bodies."""
from __future__ import annotations

import struct

import msgpack
import pytest

from transport.protocol.framing import BadFrame, FrameDecoder, FrameTooLarge, encode_frame

MESSAGES = [
    {"id": 1, "op": "hello", "token": "t"},
    {"id": 2, "op": "apply", "objects": [{"kind": "Node", "metadata": {"name": "n" * 300}}]},
    {"id": 3, "op": "stats"},
]
STREAM = b"".join(encode_frame(m) for m in MESSAGES)


@pytest.mark.parametrize("offset", range(len(STREAM) + 1))
def test_a_valid_stream_split_at_any_offset_decodes_to_the_same_frames(offset):
    d = FrameDecoder()
    frames = d.feed(STREAM[:offset]) + d.feed(STREAM[offset:])
    assert frames == MESSAGES
    assert d.buffered == 0


def test_a_stream_fed_one_byte_at_a_time_decodes_to_the_same_frames():
    d = FrameDecoder()
    frames = [f for i in range(len(STREAM)) for f in d.feed(STREAM[i:i + 1])]
    assert frames == MESSAGES


def test_an_oversize_header_is_rejected_before_any_body_byte_arrives():
    d = FrameDecoder(limit=1024)
    with pytest.raises(FrameTooLarge) as err:
        d.feed(struct.pack(">I", 1025))
    assert (err.value.length, err.value.limit) == (1025, 1024)
    assert d.buffered == 0


def test_a_decoder_stays_failed_after_an_oversize_frame():
    d = FrameDecoder(limit=8)
    with pytest.raises(FrameTooLarge):
        d.feed(struct.pack(">I", 9))
    with pytest.raises(FrameTooLarge):
        d.feed(encode_frame({}))


def test_a_frame_exactly_at_the_limit_is_accepted():
    body = msgpack.packb({"k": "x" * 20})
    d = FrameDecoder(limit=len(body))
    assert d.feed(struct.pack(">I", len(body)) + body) == [{"k": "x" * 20}]


@pytest.mark.parametrize("body, expected", [
    pytest.param(b"\xc1", "not valid msgpack", id="reserved-byte"),
    pytest.param(msgpack.packb([1, 2]), "must be a msgpack map, got list", id="array"),
    pytest.param(msgpack.packb("hi"), "must be a msgpack map, got str", id="string"),
    pytest.param(msgpack.packb({"a": 1}) + b"\x00", "not valid msgpack", id="trailing-bytes"),
    pytest.param(b"", "not valid msgpack", id="empty"),
])
def test_a_bad_body_becomes_a_bad_frame_and_the_stream_stays_in_sync(body, expected):
    d = FrameDecoder()
    frames = d.feed(struct.pack(">I", len(body)) + body + encode_frame({"id": 9}))
    assert isinstance(frames[0], BadFrame) and expected in frames[0].message
    assert frames[1:] == [{"id": 9}]


def test_encoding_refuses_a_body_above_the_limit():
    with pytest.raises(FrameTooLarge):
        encode_frame({"x": "y" * 100}, limit=50)
