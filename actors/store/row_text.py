"""A stored object's row text for the SQLite backend: `json.dumps(raw, separators=(",", ":"))`,
the same text, made with less work.

- One C encoder (json's `c_make_encoder`, with the arguments `JSONEncoder(separators=(",", ":"))`
  gives it) is kept per thread instead of one made for every row. Its circular-reference
  marks are empty after an encoding that returns; after one that raises, the encoder is
  replaced, so a failed row never marks the next.
- The parts of a pod that many stored pods share are encoded once: the spec a template's
  pods are admitted with (pod_specs.py) and the containers list they share (sharing.py).
  Those parts are stored and never changed in place (the invariant both memos rest on),
  so their text stays theirs; `remember` holds each part with its text, keeping it alive
  (its id is never another object's while it is remembered). A pod's row is then joined
  from its top-level values' texts, and a spec holding a remembered value from its
  values' texts. A bound pod's spec, the template's with nodeName added (`extended`, in
  the bind), keeps the template's text with that pair before the closing brace. The C encoder
  writes a dict as `{` + `,`.join(key text `:` value text) + `}`, each value as that
  encoder would write it alone, so the joined text is the same. Anything else (a key
  that is not a str, a value it refuses) takes the whole encoding, which says what
  json.dumps says.
"""
from __future__ import annotations

import json
import threading
from json.encoder import c_make_encoder, encode_basestring_ascii  # type: ignore[attr-defined]
from typing import Any

MAX_TEXTS = 8192  # remembered parts (two memos of 4,096 each); when full it starts afresh
MAX_EXTENDED = 4096  # bound pods' specs whose text is kept (each one pod's): when full it starts afresh

_PLAIN = json.JSONEncoder(separators=(",", ":"))
_NO_PART = object()  # no value of a dict is this
_TEXTS: dict[int, tuple[Any, str]] = {}  # id(part) -> (the part, kept alive; its text)
# The same for `extended`'s dicts, bounded apart, as two maps: an (object, text) tuple a
# bound pod would be one more object for the collector to walk.
_EXTENDED: dict[int, dict[str, Any]] = {}  # id -> the dict, kept alive
_EXTENDED_TEXTS: dict[int, str] = {}


class _Encoders(threading.local):
    """The thread's C encoder: what JSONEncoder.iterencode(o, _one_shot=True) makes for _PLAIN."""

    def __init__(self) -> None:
        self.fresh()

    def fresh(self) -> None:
        p = _PLAIN
        self.c = None if c_make_encoder is None else c_make_encoder(
            {}, p.default, encode_basestring_ascii, p.indent, p.key_separator, p.item_separator,
            p.sort_keys, p.skipkeys, p.allow_nan)


_ENCODERS = _Encoders()


def encode(value: Any) -> str:
    """`_PLAIN.encode(value)`, raising as it does."""
    c = _ENCODERS.c
    if c is None:
        return _PLAIN.encode(value)
    try:
        return "".join(c(value, 0))
    except BaseException:
        _ENCODERS.fresh()  # its marks may hold the containers it was in
        raise


def remember(part: Any) -> None:
    """`part` is stored and never changed in place: keep its text (a part that cannot be
    encoded is not kept)."""
    if id(part) in _TEXTS:
        return
    try:
        text = encode(part)
    except Exception:  # noqa: BLE001 - not kept; its rows take the whole encoding, which says why
        return
    if len(_TEXTS) >= MAX_TEXTS:
        _TEXTS.clear()
    _TEXTS[id(part)] = (part, text)


def extended(base: dict[str, Any], key: str, value: str) -> dict[str, Any]:
    """`{**base, key: value}`, the store's own; when `base`'s text is remembered and `key`
    is new to it, the new dict's text is kept too: `base`'s with `,key:value` before its
    closing brace (the C encoder writes the items in order)."""
    new = {**base, key: value}
    kept = _TEXTS.get(id(base))
    if kept is not None and kept[0] is base and key not in base and type(key) is str and type(value) is str:
        pair = f"{encode_basestring_ascii(key)}:{encode_basestring_ascii(value)}"
        text = kept[1][:-1] + ("," if base else "") + pair + "}"
        if len(_EXTENDED) >= MAX_EXTENDED:
            _EXTENDED.clear()
            _EXTENDED_TEXTS.clear()
        _EXTENDED_TEXTS[id(new)] = text  # the text first: a dict found in _EXTENDED has its own
        _EXTENDED[id(new)] = new
    return new


def _joined(d: dict[Any, Any], inner: Any, inner_text: str) -> str | None:
    """`d`'s text from its values' texts (`inner`'s is `inner_text`, a remembered value's
    its kept one); None for a key that is not a str."""
    texts, esc = _TEXTS, encode_basestring_ascii
    parts = []
    for k, v in d.items():
        if type(k) is not str:
            return None
        if v is inner:
            text = inner_text
        elif type(v) is str:
            text = esc(v)
        else:
            kept = texts.get(id(v))
            text = kept[1] if kept is not None and kept[0] is v else encode(v)
        parts.append(f"{esc(k)}:{text}")
    return "{" + ",".join(parts) + "}"


def _spec_text(spec: dict[Any, Any]) -> str | None:
    """A pod spec's text when it is, or holds, a remembered part; else None."""
    kept = _TEXTS.get(id(spec))
    if kept is not None and kept[0] is spec:
        return kept[1]
    if _EXTENDED.get(id(spec)) is spec:
        return _EXTENDED_TEXTS[id(spec)]  # (a KeyError, the maps cleared meanwhile: the whole encoding)
    for v in spec.values():
        kept = _TEXTS.get(id(v))
        if kept is not None and kept[0] is v:
            return _joined(spec, _NO_PART, "")
    return None


def row_text(kind: str, raw: Any) -> str:
    """The row's body: `json.dumps(raw, separators=(",", ":"))`."""
    if kind == "Pod" and _TEXTS and type(raw) is dict:
        spec = raw.get("spec")
        if type(spec) is dict:
            try:
                spec_text = _spec_text(spec)
                text = _joined(raw, spec, spec_text) if spec_text is not None else None
            except Exception:  # noqa: BLE001 - the whole encoding below raises what json.dumps raises
                text = None
            if text is not None:
                return text
    return encode(raw)


__all__ = ["encode", "extended", "remember", "row_text"]
