"""What one daemon lets its clients make it hold (DaemonConfiguration `limits`),
and the log of failed hellos."""
from __future__ import annotations

import dataclasses
import logging
import time

from transport.protocol.framing import DEFAULT_MAX_FRAME

log = logging.getLogger("ksched.server")


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ServerLimits:
    """What one daemon lets its clients make it hold. Defaults follow kube-apiserver
    where it has one: HTTP/2 allows 1000 streams per connection there, its TLS
    handshake times out after 10 s."""

    max_frame_bytes: int = DEFAULT_MAX_FRAME  # any frame after hello
    max_hello_bytes: int = 4096  # the first frame when a token is configured
    max_connections: int = 1000  # clients: connections that said hello with the token (no token: made a request)
    max_unauthenticated: int = 100  # strangers: connections before that, in places of their own
    handshake_timeout: float = 5.0  # seconds to connect (TLS included) and say hello (no token: make a request)
    idle_timeout: float = 300.0  # seconds an idle client connection stays open (0: forever)
    max_in_flight: int = 1000  # requests of one connection handled at once
    max_watches: int = 100  # open watches on one connection
    max_queued_frames: int = 10_000  # frames waiting for a slow reader
    max_watch_backlog_bytes: int = 64 * 1024 * 1024  # a watch's events queued for a client that does not read
    auth_failure_delay: float = 1.0  # seconds before a wrong token is answered


class AuthLog:
    """Failed hellos, logged at most once a second with how many there were."""

    def __init__(self) -> None:
        self.failures = 0
        self._unlogged = 0
        self._last = 0.0

    def failed(self, peer: object) -> None:
        self.failures += 1
        self._unlogged += 1
        now = time.monotonic()
        if now - self._last >= 1.0:
            log.warning("authentication failed from %s (%d failed hellos since the last report)", peer, self._unlogged)
            self._last, self._unlogged = now, 0
