"""Which etcd failures are Unavailable (retryable), and the backoff and
once-an-episode logging every etcd loop shares."""
from __future__ import annotations

import logging
import random

import grpc
import pytest
from aetcd.exceptions import ConnectionFailedError, InvalidArgumentError

from actors.store.etcd_errors import Retry, describe, is_transient, store_error
from actors.store.messages import Unavailable


def rpc_error(code: grpc.StatusCode, details: str) -> grpc.aio.AioRpcError:
    return grpc.aio.AioRpcError(code, grpc.aio.Metadata(), grpc.aio.Metadata(), details=details)


@pytest.mark.parametrize("exc", [
    rpc_error(grpc.StatusCode.UNAVAILABLE, "Stream removed"),
    rpc_error(grpc.StatusCode.DEADLINE_EXCEEDED, "Deadline Exceeded"),
    rpc_error(grpc.StatusCode.RESOURCE_EXHAUSTED, "etcdserver: too many requests"),
    ConnectionFailedError("etcdserver: no leader"),
    ConnectionRefusedError(111, "Connection refused"),
    TimeoutError(),
])
def test_an_etcd_that_cannot_answer_now_is_unavailable_to_clients(exc: BaseException) -> None:
    assert is_transient(exc)
    err = store_error(exc, "store commit failed")
    assert isinstance(err, Unavailable) and err.reason == "Unavailable"
    assert err.message.startswith("store commit failed: etcd is unavailable (")
    assert "\n" not in err.message  # gRPC's own repr spans several lines


@pytest.mark.parametrize("exc", [
    rpc_error(grpc.StatusCode.INVALID_ARGUMENT, "etcdserver: too many operations in txn request"),
    InvalidArgumentError("bad key"),
    ValueError("a bug"),
])
def test_a_request_etcd_refuses_or_a_bug_stays_internal(exc: BaseException) -> None:
    assert not is_transient(exc)
    assert store_error(exc, "store commit failed").reason == "Internal"


def test_describe_is_one_line_with_the_grpc_code() -> None:
    assert describe(rpc_error(grpc.StatusCode.UNAVAILABLE, "Stream removed")) == "UNAVAILABLE: Stream removed"


def test_a_failure_episode_logs_one_warning_backs_off_doubling_to_the_cap_and_logs_its_end(caplog) -> None:
    log = logging.getLogger("ksched.test.retry")
    retry = Retry(log, "campaign", initial=0.25, cap=1.0, rand=random.Random(1))
    caplog.set_level(logging.DEBUG, logger=log.name)
    pauses = [retry.failed(rpc_error(grpc.StatusCode.UNAVAILABLE, "down")) for _ in range(5)]
    bases = [0.25, 0.5, 1.0, 1.0, 1.0]
    assert all(b <= p <= b * 1.2 for p, b in zip(pauses, bases)), pauses  # upstream's jitter: up to 1.2x
    retry.succeeded()
    levels = [(r.levelno, r.getMessage().split(":")[0]) for r in caplog.records]
    assert levels == [(logging.WARNING, "campaign")] + [(logging.DEBUG, "campaign")] * 4 + [(logging.INFO, "campaign")]
    assert "answers again after 5 failed attempts" in caplog.records[-1].getMessage()
    assert retry.total == 5 and retry.failures == 0
    retry.failed(TimeoutError())  # a new episode warns again, from the first pause
    assert caplog.records[-1].levelno == logging.WARNING
