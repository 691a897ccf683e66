"""The real daemon as a subprocess on free loopback ports, and the real CLI."""
from __future__ import annotations

import http.client
import os
import signal
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, TypeVar

import pytest

from transport.ha.etcd_local import free_ports
from transport.client.tcp import SyncClient

ROOT = Path(__file__).resolve().parents[2]
T = TypeVar("T")
UNVERIFIED = ssl._create_unverified_context()  # noqa: SLF001 - the tests' own daemon's self-made certificate


def poll(fn: Callable[[], T | None], what: str, attempts: int = 400, interval: float = 0.025) -> T:
    """Call fn until it returns something other than None; bounded."""
    for _ in range(attempts):
        value = fn()
        if value is not None:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out waiting for {what}")


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("KSCHED_SERVER", None)
    env.pop("KSCHED_TOKEN", None)
    return env


@dataclass
class DaemonProcess:
    data_dir: Path
    extra_args: list[str] = field(default_factory=list)
    port: int = 0
    http_port: int = 0
    proc: subprocess.Popen[bytes] | None = None
    preexec_fn: Callable[[], None] | None = None  # run in the child before exec (e.g. lower a limit)
    scheme: str = "http"  # "https" once the HTTP port answers over TLS (a token is configured)

    @property
    def server(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, attempts: int = 3) -> "DaemonProcess":
        """Start on free ports. A port found free can be taken by another process
        before the daemon binds it (ephemeral ports are shared with every outgoing
        connection on the machine): the daemon then refuses to start, and only that
        refusal is retried on fresh ports."""
        for attempt in range(attempts):
            self.port, self.http_port = free_ports(2)
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "transport.cli.main", "serve", "--data-dir", str(self.data_dir),
                 "--listen", self.server, "--http", f"127.0.0.1:{self.http_port}", *self.extra_args],
                cwd=ROOT, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=self.preexec_fn)
            try:
                # Up to 60 s: a daemon's start (its imports, its store) took over 10 s on
                # a 2-core machine at load 13-28; one that exits is reported at once.
                poll(self._ready, "the daemon's /readyz", attempts=2400)
                return self
            except AssertionError as refused:
                if "address already in use" not in str(refused) or attempt == attempts - 1:
                    raise
        return self

    def _ready(self) -> bool | None:
        assert self.proc is not None
        if self.proc.poll() is not None:
            raise AssertionError(f"daemon exited with {self.proc.returncode}: {self.proc.stderr.read().decode()}")  # type: ignore[union-attr]
        for scheme in ("http", "https"):  # with a token the HTTP port serves HTTPS (transport.kube.tls)
            try:
                with urllib.request.urlopen(f"{scheme}://127.0.0.1:{self.http_port}/readyz", timeout=1,
                                            context=UNVERIFIED if scheme == "https" else None) as r:
                    if r.status == 200:
                        self.scheme = scheme
                        return True
                    return None
            except (urllib.error.URLError, ConnectionError, OSError, http.client.HTTPException):
                continue
        return None

    @property
    def base_url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.http_port}"

    def urlopen(self, req: "str | urllib.request.Request", timeout: float = 5) -> Any:
        """Open a URL on the HTTP port (trusting its self-made certificate over HTTPS)."""
        if isinstance(req, str):
            req = self.base_url + req
        return urllib.request.urlopen(req, timeout=timeout, context=UNVERIFIED if self.scheme == "https" else None)

    def http_get(self, path: str) -> str:
        with self.urlopen(path) as r:
            return r.read().decode()

    def kill9(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=10)

    def terminate(self) -> int:
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=20)

    def client(self, token: str | None = None) -> SyncClient:
        return SyncClient(self.server, token, timeout=10)

    def cli(self, *args: str, input: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run([sys.executable, "-m", "transport.cli.main", *args, "--server", self.server],
                              cwd=ROOT, env=_env(), input=input, capture_output=True, text=True, timeout=30)
        if check and proc.returncode != 0:
            raise AssertionError(f"ksched {' '.join(args)} failed ({proc.returncode}): {proc.stderr}")
        return proc


@pytest.fixture
def daemon_factory(tmp_path: Path) -> Iterator[Callable[..., DaemonProcess]]:
    started: list[DaemonProcess] = []

    def make(*extra_args: str, data_dir: Path | None = None,
             preexec_fn: Callable[[], None] | None = None) -> DaemonProcess:
        d = DaemonProcess(data_dir or tmp_path / "data", list(extra_args), preexec_fn=preexec_fn).start()
        started.append(d)
        return d

    yield make
    for d in started:
        if d.proc is not None and d.proc.poll() is None:
            d.proc.kill()
            d.proc.wait(timeout=10)
        for stream in (d.proc.stdout, d.proc.stderr) if d.proc is not None else ():
            if stream is not None:
                stream.close()
