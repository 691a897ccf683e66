"""HTTP extenders: upstream's HTTPExtender over aiohttp.

One `HTTPExtender` per configured extender, each with its own ClientSession (its
own connection pool) and the configured httpTimeout on every call. Requests and
answers are extender/v1 JSON with upstream's field names (ExtenderArgs,
ExtenderFilterResult, HostPriorityList, ExtenderBindingArgs/Result,
ExtenderPreemptionArgs/Result). Go decodes JSON keys case-insensitively, so
answers are read the same way. Every failure is an ExtenderError; the callers in
framework/extender.py decide what it means.
"""
from __future__ import annotations

import asyncio
import json
import os
import ssl
import tempfile
from typing import Any, Mapping, Sequence

import aiohttp

from framework.api.objects import Pod
from framework.extender import (
    ExtenderConfig,
    ExtenderError,
    FilterResult,
    TLSConfig,
    Victims,
    convert_to_meta_victims,
    convert_to_victims,
)


def _lower_keys(obj: Any) -> dict[str, Any]:
    return {k.lower(): v for k, v in obj.items()} if isinstance(obj, dict) else {}


def _answer_object(res: Any, verb: str, name: str) -> dict[str, Any]:
    """A filter/bind/preempt answer must be a JSON object (Go would fail to decode it)."""
    if not isinstance(res, dict):
        raise ExtenderError(f"extender {name} answered {verb} with {type(res).__name__}, not a JSON object")
    return _lower_keys(res)


def _node_raw(node: Any) -> dict[str, Any]:
    """A NodeInfo, a Node or a name, as the Node JSON an extender receives."""
    n = getattr(node, "node", node)
    raw = getattr(n, "raw", None)
    if raw is not None:
        return raw
    return {"metadata": {"name": getattr(n, "name", n)}}


def _node_name(node: Any) -> str:
    return getattr(node, "name", node)


def _ssl_context(cfg: ExtenderConfig) -> ssl.SSLContext | bool:
    """Upstream's makeTransport: tlsConfig's CA, client certificate and server name;
    HTTPS without a CA (or with insecure) skips verification."""
    tls = cfg.tls_config
    if tls is None and not cfg.enable_https:
        return True  # plain HTTP, or https:// verified against the system roots
    tls = tls or TLSConfig()
    has_ca = bool(tls.ca_file or tls.ca_data)
    ctx = ssl.create_default_context(cafile=tls.ca_file or None, cadata=tls.ca_data or None)
    if tls.cert_file or tls.cert_data:
        _load_client_certificate(ctx, tls)
    if tls.insecure or (cfg.enable_https and not has_ca):
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    return ctx


def _load_client_certificate(ctx: ssl.SSLContext, tls: TLSConfig) -> None:
    if tls.cert_file:
        ctx.load_cert_chain(tls.cert_file, tls.key_file or None)
        return
    # ssl loads certificates from files only: PEM data goes through private temporary files.
    with tempfile.TemporaryDirectory() as d:
        cert, key = os.path.join(d, "cert.pem"), os.path.join(d, "key.pem")
        with open(cert, "w") as f:
            f.write(tls.cert_data)
        with open(key, "w") as f:
            f.write(tls.key_data)
        ctx.load_cert_chain(cert, key)


class HTTPExtender:
    """framework.extender.Extender over HTTP."""

    def __init__(self, config: ExtenderConfig) -> None:
        self.config = config
        self._managed = frozenset(r.name for r in config.managed_resources)
        self._session: aiohttp.ClientSession | None = None
        self._server_name = (config.tls_config.server_name or None) if config.tls_config else None

    @property
    def name(self) -> str:
        return self.config.url_prefix

    def is_interested(self, pod: Pod) -> bool:
        return self.config.is_interested(pod)

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(ssl=_ssl_context(self.config)),
                timeout=aiohttp.ClientTimeout(total=self.config.http_timeout_seconds),
            )
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def _send(self, verb: str, args: Mapping[str, Any]) -> Any:
        url = self.config.url_prefix.rstrip("/") + "/" + verb
        try:
            async with self._client().post(url, data=json.dumps(args), server_hostname=self._server_name,
                                           headers={"Content-Type": "application/json"}) as resp:
                if resp.status != 200:
                    raise ExtenderError(f"failed {verb} with extender at URL {url}, code {resp.status}")
                body = await resp.read()
        except (aiohttp.ClientError, asyncio.TimeoutError, OSError) as e:
            kind = "timed out" if isinstance(e, asyncio.TimeoutError) else str(e) or type(e).__name__
            raise ExtenderError(f'Post "{url}": {kind}') from None
        try:
            return json.loads(body)
        except ValueError as e:
            raise ExtenderError(f"extender at URL {url} answered {verb} with invalid JSON: {e}") from None

    def _args(self, pod: Pod, nodes: Sequence[Any]) -> dict[str, Any]:
        if self.config.node_cache_capable:
            return {"pod": pod.raw, "nodenames": [_node_name(n) for n in nodes]}
        return {"pod": pod.raw, "nodes": {"items": [_node_raw(n) for n in nodes]}}

    async def filter(self, pod: Pod, nodes: Sequence[Any]) -> FilterResult:
        res = _answer_object(await self._send(self.config.filter_verb, self._args(pod, nodes)), "filter", self.name)
        if res.get("error"):
            raise ExtenderError(str(res["error"]))
        asked = {_node_name(n) for n in nodes}
        kept: list[str] = []
        if self.config.node_cache_capable and res.get("nodenames") is not None:
            kept = [str(n) for n in res["nodenames"]]
            for name in kept:
                if name not in asked:
                    raise ExtenderError(f'extender "{self.name}" claims a filtered node "{name}" which is not found '
                                        "in the input node list")
        elif isinstance(res.get("nodes"), dict):
            kept = [((item or {}).get("metadata") or {}).get("name", "") for item in _lower_keys(res["nodes"]).get("items") or []]
        failed = {str(k): str(v) for k, v in (res.get("failednodes") or {}).items()}
        unresolvable = {str(k): str(v) for k, v in (res.get("failedandunresolvablenodes") or {}).items()}
        return FilterResult(kept, failed, unresolvable)

    async def prioritize(self, pod: Pod, nodes: Sequence[Any]) -> dict[str, int]:
        res = await self._send(self.config.prioritize_verb, self._args(pod, nodes))
        if not isinstance(res, list):
            raise ExtenderError(f"extender {self.name} answered prioritize without a HostPriorityList")
        out: dict[str, int] = {}
        for hp in res:
            hp = _lower_keys(hp)
            score = hp.get("score", 0)
            if isinstance(score, bool) or not isinstance(score, int):
                raise ExtenderError(f"extender {self.name} answered prioritize with a non-integer score {score!r}")
            out[str(hp.get("host", ""))] = score
        return out

    async def bind(self, pod: Pod, node_name: str) -> None:
        args = {"podName": pod.name, "podNamespace": pod.namespace, "podUID": pod.meta.uid, "node": node_name}
        res = _answer_object(await self._send(self.config.bind_verb, args), "bind", self.name)
        if res.get("error"):
            raise ExtenderError(str(res["error"]))

    async def process_preemption(self, pod: Pod, victims: dict[str, Victims],
                                 pods_on_node: Mapping[str, Sequence[Pod]]) -> dict[str, Victims]:
        if self.config.node_cache_capable:
            args: dict[str, Any] = {"pod": pod.raw, "nodeNameToMetaVictims": convert_to_meta_victims(victims)}
        else:
            args = {"pod": pod.raw, "nodeNameToVictims": {
                node: {"pods": [p.raw for p in v.pods], "numPDBViolations": v.num_pdb_violations}
                for node, v in victims.items()}}
        res = _answer_object(await self._send(self.config.preempt_verb, args), "preempt", self.name)
        return convert_to_victims(res.get("nodenametometavictims") or {}, pods_on_node, self.name)


def build_extenders(configs: Sequence[ExtenderConfig]) -> list[HTTPExtender]:
    return [HTTPExtender(c) for c in configs]


async def close_extenders(extenders: Sequence[HTTPExtender]) -> None:
    for e in extenders:
        await e.close()
