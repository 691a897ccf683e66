"""What an etcd failure means, in one place, and how a loop that meets one retries.

A request to etcd can fail because etcd cannot answer now (a member died, the
cluster is electing a leader, the request ran past its deadline, the connection
broke): gRPC's UNAVAILABLE, DEADLINE_EXCEEDED, CANCELLED, ABORTED and
RESOURCE_EXHAUSTED (etcd's "too many requests"), aetcd's ConnectionFailedError /
ConnectionTimeoutError / WatchTimeoutError, and the socket errors under them.
Such a failure is transient: a client gets the store's Unavailable (retryable,
as kube-apiserver answers 503, or 504 for a timeout) and a daemon loop retries
with backoff. Anything else etcd answers (INVALID_ARGUMENT, INTERNAL, ...) is a
fault in the request, not in etcd's availability: Internal.

`Retry` is the backoff every such loop shares (the leader election, the store's
change feed): the first failure of an episode is logged once at WARNING, the
ones after it at DEBUG, the recovery at INFO; the pause doubles from `initial`
up to `cap`, with upstream's wait.Jitter factor (up to 1.2x).
"""
from __future__ import annotations

import logging
import random

import grpc
from aetcd.exceptions import ClientError, ConnectionFailedError, ConnectionTimeoutError, WatchTimeoutError

from actors.store.messages import StoreError, Unavailable

TRANSIENT_CODES = frozenset({
    grpc.StatusCode.UNAVAILABLE,
    grpc.StatusCode.DEADLINE_EXCEEDED,
    grpc.StatusCode.CANCELLED,
    grpc.StatusCode.ABORTED,
    grpc.StatusCode.RESOURCE_EXHAUSTED,
})
JITTER = 0.2


def is_transient(exc: BaseException) -> bool:
    """Whether `exc` says etcd could not answer now (a retry may succeed)."""
    if isinstance(exc, grpc.aio.AioRpcError):
        return exc.code() in TRANSIENT_CODES
    if isinstance(exc, (ConnectionFailedError, ConnectionTimeoutError, WatchTimeoutError)):
        return True
    cause = exc.__cause__
    if isinstance(exc, ClientError) and isinstance(cause, grpc.aio.AioRpcError):
        return cause.code() in TRANSIENT_CODES
    return isinstance(exc, (OSError, TimeoutError))  # ConnectionError is an OSError


def describe(exc: BaseException) -> str:
    """One line for a log or an error reply (gRPC's own repr spans several)."""
    if isinstance(exc, grpc.aio.AioRpcError):
        return f"{exc.code().name}: {exc.details()}"
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def store_error(exc: BaseException, what: str) -> StoreError:
    """The error a store request answers with when etcd failed under it."""
    if isinstance(exc, StoreError):
        return exc
    if is_transient(exc):
        return Unavailable(f"{what}: etcd is unavailable ({describe(exc)}); try again")
    return StoreError(f"{what}: {describe(exc)}")


class Retry:
    """Backoff and once-per-episode logging for a loop that talks to etcd."""

    def __init__(self, log: logging.Logger, what: str, *, initial: float, cap: float,
                 rand: random.Random | None = None) -> None:
        self.log = log
        self.what = what
        self.initial = initial
        self.cap = max(cap, initial)
        self.failures = 0  # in the current episode
        self.total = 0  # since start, for stats
        self._rand = rand or random.Random()

    def failed(self, exc: BaseException) -> float:
        """Log `exc` (at WARNING only as the episode's first); the pause before the next try."""
        if self.failures == 0:
            if is_transient(exc):
                self.log.warning("%s: etcd unavailable (%s); retrying with backoff", self.what, describe(exc))
            else:
                self.log.warning("%s failed; retrying with backoff", self.what, exc_info=exc)
        else:
            self.log.debug("%s: failure %d in a row (%s)", self.what, self.failures + 1, describe(exc))
        return self.backoff()

    def backoff(self) -> float:
        """Count one more failure (already logged); the pause before the next try."""
        self.failures += 1
        self.total += 1
        pause = min(self.cap, self.initial * 2 ** (self.failures - 1))
        return pause * (1 + JITTER * self._rand.random())

    def succeeded(self) -> None:
        if self.failures:
            self.log.info("%s: etcd answers again after %d failed attempts", self.what, self.failures)
            self.failures = 0
