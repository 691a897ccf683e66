"""A real `ksched serve`: SIGTERM answers every request it has read before it
exits, and `ksched get pods` lists pods that together are far above a frame."""
from __future__ import annotations

import signal
import socket
import struct
import threading
from typing import Any

import msgpack

from tests.e2e.conftest import DaemonProcess

APPLIES = 400
PODS_PER_APPLY = 20


def _pod(name: str, args_kib: int = 0) -> dict[str, Any]:
    pod: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
                           "spec": {"containers": [{"name": "c", "image": "i",
                                                    "resources": {"requests": {"cpu": "1m"}}}]}}
    if args_kib:  # annotations stop at 256 KiB; an object may be 1.5 MiB
        pod["spec"]["containers"][0]["args"] = ["x" * 1000] * args_kib
    return pod


def _frame(msg: dict[str, Any]) -> bytes:
    body = msgpack.packb(msg, use_bin_type=True)
    return struct.pack(">I", len(body)) + body


class Frames:
    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buf = b""

    def next(self) -> dict[str, Any] | None:
        """The next frame, or None at end of stream."""
        while True:
            if len(self.buf) >= 4:
                (n,) = struct.unpack(">I", self.buf[:4])
                if len(self.buf) >= 4 + n:
                    frame = msgpack.unpackb(self.buf[4:4 + n], raw=False)
                    self.buf = self.buf[4 + n:]
                    return frame
            try:
                data = self.sock.recv(1 << 20)
            except ConnectionResetError:
                return None
            if not data:
                return None
            self.buf += data


def test_sigterm_answers_every_request_already_read_and_loses_no_acknowledged_pod(daemon_factory) -> None:
    """A client keeps sending applies through the SIGTERM. The daemon reads a
    connection in order, so a reply to request k means every request before k was
    read: each of those must be answered (done, or Unavailable) before the daemon
    exits. Before: the connections were cancelled once the pipeline had stopped,
    and the requests in flight then got no reply."""
    d: DaemonProcess = daemon_factory()
    sock = socket.create_connection(("127.0.0.1", d.port), timeout=60)
    frames = Frames(sock)
    sock.sendall(_frame({"id": 0, "op": "hello"}))
    assert frames.next()["ok"] is True  # type: ignore[index]

    def send_until_refused() -> None:
        try:
            for i in range(1, APPLIES + 1):
                sock.sendall(_frame({"id": i, "op": "apply",
                                     "objects": [_pod(f"p{i}-{j}") for j in range(PODS_PER_APPLY)]}))
        except OSError:
            pass  # the daemon has stopped reading and closed

    sender = threading.Thread(target=send_until_refused)
    sender.start()
    replies: dict[int, dict[str, Any]] = {}
    while len(replies) < 3:
        frame = frames.next()
        assert frame is not None
        replies[frame["id"]] = frame
    d.proc.send_signal(signal.SIGTERM)  # type: ignore[union-attr]
    while (frame := frames.next()) is not None:
        replies[frame["id"]] = frame
    sock.close()
    sender.join()
    assert d.proc.wait(timeout=60) == 0  # type: ignore[union-attr]
    read = max(replies)  # every request up to this one was read
    missing = [i for i in range(1, read) if i not in replies]
    assert not missing, f"requests {missing} were read before the last reply ({read}) but got none"
    outcomes = {r["error"]["reason"] if not r["ok"] else "ok" for r in replies.values()}
    assert outcomes <= {"ok", "Unavailable"}
    acknowledged = {f"p{i}-{j}" for i, r in replies.items() if i and r["ok"] for j in range(PODS_PER_APPLY)}
    again = daemon_factory(data_dir=d.data_dir)
    with again.client() as c:
        stored = {o["metadata"]["name"] for o in c.list("Pod")[0]}
    assert acknowledged <= stored
    again.terminate()


def test_get_pods_lists_pods_that_together_are_far_above_a_frame(daemon_factory) -> None:
    """Before: 16 pods of 1.4 MiB (each below the object limit) made the first list
    page TooLarge, and `ksched get pods` failed."""
    d: DaemonProcess = daemon_factory()
    names = [f"fat-{i:02}" for i in range(16)]
    with d.client() as c:
        for i in range(0, 16, 4):
            c.apply([_pod(n, 1400) for n in names[i:i + 4]])
        assert sorted(o["metadata"]["name"] for o in c.list("Pod")[0]) == names
    out = d.cli("get", "pods", "-o", "name").stdout.split()
    assert sorted(out) == [f"pod/{n}" for n in names]
    d.terminate()
