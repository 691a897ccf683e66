"""HTTP extenders against real aiohttp servers on loopback, through the whole pipeline:
filter, prioritize, bind, preempt, a slow one past its timeout, a failing one and
an ignorable one."""
from __future__ import annotations

import asyncio
import contextlib
import random
from typing import Any, AsyncIterator, Awaitable, Callable

import pytest
from aiohttp import web

from actors.clock import FakeClock
from actors.pipeline import Pipeline
from framework.api.objects import Pod
from tests import dra_manifests as dra
from tests.actors.helpers import node, pod

Handler = Callable[[dict[str, Any]], Awaitable[Any]]


class Recorder:
    """A loopback extender: verb -> handler; records every request body by verb."""

    def __init__(self, handlers: dict[str, Handler]) -> None:
        self.handlers = handlers
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.release = asyncio.Event()  # set when the server shuts down: slow handlers end

    def app(self) -> web.Application:
        app = web.Application()
        for verb in self.handlers:
            app.router.add_post(f"/{verb}", self._route(verb))
        return app

    def _route(self, verb: str) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
        async def handle(request: web.Request) -> web.StreamResponse:
            body = await request.json()
            self.calls.append((verb, body))
            out = await self.handlers[verb](body) if self.handlers[verb] is not never_answers else await self._hang()
            return out if isinstance(out, web.StreamResponse) else web.json_response(out)
        return handle

    async def _hang(self) -> web.Response:
        await self.release.wait()  # the client's httpTimeout ends the call long before
        return web.Response(status=503)

    def verbs(self) -> list[str]:
        return [v for v, _ in self.calls]


@contextlib.asynccontextmanager
async def serve(rec: Recorder) -> AsyncIterator[str]:
    runner = web.AppRunner(rec.app(), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}"  # type: ignore[union-attr]
    finally:
        rec.release.set()
        await runner.cleanup()


def names(body: dict[str, Any]) -> list[str]:
    if body.get("nodenames") is not None:
        return body["nodenames"]
    return [n["metadata"]["name"] for n in body["nodes"]["items"]]


def keep_only(*kept: str, message: str = "rejected by the test extender") -> Handler:
    async def h(body: dict[str, Any]) -> Any:
        asked = names(body)
        return {"nodes": {"items": [n for n in body["nodes"]["items"] if n["metadata"]["name"] in kept]},
                "failedNodes": {n: message for n in asked if n not in kept}}
    return h


def scores(table: dict[str, int]) -> Handler:
    async def h(body: dict[str, Any]) -> Any:
        return [{"host": n, "score": table.get(n, 0)} for n in names(body)]
    return h


async def never_answers(body: dict[str, Any]) -> Any:
    """Marks a verb whose answer never comes while the test runs (Recorder._hang)."""
    raise AssertionError("never called directly")


async def fails(body: dict[str, Any]) -> Any:
    return web.Response(status=500, text="extender is broken")


def cfg(*extenders: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
            "extenders": list(extenders)}


async def run(config: dict[str, Any], nodes: list[dict], pods: list[dict]) -> dict[str, Pod]:
    """Apply, schedule until nothing moves (extender calls are real I/O, so settling
    is unbounded in rounds), and return the pods by name."""
    clock = FakeClock()
    async with Pipeline(config, clock=clock, rand=random.Random(1)) as p:
        await p.client.apply(nodes)
        await p.client.apply(pods)
        await p.settle(max_rounds=None)
        return {o.name: o for o in p.store.peek_all("Pod") if isinstance(o, Pod)}


def scheduled_condition(p: Pod) -> dict[str, Any]:
    return next(c for c in p.conditions if c.get("type") == "PodScheduled")


THREE_NODES = [node("n1"), node("n2"), node("n3")]


async def test_a_filter_extender_narrows_the_nodes_the_plugins_found_feasible() -> None:
    rec = Recorder({"filter": keep_only("n2")})
    async with serve(rec) as url:
        pods = await run(cfg({"urlPrefix": url, "filterVerb": "filter"}), THREE_NODES, [pod("a"), pod("b")])
    assert pods["a"].node_name == "n2" and pods["b"].node_name == "n2"
    assert sorted(names(rec.calls[0][1])) == ["n1", "n2", "n3"]


async def test_an_extender_that_rejects_every_node_leaves_its_message_in_the_pod_condition() -> None:
    rec = Recorder({"filter": keep_only(message="no GPU here")})
    async with serve(rec) as url:
        pods = await run(cfg({"urlPrefix": url, "filterVerb": "filter"}), THREE_NODES, [pod("a")])
    cond = scheduled_condition(pods["a"])
    assert pods["a"].node_name is None or pods["a"].node_name == ""
    assert cond["reason"] == "Unschedulable"
    assert cond["message"] == ("0/3 nodes are available: 3 no GPU here. no new claims to deallocate, preemption: 0/3 nodes are available: "
                               "3 No preemption victims found for incoming pod.")


async def test_node_cache_capable_extenders_get_and_answer_node_names() -> None:
    async def by_name(body: dict[str, Any]) -> Any:
        assert "nodes" not in body
        return {"nodenames": ["n3"], "failedAndUnresolvableNodes": {"n1": "gone", "n2": "gone"}}

    rec = Recorder({"filter": by_name})
    async with serve(rec) as url:
        pods = await run(cfg({"urlPrefix": url, "filterVerb": "filter", "nodeCacheCapable": True}),
                         THREE_NODES, [pod("a")])
    assert pods["a"].node_name == "n3"
    assert sorted(rec.calls[0][1]["nodenames"]) == ["n1", "n2", "n3"]


async def test_prioritize_scores_are_weighted_and_scaled_onto_the_plugins_scores() -> None:
    # Identical nodes tie on every plugin; 1 * weight 2 * 10 = 20 points decide.
    rec = Recorder({"prioritize": scores({"n3": 1})})
    async with serve(rec) as url:
        pods = await run(cfg({"urlPrefix": url, "prioritizeVerb": "prioritize", "weight": 2}),
                         THREE_NODES, [pod("a")])
    assert pods["a"].node_name == "n3"
    assert rec.verbs() == ["prioritize"]


async def test_a_failing_prioritizer_adds_no_score_and_the_pod_is_still_placed() -> None:
    rec = Recorder({"prioritize": fails})
    async with serve(rec) as url:
        pods = await run(cfg({"urlPrefix": url, "prioritizeVerb": "prioritize", "weight": 1}),
                         THREE_NODES, [pod("a")])
    assert pods["a"].node_name in {"n1", "n2", "n3"}


async def test_a_failing_filter_extender_fails_the_attempt_with_its_error() -> None:
    rec = Recorder({"filter": fails})
    async with serve(rec) as url:
        pods = await run(cfg({"urlPrefix": url, "filterVerb": "filter"}), THREE_NODES, [pod("a")])
    cond = scheduled_condition(pods["a"])
    assert not pods["a"].node_name
    assert cond["reason"] == "SchedulerError"
    assert cond["message"] == f"failed filter with extender at URL {url}/filter, code 500"


async def test_a_filter_answer_that_is_not_a_json_object_fails_the_attempt() -> None:
    async def a_list(body: dict[str, Any]) -> Any:
        return ["n1"]

    rec = Recorder({"filter": a_list})
    async with serve(rec) as url:
        pods = await run(cfg({"urlPrefix": url, "filterVerb": "filter"}), THREE_NODES, [pod("a")])
    assert scheduled_condition(pods["a"])["message"] == f"extender {url} answered filter with list, not a JSON object"


async def test_an_ignorable_failing_extender_is_skipped() -> None:
    rec = Recorder({"filter": fails})
    async with serve(rec) as url:
        pods = await run(cfg({"urlPrefix": url, "filterVerb": "filter", "ignorable": True}), THREE_NODES, [pod("a")])
    assert pods["a"].node_name in {"n1", "n2", "n3"}
    assert rec.verbs() == ["filter"]


async def test_a_slow_extender_is_cut_off_at_its_http_timeout() -> None:
    rec = Recorder({"filter": never_answers})
    async with serve(rec) as url:
        pods = await run(cfg({"urlPrefix": url, "filterVerb": "filter", "httpTimeout": "100ms"}),
                         THREE_NODES, [pod("a")])
    cond = scheduled_condition(pods["a"])
    assert cond["reason"] == "SchedulerError"
    assert cond["message"] == f'Post "{url}/filter": timed out'


async def test_a_slow_ignorable_extender_delays_but_does_not_stop_placement() -> None:
    rec = Recorder({"filter": never_answers})
    async with serve(rec) as url:
        pods = await run(cfg({"urlPrefix": url, "filterVerb": "filter", "httpTimeout": "100ms", "ignorable": True}),
                         THREE_NODES, [pod("a")])
    assert pods["a"].node_name in {"n1", "n2", "n3"}


async def test_extenders_not_managing_a_requested_resource_are_never_called() -> None:
    rec = Recorder({"filter": fails, "prioritize": fails})
    ext = {"urlPrefix": "", "filterVerb": "filter", "prioritizeVerb": "prioritize", "weight": 1,
           "managedResources": [{"name": "example.com/gpu"}]}
    async with serve(rec) as url:
        ext["urlPrefix"] = url
        pods = await run(cfg(ext), THREE_NODES, [pod("a")])
    assert pods["a"].node_name in {"n1", "n2", "n3"}
    assert rec.calls == []


async def test_ignored_by_scheduler_resources_are_not_checked_by_node_resources_fit() -> None:
    gpu_pod = pod("a")
    gpu_pod["spec"]["containers"][0]["resources"]["requests"]["example.com/gpu"] = "1"
    rec = Recorder({"filter": keep_only("n1")})
    async with serve(rec) as url:
        ext = {"urlPrefix": url, "filterVerb": "filter",
               "managedResources": [{"name": "example.com/gpu", "ignoredByScheduler": True}]}
        pods = await run(cfg(ext), THREE_NODES, [gpu_pod])
    # No node advertises example.com/gpu; the extender alone decides.
    assert pods["a"].node_name == "n1"


async def test_a_binder_extender_binds_instead_of_the_default_binder() -> None:
    pipeline: list[Pipeline] = []

    async def bind(body: dict[str, Any]) -> Any:
        p = pipeline[0]
        await p.client.bind(body["podNamespace"], body["podName"], body["node"], body["podUID"])
        return {}

    rec = Recorder({"bind": bind})
    async with serve(rec) as url:
        clock = FakeClock()
        async with Pipeline(cfg({"urlPrefix": url, "bindVerb": "bind"}), clock=clock, rand=random.Random(1)) as p:
            pipeline.append(p)
            await p.client.apply(THREE_NODES)
            await p.client.apply([pod("a")])
            await p.settle(max_rounds=None)
            bound = {o.name: o.node_name for o in p.store.peek_all("Pod") if isinstance(o, Pod)}
            uid = p.store.peek("Pod", "default", "a").uid  # the server's, not the manifest's
            # The extender's binding carried no event: the scheduler records it, once.
            events = [(e.reason, e.count) for e in await p.client.events("Pod", "default/a")]
    assert events == [("Scheduled", 1)]
    assert rec.verbs() == ["bind"]
    body = rec.calls[0][1]
    assert (body["podNamespace"], body["podName"], body["podUID"]) == ("default", "a", uid)
    assert bound["a"] == body["node"]


async def test_a_binder_extender_that_fails_requeues_the_pod_unbound() -> None:
    async def refuse(body: dict[str, Any]) -> Any:
        return {"error": "binding refused"}

    rec = Recorder({"bind": refuse})
    async with serve(rec) as url:
        pods = await run(cfg({"urlPrefix": url, "bindVerb": "bind"}), THREE_NODES, [pod("a")])
    assert not pods["a"].node_name
    assert scheduled_condition(pods["a"])["message"] == "binding refused"


async def test_explain_shows_each_extender_verdict_and_scaled_score() -> None:
    rec = Recorder({"filter": keep_only("n1", "n2", message="too far"), "prioritize": scores({"n2": 3})})
    async with serve(rec) as url:
        ext = {"urlPrefix": url, "filterVerb": "filter", "prioritizeVerb": "prioritize", "weight": 1}
        async with Pipeline(cfg(ext), clock=FakeClock(), rand=random.Random(1)) as p:
            await p.client.apply(THREE_NODES)
            await p.settle(max_rounds=None)
            from actors.base import new_reply
            from actors.scheduler import Explain
            report = await p.scheduler.ask(Explain(pod=Pod(pod("x")), reply=new_reply()))
    assert report["extenders"] == [{"name": url, "interested": True, "ignorable": False}]
    assert report["nodes"]["n3"]["extenders"][url] == {"code": "Unschedulable", "reasons": ["too far"]}
    assert report["nodes"]["n3"]["feasible"] is False
    assert report["nodes"]["n2"]["scores"][url] == {"raw": 3, "normalized": 30, "weight": 1, "weighted": 30}
    assert report["chosen"] == "n2"
    from transport.cli.describe import explain_report
    text = explain_report(report)
    assert f"extender {url}" in text and "too far" in text


async def run_through_backoffs(p: Pipeline, clock: FakeClock, max_seconds: float = 60.0) -> None:
    """Settle (unbounded rounds: extender calls are real I/O), then jump the fake
    clock to each timer in turn until nothing is due within `max_seconds`."""
    start = clock.now()
    while True:
        await p.settle(max_rounds=None)
        due = clock.next_deadline()
        if due is None or due > start + max_seconds:
            return
        clock.advance_to(due)


async def test_a_pod_the_extenders_rejected_is_retried_on_any_cluster_event() -> None:
    allowed: set[str] = set()

    async def only_allowed(body: dict[str, Any]) -> Any:
        items = body["nodes"]["items"]
        return {"nodes": {"items": [n for n in items if n["metadata"]["name"] in allowed]},
                "failedNodes": {n["metadata"]["name"]: "not yet" for n in items if n["metadata"]["name"] not in allowed}}

    rec = Recorder({"filter": only_allowed})
    clock = FakeClock()
    async with serve(rec) as url:
        async with Pipeline(cfg({"urlPrefix": url, "filterVerb": "filter"}), clock=clock, rand=random.Random(1)) as p:
            await p.client.apply([node("n1")])
            await p.client.apply([pod("a")])
            await run_through_backoffs(p, clock)
            assert p.queue.queue.where("default/a") == "unschedulable"
            assert "Extender" in p.queue.queue.get("default/a").unschedulable_plugins
            allowed.add("n2")
            await p.client.apply([node("n2")])  # a Node/Add no plugin rejected the pod for
            await run_through_backoffs(p, clock)
            bound = {o.name: o.node_name for o in p.store.peek_all("Pod") if isinstance(o, Pod)}
    assert bound["a"] == "n2"


async def test_a_preempt_extender_narrows_the_candidates_and_their_victims() -> None:
    async def only_n2(body: dict[str, Any]) -> Any:
        victims = body["nodeNameToVictims"]
        assert set(victims) == {"n1", "n2"}  # DefaultPreemption found both
        kept = victims["n2"]
        return {"nodeNameToMetaVictims": {"n2": {"pods": [{"uid": v["metadata"]["uid"]} for v in kept["pods"]],
                                                 "numPDBViolations": kept["numPDBViolations"]}}}

    rec = Recorder({"preempt": only_n2})
    clock = FakeClock()
    async with serve(rec) as url:
        async with Pipeline(cfg({"urlPrefix": url, "preemptVerb": "preempt"}), clock=clock, rand=random.Random(1)) as p:
            nominations: list[str] = []  # as a client sees them: the pod's status in a store watch
            await p.client.watch(lambda ev: nominations.append(ev.obj.nominated_node_name)
                                 if ev.obj.name == "high" and ev.obj.nominated_node_name else None, frozenset({"Pod"}))
            await p.client.apply([node("n1", cpu="1"), node("n2", cpu="1")])
            await p.client.apply([pod("low-1", cpu="1", priority=0), pod("low-2", cpu="1", priority=0)])
            await run_through_backoffs(p, clock)
            placed = {o.name: o.node_name for o in p.store.peek_all("Pod") if isinstance(o, Pod)}
            victim = next(name for name, n in placed.items() if n == "n2")
            await p.client.apply([pod("high", cpu="1", priority=100)])
            await run_through_backoffs(p, clock)
            after = {o.name: o.node_name for o in p.store.peek_all("Pod") if isinstance(o, Pod)}
    assert rec.verbs() == ["preempt"]
    assert victim not in after
    assert nominations and set(nominations) == {"n2"}
    assert after["high"] == "n2"


async def test_a_failing_preempt_extender_fails_the_attempt_and_evicts_nobody() -> None:
    rec = Recorder({"preempt": fails})
    clock = FakeClock()
    async with serve(rec) as url:
        async with Pipeline(cfg({"urlPrefix": url, "preemptVerb": "preempt"}), clock=clock, rand=random.Random(1)) as p:
            await p.client.apply([node("n1", cpu="1")])
            await p.client.apply([pod("low", cpu="1", priority=0)])
            await p.settle(max_rounds=None)
            await p.client.apply([pod("high", cpu="1", priority=100)])
            await p.settle(max_rounds=None)
            pods = {o.name: o for o in p.store.peek_all("Pod") if isinstance(o, Pod)}
    assert pods["low"].node_name == "n1"
    assert not pods["high"].node_name
    assert rec.verbs() == ["preempt"]
    # As upstream, a PostFilter Error is logged, not added to the FitError message.
    assert scheduled_condition(pods["high"])["message"] == "0/1 nodes are available: 1 Insufficient cpu."


@pytest.mark.parametrize("extenders, error", [
    ([{"urlPrefix": "http://x", "prioritizeVerb": "p"}],
     "extenders[0].weight: Invalid value: 0: must have a positive weight applied to it"),
    ([{"urlPrefix": "http://x", "bindVerb": "b"}, {"urlPrefix": "http://y", "bindVerb": "b"}],
     'extenders: Invalid value: "found 2 extenders implementing bind": only one extender can implement bind'),
    ([{"urlPrefix": "http://x", "managedResources": [{"name": "kubernetes.io/foo"}]}],
     'extenders[0].managedResources[0].name: Invalid value: "kubernetes.io/foo": is an invalid extended resource name'),
    ([{"urlPrefix": "http://x", "managedResources": [{"name": "a.com/b"}]},
      {"urlPrefix": "http://y", "managedResources": [{"name": "a.com/b"}]}],
     'extenders[1].managedResources[0].name: Invalid value: "a.com/b": duplicate extender managed resource name'),
    ([{"urlPrefix": "http://x", "httpTimeout": "soon"}],
     'extenders[0].httpTimeout: Invalid value: "soon": must be a duration such as "5s" or "1m30s"'),
    ([{"filterVerb": "f"}], "extenders[0].urlPrefix: Required value"),
    ([{"urlPrefix": "https://x", "tlsConfig": {"caData": "not base64!"}}],
     'extenders[0].tlsConfig.caData: Invalid value: "<data>": must be base64-encoded PEM data'),
    ([{"urlPrefix": "http://x", "filterverb": "f"}], "extenders[0].filterverb: unknown field"),
], ids=["prioritizer-without-weight", "two-binders", "not-extended", "duplicate-managed", "bad-timeout",
        "no-url", "ca-data-not-base64", "misspelt-field"])
def test_invalid_extender_configuration_is_refused_naming_the_field(extenders: list, error: str) -> None:
    from framework.config import ConfigError, load_config

    with pytest.raises(ConfigError) as e:
        load_config({"extenders": extenders})
    assert str(e.value) == error


@pytest.fixture
def certificate(tmp_path):
    import shutil
    import subprocess

    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command")
    cert, key = tmp_path / "ext.crt", tmp_path / "ext.key"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=extender.test",
                    "-addext", "subjectAltName=DNS:extender.test", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True, timeout=60)
    return cert, key


@contextlib.asynccontextmanager
async def serve_tls(rec: Recorder, cert: Any, key: Any) -> AsyncIterator[str]:
    import ssl

    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(cert, key)
    runner = web.AppRunner(rec.app(), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=ctx)
    await site.start()
    try:
        yield f"https://127.0.0.1:{site._server.sockets[0].getsockname()[1]}"  # type: ignore[union-attr]
    finally:
        await runner.cleanup()


@pytest.mark.parametrize("tls", [
    "ca-file", "ca-data", "no-ca",
])
async def test_https_extenders_are_verified_against_their_ca_or_trusted_without_one(certificate, tls) -> None:
    import base64

    cert, key = certificate
    tls_config = {"ca-file": {"caFile": str(cert), "serverName": "extender.test"},
                  "ca-data": {"caData": base64.b64encode(cert.read_bytes()).decode(), "serverName": "extender.test"},
                  "no-ca": None}[tls]
    rec = Recorder({"filter": keep_only("n2")})
    async with serve_tls(rec, cert, key) as url:
        ext: dict[str, Any] = {"urlPrefix": url, "filterVerb": "filter", "enableHTTPS": True}
        if tls_config:
            ext["tlsConfig"] = tls_config
        pods = await run(cfg(ext), THREE_NODES, [pod("a")])
    assert pods["a"].node_name == "n2"


async def test_an_https_extender_whose_certificate_does_not_match_its_ca_fails_the_attempt(certificate, tmp_path) -> None:
    import shutil
    import subprocess

    cert, key = certificate
    other = tmp_path / "other.crt"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=other",
                    "-keyout", str(tmp_path / "other.key"), "-out", str(other)], check=True, capture_output=True, timeout=60)
    assert shutil.which("openssl")
    rec = Recorder({"filter": keep_only("n2")})
    async with serve_tls(rec, cert, key) as url:
        ext = {"urlPrefix": url, "filterVerb": "filter", "enableHTTPS": True,
               "tlsConfig": {"caFile": str(other), "serverName": "extender.test"}}
        pods = await run(cfg(ext), THREE_NODES, [pod("a")])
    assert not pods["a"].node_name
    assert scheduled_condition(pods["a"])["reason"] == "SchedulerError"
    assert rec.calls == []


async def test_a_binder_extender_binding_a_pod_with_a_claim_finds_the_claim_allocated_at_pre_bind() -> None:
    """The claim's allocation rides with the binding only when DefaultBinder binds
    (framework/bind_writes.py): with a binding extender PreBind writes it, as upstream."""
    pipeline: list[Pipeline] = []
    claims_at_bind: list[dict[str, Any]] = []

    async def bind(body: dict[str, Any]) -> Any:
        p = pipeline[0]
        claims_at_bind.extend(o.raw for o in p.store.peek_all("ResourceClaim"))
        await p.client.bind(body["podNamespace"], body["podName"], body["node"], body["podUID"])
        return {}

    rec = Recorder({"bind": bind})
    async with serve(rec) as url:
        async with Pipeline(cfg({"urlPrefix": url, "bindVerb": "bind"}), clock=FakeClock(), rand=random.Random(1)) as p:
            pipeline.append(p)
            await p.client.apply([node("n1"), dra.device_class(), dra.claim_template(),
                                  dra.resource_slice("n1", gpus=1)])
            await p.client.apply([dra.pod_with_template("trainer")])
            await p.settle(max_rounds=None)
            bound = p.store.peek("Pod", "default", "trainer").node_name
    assert rec.verbs() == ["bind"] and bound == "n1"
    [claim] = claims_at_bind
    assert claim["status"]["allocation"]["devices"]["results"][0]["device"] == "gpu-0"
    assert [r["name"] for r in claim["status"]["reservedFor"]] == ["trainer"]
