"""`ksched serve` with `store.backend: etcd`: one of several daemons on one etcd.

Every daemon serves clients (get, list, watch, apply, delete, events) from its
own SharedStore, which follows etcd: the msgpack port, the cluster page and the
Kubernetes REST API on the HTTP port alike, leader or standby, as kube-apiserver
serves beside whichever kube-scheduler leads (with a token the HTTP port is HTTPS
and each daemon writes `<data-dir>/kubeconfig`, as a single daemon does). One daemon at a time is elected
(actors.leader_election) and runs the scheduling actors: a Pipeline with a
SharedStore of its own whose bindings are fenced on the election key. Like
kube-scheduler beside kube-apiserver, the scheduler's cache and queue are built
from what etcd holds when it starts leading, so a new leader resumes where the
last one stopped: pods the old leader had assumed or held at Permit (a gang
waiting for quorum) were never bound, and are simply scheduled again.

A scheduling term starts only once the elector proved the lease (acquire()
returned and is_leader holds). Leadership lost (lease expired, etcd unreachable
past renewDeadline): the leader metric drops at once, binding cycles under way
may finish only while the lease cannot have run out (the drain grace is cut to
it; after that the fence refuses them), the scheduling actors stop and the
daemon campaigns again, still serving clients. A term that cannot start (etcd
failing while the scheduler loads) gives the lease back and the campaign
resumes after a pause. On SIGTERM the leader drains its binding cycles while
still renewing, then revokes its lease so a standby takes over at once.
"""
from __future__ import annotations

import asyncio
import logging
import socket
import sys
import time
import uuid
from typing import Any

from actors.leader_election import LeaderElector
from actors.pipeline import Pipeline
from actors.store.etcd import EtcdBackend, EtcdSettings
from actors.store.etcd_errors import Retry, describe
from actors.store.shared import SharedStore
from framework.api.workload_api import gated_off
from framework.features import FeatureGates
from transport.daemon.gc_tuning import tune_after_start
from transport.daemon.system_namespaces import create_system_namespaces
from transport.daemon.serve import (Daemon, StartupError, open_http_api, open_msgpack, pipeline_stats,
                                    start_up)
from transport.kube import KubeDeps
from transport.server.explain import explain_on_live_snapshot
from transport.http.app import HttpDeps
from transport.server.tcp import Server
from transport.server.service import StoreService
from transport.server.auth_throttle import AuthThrottle
from transport.web import WebDeps
from transport.web.feed import waiters
from transport.protocol.wire import ApiError, Reason

log = logging.getLogger("ksched.ha")


class HaDaemon(Daemon):
    """Daemon whose state is in etcd, scheduling only while it leads."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.settings = EtcdSettings(endpoints=self.cfg.etcd_endpoints, prefix=self.cfg.etcd_prefix,
                                     max_txn_ops=self.cfg.etcd_max_txn_ops,
                                     max_request_bytes=self.cfg.etcd_max_request_bytes,
                                     ca_file=_path(self.cfg.etcd_ca_file), cert_file=_path(self.cfg.etcd_cert_file),
                                     key_file=_path(self.cfg.etcd_key_file))
        self.identity = f"{socket.gethostname()}_{uuid.uuid4()}"  # upstream's form: hostname_uuid
        self.elector = LeaderElector(self.settings, self.identity, self.cfg.leader_election)
        self.pipeline: Pipeline | None = None
        self.fence_refusals = 0  # bindings the fence refused, over every term that has ended
        self._lease_name = self.cfg.leader_election.resource_name

    async def run(self) -> None:
        token, ssl_context, http_tls = start_up(self.cfg, self.request_stop)
        self.phase = "starting:store"
        front = SharedStore(EtcdBackend(self.settings), clock=time.time)
        front.features = FeatureGates(self.scheduler_cfg.feature_gates)  # what the gates let in (actors.store.gates)
        try:
            await front.load()
        except Exception as exc:  # noqa: BLE001 - any etcd failure at start is a start-up error
            raise StartupError(f"etcd {','.join(self.settings.endpoints)}: cannot list objects: {exc}") from None
        self.metrics.leader_election_master_status.labels(name=self._lease_name).set(0)
        service = StoreService(front, ready=self.ready, explain=self._explain, more_stats=self._stats,
                               clock=time.time)
        throttle = AuthThrottle(self.cfg.auth_throttle)  # one budget per address across every port
        server = Server(service, token=token, max_frame=self.cfg.max_frame_bytes, ssl_context=ssl_context,
                        on_reject=self.metrics.server_rejection, auth_throttle=throttle)
        http_runner = None
        async with asyncio.TaskGroup() as tg:
            store_task = tg.create_task(front.run(), name="ksched-front-store")
            await create_system_namespaces(service)
            try:
                self.phase = "starting:listeners"
                host, port = await open_msgpack(server, self.cfg)
                if self.cfg.http is not None:
                    # The REST API writes to the shared store on every daemon; scheduling stays the leader's.
                    profiles = frozenset(p.scheduler_name for p in self.scheduler_cfg.profiles)
                    deps = HttpDeps(ready=self.ready, metrics=self.metrics, leadership=self._leadership, token=token,
                                    on_reject=self.metrics.server_rejection, auth_throttle=throttle,
                                    web=self._web(service, token, throttle),
                                    kube=KubeDeps(service=service, profiles=profiles,
                                                  hidden=gated_off(front.features.enabled)))
                    http_runner = await open_http_api(deps, self.cfg, token, http_tls)
                campaign = tg.create_task(self._campaign(), name="ksched-campaign")
                tune_after_start()
                self.phase = "running"
                self._ready = True
                log.info("state in etcd %s; identity %s", ",".join(self.settings.endpoints), self.identity)
                print(f"ksched serving on {host}:{port}", file=sys.stderr, flush=True)  # the line scripts wait for
                await self.stop_requested.wait()
                self._ready = False
                self.phase = "stopping:listeners"
                server.stop_listening()
                self.phase = "stopping:scheduling"
                await campaign
            finally:
                self._ready = False
                server.stop_listening()
                await server.drain(self.cfg.shutdown_grace_period_seconds)  # answer what was read
                front.inbox.close(drain=True)
                await store_task
                await front.close()
                await server.close()
                if http_runner is not None:
                    await http_runner.cleanup()
                await self.elector.close()
                self.phase = "stopped"

    async def _campaign(self) -> None:
        """Campaign, schedule while leading, campaign again when the lease is lost.
        Nothing here ends with an exception left unretrieved: acquire() retries
        every etcd failure itself, and a term that could not start or failed is
        logged and followed by a pause before the next campaign."""
        stop = asyncio.ensure_future(self.stop_requested.wait())
        pause = Retry(log, "scheduling term", initial=self.elector.cfg.retry_period_seconds,
                      cap=self.elector.cfg.lease_duration_seconds)
        try:
            while not self.stop_requested.is_set():
                acquire = asyncio.ensure_future(self.elector.acquire())
                await asyncio.wait({acquire, stop}, return_when=asyncio.FIRST_COMPLETED)
                if not acquire.done():
                    acquire.cancel()
                    await asyncio.gather(acquire, return_exceptions=True)
                    await self.elector.resign()  # in case it acquired as it was cancelled
                    return
                failure = None if acquire.cancelled() else acquire.exception()
                if failure is None and self.elector.is_leader and await self._lead(stop):
                    pause.succeeded()
                    continue
                if failure is not None:
                    log.error("leader election stopped unexpectedly; campaigning again", exc_info=failure)
                await self.elector.resign()
                await asyncio.wait({stop}, timeout=pause.backoff())
        finally:
            stop.cancel()

    async def _lead(self, stop: asyncio.Future[Any]) -> bool:
        """One scheduling term, from a proven lease to its end; False if it could not start."""
        gauge = self.metrics.leader_election_master_status.labels(name=self._lease_name)
        pipeline = Pipeline(self.scheduler_cfg, backend=EtcdBackend(self.settings, fence=self.elector.fence),
                            store_class=SharedStore, metrics=self.metrics,
                            drain_grace_seconds=self.cfg.shutdown_grace_period_seconds, admission=self.cfg.admission)
        hold = asyncio.ensure_future(self.elector.hold())
        start = asyncio.ensure_future(pipeline.start())
        started = False
        try:
            await asyncio.wait({start, hold, stop}, return_when=asyncio.FIRST_COMPLETED)
            if start.done() and not start.cancelled() and start.exception() is None and self.elector.is_leader:
                started = True
                self.pipeline = pipeline
                gauge.set(1)
                log.info("%s leads: scheduling", self.identity)
                await asyncio.wait({hold, stop}, return_when=asyncio.FIRST_COMPLETED)
            elif start.done() and not start.cancelled() and start.exception() is not None:
                log.warning("%s cannot start scheduling: %s", self.identity, describe(start.exception()))
        finally:
            self.pipeline = None
            gauge.set(0)  # stepped down: nothing new is scheduled from here on
            if not start.done():
                start.cancel()  # a cancelled start stops what it had started
            await asyncio.gather(start, return_exceptions=True)
            if hold.done():
                error = None if hold.cancelled() else hold.exception()
                why = hold.result() if error is None and not hold.cancelled() else \
                    f"renewing stopped: {describe(error) if error else 'cancelled'}"
                log.warning("leadership lost (%s); campaigning again", why)
                # binding cycles under way may finish only while the lease cannot have run out
                pipeline.drain_grace_seconds = min(pipeline.drain_grace_seconds, self.elector.valid_for())
                await self._stop_pipeline(pipeline)
            else:
                await self._stop_pipeline(pipeline)  # still renewing while it drains
                hold.cancel()
                await asyncio.gather(hold, return_exceptions=True)
            await self.elector.resign()
        return started

    async def _stop_pipeline(self, pipeline: Pipeline) -> None:
        try:
            await pipeline.stop()  # binds after a lost lease are refused by the fence
        except Exception as e:  # noqa: BLE001 - a failed stop must not end the campaign
            log.warning("stopping the scheduling actors: %s", describe(e))
        store = getattr(pipeline, "store", None)
        self.fence_refusals += getattr(store, "fence_refusals", 0)

    def _web(self, service: StoreService, token: str | None, throttle: AuthThrottle) -> WebDeps:
        """The cluster page on every daemon; Permit waiters are the leader's alone."""
        async def waiting() -> Any:
            p = self.pipeline
            return [] if p is None else waiters(await p.list_waiting(), p.clock.now(), time.time())

        return WebDeps(service=service, registry=self.metrics.registry, token=token, waiting=waiting,
                       hello_timeout=self.cfg.http_limits.idle_timeout,
                       max_streams=self.cfg.http_limits.websocket_limit, auth_throttle=throttle,
                       on_reject=self.metrics.server_rejection)

    async def _explain(self, pod: dict[str, Any]) -> dict[str, Any]:
        pipeline = self.pipeline
        if pipeline is None:
            holder = await self._holder()
            raise ApiError(Reason.UNAVAILABLE, f"explain: this daemon does not lead; ask the leader ({holder or 'none yet'})")
        return await explain_on_live_snapshot(pipeline, pod)

    async def _stats(self) -> dict[str, Any]:
        out: dict[str, Any] = {"leaderElection": await self._leader_info()}
        if self.pipeline is not None:
            out.update(await pipeline_stats(self.pipeline))
        return out

    async def _holder(self) -> str:
        try:
            return await self.elector.holder()
        except Exception as exc:  # noqa: BLE001 - stats and errors still answer when etcd does not
            return f"unknown ({describe(exc)})"

    async def _leader_info(self) -> dict[str, Any]:
        pipeline = self.pipeline
        refused = self.fence_refusals + getattr(getattr(pipeline, "store", None), "fence_refusals", 0)
        return {"identity": self.identity, "leading": self.elector.is_leader, "holder": await self._holder(),
                "lease": self.elector.key, "transitions": self.elector.transitions,
                "fenceRefusals": refused, "etcdErrors": self.elector.etcd_errors}

    async def _leadership(self) -> str:
        info = await self._leader_info()
        return f"leader: {info['holder'] or 'none'}; this daemon ({self.identity}): " + \
            ("leader" if info["leading"] else "standby")


def _path(p: Any) -> str | None:
    return None if p is None else str(p)
