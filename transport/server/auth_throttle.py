"""Failed authentication, throttled per peer address, shared by every port.

One AuthThrottle serves the msgpack port (hello), HTTP (Bearer token) and the
cluster page's WebSocket (its token message). Each address has a budget of
`burst` failures that refills at `per_second` failures a second (a token bucket);
while it is empty, that address's authentication attempts are refused at once,
without the token being looked at (TooManyRequests / HTTP 429 with Retry-After),
so a guesser gets `per_second` guesses a second after its first `burst`. Other
addresses are not affected. IPv6 addresses are grouped by their /64 (one host
usually holds a whole /64); IPv4-mapped IPv6 addresses count as their IPv4 address.

The table holds at most `max_addresses` addresses: the least recently failing one
is forgotten first, and an address whose budget has refilled is dropped when next
looked up. Failures and refusals are logged at most once a second, with counts.
"""
from __future__ import annotations

import ipaddress
import logging
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Callable

log = logging.getLogger("ksched.auth")


@dataclass(frozen=True, slots=True, kw_only=True)
class AuthThrottleLimits:
    burst: int = 10  # failed attempts an address may make before it is throttled
    per_second: float = 1.0  # failed attempts forgiven each second: the sustained guessing rate
    max_addresses: int = 10_000  # addresses remembered at once


class RateLimitedLog:
    """Warnings about one kind of event, at most one line per `interval` seconds,
    each saying how many events it stands for."""

    def __init__(self, logger: logging.Logger, interval: float = 1.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.logger = logger
        self.interval = interval
        self.clock = clock
        self.unreported = 0
        self._last: float | None = None

    def event(self, message: str, *args: object) -> None:
        self.unreported += 1
        now = self.clock()
        if self._last is None or now - self._last >= self.interval:
            self.logger.warning(message + " (%d such events since the last report)", *args, self.unreported)
            self._last, self.unreported = now, 0


def address_key(peer: object) -> str:
    """Whom a budget belongs to: the IPv4 address, or the IPv6 /64."""
    host = peer[0] if isinstance(peer, tuple) and peer else peer
    try:
        ip = ipaddress.ip_address(str(host).split("%", 1)[0])
    except ValueError:
        return str(host)
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((ip, 64), strict=False))
    return str(ip)


class AuthThrottle:
    def __init__(self, limits: AuthThrottleLimits | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.limits = limits if limits is not None else AuthThrottleLimits()
        self.clock = clock
        self._budgets: OrderedDict[str, tuple[float, float]] = OrderedDict()  # key -> (failures left, at)
        self._failed_log = RateLimitedLog(log, clock=clock)
        self._throttled_log = RateLimitedLog(log, clock=clock)

    def _left(self, key: str, now: float) -> float:
        entry = self._budgets.get(key)
        if entry is None:
            return float(self.limits.burst)
        left, at = entry
        return min(float(self.limits.burst), left + (now - at) * self.limits.per_second)

    def retry_after(self, peer: object, port: str = "") -> float:
        """0 when `peer` may try to authenticate now, else the seconds until it may
        (the attempt is then refused and logged)."""
        key = address_key(peer)
        now = self.clock()
        left = self._left(key, now)
        if left >= 1.0:
            if left >= self.limits.burst:
                self._budgets.pop(key, None)  # fully forgiven: forget it
            return 0.0
        wait = (1.0 - left) / self.limits.per_second
        self._throttled_log.event("authentication from %s over %s refused for %.1fs: too many failed attempts "
                                  "(%d, then %g a second)", key, port or "?", wait, self.limits.burst,
                                  self.limits.per_second)
        return wait

    def refusal(self, peer: object, port: str) -> str:
        """"" when `peer` may try now, else why not (for the reply)."""
        wait = self.retry_after(peer, port)
        return f"too many failed authentications from this address; retry in {wait:.0f}s" if wait else ""

    def failed(self, peer: object, port: str = "", *, logged: bool = True) -> None:
        """`peer` sent a wrong token: one failure off its budget (logged here unless
        the port logs its failures itself)."""
        key = address_key(peer)
        now = self.clock()
        left = max(0.0, self._left(key, now) - 1.0)
        self._budgets[key] = (left, now)
        self._budgets.move_to_end(key)
        while len(self._budgets) > self.limits.max_addresses:
            self._budgets.popitem(last=False)
        if logged:
            self._failed_log.event("authentication failed from %s over %s", key, port or "?")

    def __len__(self) -> int:
        return len(self._budgets)
