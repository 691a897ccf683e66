"""The e2e fixture's start on free ports, when one of them is taken before the daemon binds it."""
from __future__ import annotations

import socket
from pathlib import Path

import pytest

from tests.e2e import conftest
from tests.e2e.conftest import DaemonProcess


def test_a_daemon_whose_port_is_taken_before_it_binds_is_started_again_on_fresh_ports(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    busy = taken.getsockname()[1]
    real = conftest.free_ports
    handed: list[list[int]] = []

    def first_one_busy(n: int) -> list[int]:
        ports = real(n)
        if not handed:
            ports[0] = busy  # another process got there first
        handed.append(ports)
        return ports

    monkeypatch.setattr(conftest, "free_ports", first_one_busy)
    d = DaemonProcess(tmp_path / "data").start()
    try:
        assert len(handed) == 2 and d.port == handed[1][0] != busy
        socket.create_connection(("127.0.0.1", d.port), timeout=5).close()  # the daemon listens there
        assert d.proc is not None and d.proc.poll() is None
    finally:
        d.terminate()
        taken.close()


def test_a_daemon_that_fails_for_another_reason_is_not_started_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    handed: list[list[int]] = []
    real = conftest.free_ports

    def counting(n: int) -> list[int]:
        handed.append(real(n))
        return handed[-1]

    monkeypatch.setattr(conftest, "free_ports", counting)
    with pytest.raises(AssertionError, match="daemon exited"):
        DaemonProcess(tmp_path / "data", ["--config", str(tmp_path / "missing.yaml")]).start()
    assert len(handed) == 1
