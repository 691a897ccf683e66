"""`ksched serve` with `store.backend: etcd`: one of several daemons on one etcd.

Every daemon serves clients (get, list, watch, apply, delete, events) from its
own SharedStore, which follows etcd. One daemon at a time is elected
(actors.leader_election) and runs the scheduling actors: a Pipeline with a
SharedStore of its own whose bindings are fenced on the election key. Like
kube-scheduler beside kube-apiserver, the scheduler's cache and queue are built
from what etcd holds when it starts leading, so a new leader resumes where the
last one stopped: pods the old leader had assumed or held at Permit (a gang
waiting for quorum) were never bound, and are simply scheduled again.

Leadership lost (lease expired, etcd unreachable past renewDeadline): the
scheduling actors stop (bindings already refused by the fence) and the daemon
campaigns again, still serving clients. On SIGTERM the leader drains its
binding cycles, then revokes its lease so a standby takes over at once.
"""
from __future__ import annotations

import asyncio
import logging
import signal
import socket
import sys
import time
import uuid
from typing import Any

from actors.leader_election import LeaderElector
from actors.pipeline import Pipeline
from actors.store.etcd import EtcdBackend, EtcdSettings
from actors.store.shared import SharedStore
from transport.daemon.serve import Daemon, StartupError, _ssl_context, pipeline_stats
from transport.server.explain import explain_on_live_snapshot
from transport.http.app import HttpDeps, make_http_app, start_http
from transport.server.tcp import Server
from transport.server.service import StoreService
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
        self._lease_name = self.cfg.leader_election.resource_name

    async def run(self) -> None:
        token = self.cfg.read_token()
        ssl_context = _ssl_context(self.cfg)
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.request_stop, sig)
        self.phase = "starting:store"
        front = SharedStore(EtcdBackend(self.settings), clock=time.time)
        try:
            await front.load()
        except Exception as exc:  # noqa: BLE001 - any etcd failure at start is a start-up error
            raise StartupError(f"etcd {','.join(self.settings.endpoints)}: cannot list objects: {exc}") from None
        self.metrics.leader_election_master_status.labels(name=self._lease_name).set(0)
        service = StoreService(front, ready=self.ready, explain=self._explain, more_stats=self._stats,
                               clock=time.time)
        server = Server(service, token=token, max_frame=self.cfg.max_frame_bytes, ssl_context=ssl_context)
        http_runner = None
        async with asyncio.TaskGroup() as tg:
            store_task = tg.create_task(front.run(), name="ksched-front-store")
            try:
                self.phase = "starting:listeners"
                try:
                    host, port = await server.start(self.cfg.listen.host, self.cfg.listen.port)
                except OSError as exc:
                    raise StartupError(f"listen {self.cfg.listen}: {exc.strerror or exc}") from None
                if self.cfg.http is not None:
                    app = make_http_app(HttpDeps(ready=self.ready, metrics=self.metrics, leadership=self._leadership,
                                                 web=self._web(service, token)))
                    try:
                        http_runner, _ = await start_http(app, self.cfg.http.host, self.cfg.http.port)
                    except OSError as exc:
                        raise StartupError(f"http {self.cfg.http}: {exc.strerror or exc}") from None
                campaign = tg.create_task(self._campaign(), name="ksched-campaign")
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
        """Campaign, schedule while leading, campaign again when the lease is lost."""
        stop = asyncio.ensure_future(self.stop_requested.wait())
        try:
            while not self.stop_requested.is_set():
                acquire = asyncio.ensure_future(self.elector.acquire())
                await asyncio.wait({acquire, stop}, return_when=asyncio.FIRST_COMPLETED)
                if not acquire.done():
                    acquire.cancel()
                    await asyncio.gather(acquire, return_exceptions=True)
                    if self.elector.is_leader:  # acquired as it was cancelled
                        await self.elector.resign()
                    return
                await self._lead(stop)
        finally:
            stop.cancel()

    async def _lead(self, stop: asyncio.Future[Any]) -> None:
        gauge = self.metrics.leader_election_master_status.labels(name=self._lease_name)
        gauge.set(1)
        pipeline = Pipeline(self.scheduler_cfg, backend=EtcdBackend(self.settings, fence=self.elector.fence),
                            store_class=SharedStore, metrics=self.metrics,
                            drain_grace_seconds=self.cfg.shutdown_grace_period_seconds)
        hold = asyncio.ensure_future(self.elector.hold())
        try:
            await pipeline.start()
            self.pipeline = pipeline
            log.info("%s leads: scheduling", self.identity)
            await asyncio.wait({hold, stop}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            self.pipeline = None
            await pipeline.stop()  # binds after a lost lease are refused by the fence
            if hold.done():
                log.warning("leadership lost (%s); campaigning again", hold.result())
            else:
                hold.cancel()
                await asyncio.gather(hold, return_exceptions=True)
                await self.elector.resign()
            gauge.set(0)

    def _web(self, service: StoreService, token: str | None) -> WebDeps:
        """The cluster page on every daemon; Permit waiters are the leader's alone."""
        async def waiting() -> Any:
            p = self.pipeline
            return [] if p is None else waiters(await p.list_waiting(), p.clock.now(), time.time())

        return WebDeps(service=service, registry=self.metrics.registry, token=token, waiting=waiting)

    async def _explain(self, pod: dict[str, Any]) -> dict[str, Any]:
        pipeline = self.pipeline
        if pipeline is None:
            holder = await self.elector.holder()
            raise ApiError(Reason.UNAVAILABLE, f"explain: this daemon does not lead; ask the leader ({holder or 'none yet'})")
        return await explain_on_live_snapshot(pipeline, pod)

    async def _stats(self) -> dict[str, Any]:
        out: dict[str, Any] = {"leaderElection": await self._leader_info()}
        if self.pipeline is not None:
            out.update(await pipeline_stats(self.pipeline))
        return out

    async def _leader_info(self) -> dict[str, Any]:
        try:
            holder = await self.elector.holder()
        except Exception as exc:  # noqa: BLE001 - stats still answer when etcd does not
            holder = f"unknown ({exc})"
        return {"identity": self.identity, "leading": self.elector.is_leader, "holder": holder,
                "lease": self.elector.key, "transitions": self.elector.transitions}

    async def _leadership(self) -> str:
        info = await self._leader_info()
        return f"leader: {info['holder'] or 'none'}; this daemon ({self.identity}): " + \
            ("leader" if info["leading"] else "standby")


def _path(p: Any) -> str | None:
    return None if p is None else str(p)
