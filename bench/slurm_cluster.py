"""A throwaway Slurm cluster on loopback, for `python -m bench.slurm` (bench/slurm.py).

Debian's Slurm (`slurm-wlm`) and `munge` are installed with apt-get when missing,
as .ci/run installs chromium; nothing else is downloaded. Everything lives in one
temporary directory: a munge key and munged on its own socket, slurm.conf, one
slurmctld and one slurmd per emulated node (`NodeName=n[1-N] NodeHostName=localhost
Port=[a-b]`, `SlurmdParameters=config_overrides`, each slurmd started with -N), all
on 127.0.0.1. `stop()` cancels every job, waits (bounded) for the job steps to go,
then ends by PID what it started and any job step left behind (slurmstepd outlives
slurmd); nothing is found by name alone.
"""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

PACKAGES = ("slurm-wlm", "munge")
BINARIES = ("slurmctld", "slurmd", "sbatch", "squeue", "scancel", "sdiag", "sinfo", "munged", "mungekey")
READY_SECONDS = 120.0
STOP_SECONDS = 60.0


class SlurmUnavailable(RuntimeError):
    """Slurm could not be installed or did not come up; the message says why."""


def ensure_installed() -> None:
    """apt-get install slurm-wlm munge when a binary is missing (root only)."""
    if all(shutil.which(b) for b in BINARIES):
        return
    if os.geteuid() != 0:
        raise SlurmUnavailable(f"Slurm is not installed and installing it needs root: apt-get install {' '.join(PACKAGES)}")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    cmd = ["apt-get", "install", "-y", "--no-install-recommends", *PACKAGES]
    if subprocess.run(cmd, env=env).returncode != 0:
        subprocess.run(["apt-get", "update"], env=env, check=False)
        if subprocess.run(cmd, env=env).returncode != 0:
            raise SlurmUnavailable(f"apt-get install {' '.join(PACKAGES)} failed")
    missing = [b for b in BINARIES if not shutil.which(b)]
    if missing:
        raise SlurmUnavailable(f"installed, but still missing: {', '.join(missing)}")


def free_port_range(count: int, avoid: range = range(0), low: int = 20000, high: int = 60000) -> int:
    """The first port of `count` consecutive loopback ports that are all free now (and
    outside `avoid`); the search starts at a place that depends on our PID."""
    starts = list(range(low, high - count, count))
    shift = os.getpid() % len(starts)
    for base in starts[shift:] + starts[:shift]:
        ports = range(base, base + count)
        if not any(p in avoid for p in ports) and all(_port_free(p) for p in ports):
            return base
    raise SlurmUnavailable(f"no {count} consecutive free loopback ports")


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def slurm_conf(root: Path, nodes: int, cpus: int, ctld_port: int, slurmd_base: int, munge_socket: Path) -> str:
    """slurm.conf for `nodes` emulated nodes of `cpus` CPUs each, all on localhost."""
    return "\n".join([
        "ClusterName=kschedbench",
        "SlurmctldHost=localhost(127.0.0.1)",
        f"SlurmctldPort={ctld_port}",
        f"SlurmdPort={slurmd_base}",
        "SlurmUser=root",
        "SlurmdUser=root",
        "AuthType=auth/munge",
        "CredType=cred/munge",
        f"AuthInfo=socket={munge_socket}",
        f"StateSaveLocation={root}/state",
        f"SlurmdSpoolDir={root}/spool/%n",
        f"SlurmctldPidFile={root}/slurmctld.pid",
        f"SlurmdPidFile={root}/slurmd-%n.pid",
        f"SlurmctldLogFile={root}/slurmctld.log",
        f"SlurmdLogFile={root}/log/slurmd-%n.log",
        "SlurmctldDebug=info",
        "SlurmdDebug=error",
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "JobAcctGatherType=jobacct_gather/none",
        "AccountingStorageType=accounting_storage/none",
        "JobCompType=jobcomp/none",
        "MpiDefault=none",
        "SchedulerType=sched/backfill",
        # Tuned for throughput with valid values only: the event-driven main pass looks at
        # every pending job (default_queue_depth is 100), the periodic passes run every
        # second (sched_interval 60 s, bf_interval 30 s by default). sched_min_interval
        # keeps its default (2 us); 0 is not a valid setting.
        "SchedulerParameters=default_queue_depth=100000,sched_interval=1,bf_interval=1",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_CPU",
        # each slurmd reports the emulated node's CPUs from this file, not the host's
        "SlurmdParameters=config_overrides",
        "ReturnToService=2",
        "SlurmdTimeout=300",
        "SlurmctldTimeout=300",
        "InactiveLimit=0",
        "KillWait=1",
        "MinJobAge=300",
        "MaxJobCount=100000",
        "MaxArraySize=100001",
        "MessageTimeout=60",
        "TCPTimeout=10",
        f"NodeName=n[1-{nodes}] NodeHostName=localhost NodeAddr=127.0.0.1 "
        f"Port=[{slurmd_base}-{slurmd_base + nodes - 1}] CPUs={cpus} RealMemory=32768 State=UNKNOWN",
        "PartitionName=bench Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO",
        "",
    ])


@dataclass
class SlurmCluster:
    """munged + slurmctld + `nodes` slurmd on loopback, in a temporary directory."""

    nodes: int
    cpus: int = 4
    root: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="ksched-slurm-")))
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)

    @property
    def conf(self) -> Path:
        return self.root / "slurm.conf"

    @property
    def job_dir(self) -> Path:
        return self.root / "jobs"

    def start(self) -> "SlurmCluster":
        for d in ("state", "spool", "log", "munge", "jobs"):
            (self.root / d).mkdir(parents=True, exist_ok=True)
        os.chmod(self.root / "munge", 0o700)
        sock = self.root / "munge" / "munge.sock"
        key = self.root / "munge" / "munge.key"
        subprocess.run(["mungekey", "--create", f"--keyfile={key}"], check=True, capture_output=True)
        self._spawn(["munged", "--foreground", "--force", f"--socket={sock}", f"--key-file={key}",
                     f"--pid-file={self.root}/munge/munged.pid", f"--log-file={self.root}/munge/munged.log",
                     f"--seed-file={self.root}/munge/munged.seed"])
        self._wait(lambda: sock.exists(), "munged's socket")
        ctld = free_port_range(1)
        base = free_port_range(self.nodes, avoid=range(ctld, ctld + 1))
        self.conf.write_text(slurm_conf(self.root, self.nodes, self.cpus, ctld, base, sock))
        self.env = {**os.environ, "SLURM_CONF": str(self.conf)}
        self._spawn(["slurmctld", "-D", "-i", "-f", str(self.conf)])
        for i in range(1, self.nodes + 1):
            self._spawn(["slurmd", "-D", "-N", f"n{i}", "-f", str(self.conf)])
        self._wait(self._all_idle, f"{self.nodes} nodes idle in sinfo")
        return self

    def _spawn(self, cmd: list[str]) -> None:
        self.procs.append(subprocess.Popen(cmd, env=self.env or None, stdout=subprocess.DEVNULL,
                                           stderr=subprocess.DEVNULL, start_new_session=True))

    def _wait(self, ready, what: str, seconds: float = READY_SECONDS) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            dead = [p.args[0] for p in self.procs if p.poll() is not None]
            if dead:
                raise SlurmUnavailable(f"{dead[0]} exited while waiting for {what} (logs in {self.root})")
            if ready():
                return
            time.sleep(0.2)
        raise SlurmUnavailable(f"timed out waiting for {what} (logs in {self.root})")

    def _all_idle(self) -> bool:
        out = self.run(["sinfo", "-h", "-N", "-o", "%T"], check=False)
        states = out.split()
        return len(states) == self.nodes and all(s == "idle" for s in states)

    def run(self, cmd: list[str], check: bool = True) -> str:
        try:
            proc = subprocess.run(cmd, env=self.env, capture_output=True, text=True, timeout=120)
        except subprocess.TimeoutExpired:
            if check:
                raise SlurmUnavailable(f"{' '.join(cmd[:2])} did not answer in 120 s") from None
            return ""
        if check and proc.returncode != 0:
            raise SlurmUnavailable(f"{' '.join(cmd[:2])} failed: {proc.stderr.strip()}")
        return proc.stdout

    def sbatch(self, *args: str) -> str:
        """Submit; returns the job id."""
        out = self.run(["sbatch", "--parsable", f"--chdir={self.job_dir}", "-o", "/dev/null", "-e", "/dev/null",
                        *args])
        return out.strip().split(";")[0]

    def cancel_all(self) -> None:
        self.run(["scancel", "--full", "-p", "bench"], check=False)
        deadline = time.monotonic() + STOP_SECONDS
        while time.monotonic() < deadline and self.run(["squeue", "-h", "-t", "PD,R,CG,CF,S", "-o", "%i"],
                                                       check=False).strip():
            time.sleep(0.2)

    def stop(self) -> None:
        """Every job cancelled, then what we started ended by PID, then leftover steps."""
        try:
            if any(p.poll() is None for p in self.procs):
                self.cancel_all()
        finally:
            for p in reversed(self.procs):
                if p.poll() is None:
                    p.send_signal(signal.SIGTERM)
            for p in reversed(self.procs):
                try:
                    p.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
            for pid in self.leftover_pids():
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            shutil.rmtree(self.root, ignore_errors=True)

    def leftover_pids(self) -> list[int]:
        """Job steps and job processes of this cluster still alive: slurmstepd processes
        holding a file under our directory, and processes whose working directory is
        our job directory."""
        ours = str(self.root)
        found = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit() or int(entry) == os.getpid():
                continue
            try:
                if os.readlink(f"/proc/{entry}/cwd").startswith(str(self.job_dir)):
                    found.append(int(entry))
                    continue
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    if not f.read(10).startswith(b"slurmstepd"):
                        continue
                if any(os.readlink(f"/proc/{entry}/fd/{fd}").startswith(ours) for fd in os.listdir(f"/proc/{entry}/fd")):
                    found.append(int(entry))
            except OSError:
                continue
        return found
