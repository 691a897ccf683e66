"""An etcd member dies under load: two daemons on the real 3-member cluster keep
serving, the standby never acts as leader without the lease, and clients see
Unavailable (retryable), never Internal."""
from __future__ import annotations

import re
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.conftest import DaemonProcess
from tests.etcd.test_ha_chaos import _pod, _wait_for_binding, _wait_until_all_bound
from transport.ha.etcd_local import LocalEtcd
from transport.protocol.wire import ApiError, Reason

LEASES = {"leaseDuration": "2s", "renewDeadline": "1500ms", "retryPeriod": "250ms"}
PODS = 30
# Each outage: the member the daemons talk to hangs (SIGSTOP: requests to it wait,
# the standby's campaign among them), then dies (SIGKILL: they fail at once).
FREEZE_SECONDS = 1.0
UNRETRIEVED = "Task exception was never retrieved"


class LoggedDaemon(DaemonProcess):
    """A daemon whose stderr is read as it comes (a full pipe would stall it)."""

    def start(self) -> "LoggedDaemon":
        super().start()
        self.lines: list[str] = []
        assert self.proc is not None and self.proc.stderr is not None
        self._reader = threading.Thread(target=self._read, args=(self.proc.stderr,), daemon=True)
        self._reader.start()
        return self

    def _read(self, stream: Any) -> None:
        for line in iter(stream.readline, b""):
            self.lines.append(line.decode(errors="replace"))

    def log_text(self) -> str:
        if self.proc is not None and self.proc.poll() is not None:
            self._reader.join(5)
        return "".join(self.lines)


@pytest.fixture
def two_daemons(etcd_settings, tmp_path: Path):
    cfg = tmp_path / "ha.yaml"
    cfg.write_text(yaml.safe_dump({
        "apiVersion": "ksched.io/v1alpha1", "kind": "DaemonConfiguration", "logLevel": "INFO",
        "etcd": {"prefix": etcd_settings.prefix}, "leaderElection": LEASES, "shutdownGracePeriodSeconds": 2}))
    flags = ["--config", str(cfg), "--etcd-servers", ",".join(etcd_settings.endpoints)]
    daemons = [LoggedDaemon(tmp_path / "a", flags).start(), LoggedDaemon(tmp_path / "b", flags).start()]
    yield daemons
    for d in daemons:
        if d.proc is not None and d.proc.poll() is None:
            d.proc.kill()
            d.proc.wait(timeout=10)


class Writer(threading.Thread):
    """Streams pods through both daemons, one at a time, retrying each while the
    answer is Unavailable (as a client of kube-apiserver retries a 503)."""

    def __init__(self, daemons: tuple[DaemonProcess, ...]) -> None:
        super().__init__(daemon=True)
        self.daemons = daemons
        self.acked: list[str] = []
        self.reasons: list[str] = []  # every error answer, "Reason: message"
        self.failure: BaseException | None = None
        self.finished = False
        self._progress = threading.Condition()

    def run(self) -> None:
        try:
            for i in range(PODS):
                self._apply(self.daemons[i % len(self.daemons)], _pod(f"p{i}", "100m"))
        except BaseException as e:  # noqa: BLE001 - reported by the test
            self.failure = e
        finally:
            with self._progress:
                self.finished = True  # wakes waiters for good
                self._progress.notify_all()

    def _apply(self, d: DaemonProcess, obj: dict[str, Any]) -> None:
        for _ in range(400):
            try:
                with d.client() as c:
                    c.apply([obj])
            except ApiError as e:
                self.reasons.append(f"{e.reason}: {e.message}")
                if e.reason != Reason.UNAVAILABLE:
                    raise
                time.sleep(0.05)  # a client's pause before it retries, not a wait for an event
                continue
            with self._progress:
                self.acked.append(obj["metadata"]["name"])
                self._progress.notify_all()
            return
        raise AssertionError(f"{obj['metadata']['name']} never acknowledged: {self.reasons[-3:]}")

    def wait_for(self, count: int) -> None:
        with self._progress:
            assert self._progress.wait_for(lambda: len(self.acked) >= count or self.finished, 120)


class LeaderSampler(threading.Thread):
    """Reads both daemons' leader metric (leader_election_master_status) over and
    over until stopped: the samples in which more than one says it leads."""

    GAUGE = 'leader_election_master_status{name="kube-scheduler"} 1.0'

    def __init__(self, daemons: tuple[DaemonProcess, ...]) -> None:
        super().__init__(daemon=True)
        self.daemons = daemons
        self.samples = 0
        self.both: list[int] = []
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.wait(0.1):  # the sampling period
            leading = [i for i, d in enumerate(self.daemons) if self.GAUGE in d.http_get("/metrics")]
            self.samples += 1
            if len(leading) > 1:
                self.both.append(self.samples)


def _stats(d: DaemonProcess) -> dict[str, Any]:
    with d.client() as c:
        return c.stats()["leaderElection"]


def test_a_member_killed_under_load_never_lets_a_standby_schedule_without_the_lease(
        etcd_cluster: LocalEtcd, two_daemons: list[LoggedDaemon]) -> None:
    a, b = two_daemons
    with a.client() as c:
        c.apply([{"kind": "Node", "metadata": {"name": f"n{i}"},
                  "status": {"allocatable": {"cpu": "64", "memory": "64Gi", "pods": "110"}}} for i in range(2)])
    with b.client() as c:
        c.apply([_pod("warm-up", "100m")])
    _wait_for_binding(a, {"warm-up"}, 0)  # one of them leads and schedules
    writer = Writer((a, b))
    sampler = LeaderSampler((a, b))
    killed: list[int] = []
    writer.start()
    sampler.start()
    try:
        for outage, member in enumerate((0, 1)):  # gRPC's pick_first moves to the next member
            writer.wait_for(6 + 10 * outage)
            killed.append(member)
            etcd_cluster.freeze(member)
            time.sleep(FREEZE_SECONDS)  # the length of the hang, not a wait for an event
            etcd_cluster.kill(member)
            writer.wait_for(11 + 10 * outage)
            etcd_cluster.restart(member)
        writer.join(120)
        assert writer.failure is None, writer.failure
        sampler.stop.set()
        sampler.join(10)
        _wait_until_all_bound(a, PODS + 1)
    finally:
        sampler.stop.set()
        for m in killed:
            etcd_cluster.restart(m)
    assert sampler.samples > 0 and sampler.both == []  # never two daemons saying they lead
    for d in (a, b):
        with d.client() as c:
            names = {p["metadata"]["name"] for p in c.list("Pod")[0]}
        assert {f"p{i}" for i in range(PODS)} <= names  # nothing acknowledged lost
    assert [r for r in writer.reasons if not r.startswith("Unavailable")] == []
    infos = [_stats(d) for d in (a, b)]
    for d, info in zip((a, b), infos):
        text = d.log_text()
        assert UNRETRIEVED not in text, text[-3000:]
        me = re.escape(info["identity"])
        became = len(re.findall(me + " became leader", text))
        led = len(re.findall(me + " leads: scheduling", text))
        assert led <= became, text[-3000:]  # every scheduling term rests on a lease it acquired
        # A binding still queued when the lease may have run out (the drain outlasted it on a
        # busy machine) is refused by the store before anything is sent to etcd: the fence at
        # work, not a failure. What must never happen is a write sent without a provable lease.
        refusals = re.findall(r"binding refused: (.*?); this store binds no more", text)
        assert all(r.startswith("not the leader") for r in refusals), text[-3000:]
        assert (info["fenceRefusals"] > 0) == bool(refusals), (info, refusals)
    # afterwards one of them leads, and it holds the lease etcd shows
    assert sorted(info["leading"] for info in infos) == [False, True]
    assert {info["holder"] for info in infos} == {next(i["identity"] for i in infos if i["leading"])}
