"""Time as Kubernetes and Go write it: RFC 3339 timestamps as integer nanoseconds since
the epoch (full precision kept), and durations as Go's time.Duration prints them
(the Permit timeout message quotes one, as upstream's waiting_pods_map.go does)."""
from __future__ import annotations

import re
from functools import lru_cache
from datetime import datetime, timezone

from framework.api.errors import ValidationError

_RFC3339 = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(Z|z|[+-]\d{2}:\d{2})$"
)


def parse_time(value: object, field: str) -> int:
    """Nanoseconds since the epoch of an RFC 3339 string (or a number of seconds)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return int(value * 1_000_000_000)
    if not isinstance(value, str):
        raise ValidationError(field, "must be an RFC 3339 timestamp")
    ns = _parse_text(value)
    if isinstance(ns, str):
        raise ValidationError(field, ns)
    return ns


@lru_cache(maxsize=4096)
def _parse_text(value: str) -> int | str:
    """The nanoseconds, or what is wrong (cached: an object's timestamps are read at
    every version, and objects made in the same second share them)."""
    m = _RFC3339.match(value)
    if m is None:
        return f'timestamp "{value}" is not RFC 3339'
    y, mo, d, h, mi, s, frac, tz = m.groups()
    try:
        dt = datetime(int(y), int(mo), int(d), int(h), int(mi), int(s), tzinfo=timezone.utc)
    except ValueError as e:
        return f'timestamp "{value}": {e}'
    offset = 0
    if tz not in ("Z", "z"):
        sign = 1 if tz[0] == "+" else -1
        offset = sign * (int(tz[1:3]) * 3600 + int(tz[4:6]) * 60)
    seconds = int(dt.timestamp()) - offset
    nanos = int((frac or "0").ljust(9, "0"))
    return seconds * 1_000_000_000 + nanos


def format_time(ns: int) -> str:
    """RFC 3339 in UTC; fractional seconds only when there are any."""
    seconds, nanos = divmod(ns, 1_000_000_000)
    base = datetime.fromtimestamp(seconds, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
    if nanos:
        return f"{base}.{str(nanos).rjust(9, '0').rstrip('0')}Z"
    return base + "Z"


def go_duration(seconds: float) -> str:
    """Seconds as Go's time.Duration prints them ("10s", "1m0s", "1.5s", "500ms")."""
    ns = round(seconds * 1e9)
    if ns == 0:
        return "0s"
    sign = "-" if ns < 0 else ""
    ns = abs(ns)
    if ns < 1_000_000_000:
        for unit, size in (("ms", 1_000_000), ("µs", 1_000), ("ns", 1)):
            if ns >= size:
                return sign + _trim(ns / size) + unit
    h, rem = divmod(ns, 3600 * 10**9)
    m, rem = divmod(rem, 60 * 10**9)
    s = _trim(rem / 1e9) + "s"
    if h:
        return f"{sign}{h}h{m}m{s}"
    if m:
        return f"{sign}{m}m{s}"
    return sign + s


def _trim(x: float) -> str:
    text = f"{x:.9f}".rstrip("0").rstrip(".")
    return text or "0"
