"""The REST fuzzer of test_fuzz_rest.py: valid objects of every stored kind as seeds,
their mutations, the corpus of requests that once broke the API, and Fuzzer, which
sends seeded random requests of every verb and body type and judges each answer (no
5xx; a refused write changed nothing of the kind it aimed at)."""
from __future__ import annotations

import copy
import datetime
import http.client
import json
import random
import urllib.parse
from collections import Counter
from typing import Any, Callable

import yaml

from transport.kube.protobuf import MAGIC, PROTOBUF
from framework.api.api_resources import BY_KIND, RESOURCES, Resource

from tests import dra_manifests as dra
from tests.actors.admission.kueue_objects import V as KUEUE, cluster_queue, flavor, local_queue
from tests.validation.test_fuzz_daemon import nested, paths
from tests.validation.test_schema import VALID

NS = "fuzz"
JSON = "application/json"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
ELSEWHERE = "fuzz-elsewhere"  # a schedulerName no profile serves: the fuzz binds its pods itself
# kinds whose status or finalizers (and so resourceVersion) the daemon's own actors write
# at any time (a ResourceFlavor being deleted loses Kueue's resource-in-use finalizer
# when no ClusterQueue uses it: REST fuzz seed 13)
CONTROLLED = frozenset({"ClusterQueue", "LocalQueue", "Cohort", "Workload", "PodGroup", "ResourceFlavor"})

SEEDS: dict[str, dict[str, Any]] = {kind: copy.deepcopy(obj) for kind, obj in VALID.items()}
SEEDS["Pod"]["spec"]["schedulerName"] = ELSEWHERE
SEEDS["Pod"]["metadata"]["labels"] = {"app": "a"}
SEEDS["PodGroup"]["apiVersion"] = "scheduling.x-k8s.io/v1alpha1"
SEEDS["Event"]["involvedObject"]["namespace"] = NS
# recent, so that the store's sweep of events past their TTL leaves it alone
SEEDS["Event"]["firstTimestamp"] = SEEDS["Event"]["lastTimestamp"] = \
    datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
SEEDS.update({
    "ResourceFlavor": flavor("fz-flavor", zone="a"),
    "ClusterQueue": cluster_queue("fz-cq", "", "4", flavor_name="fz-flavor"),
    "Cohort": {"apiVersion": KUEUE, "kind": "Cohort", "metadata": {"name": "fz-cohort"}, "spec": {}},
    "LocalQueue": local_queue("fz-lq", "fz-cq", NS),
    "Workload": {"apiVersion": KUEUE, "kind": "Workload", "metadata": {"name": "w", "namespace": NS},
                 "spec": {"queueName": "fz-lq", "podSets": [{"name": "main", "count": 1, "template": {"spec": {
                     "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}]}}}]}},
    "WorkloadPriorityClass": {"apiVersion": KUEUE, "kind": "WorkloadPriorityClass", "metadata": {"name": "w"},
                              "value": 100, "description": "fuzz"},
})
SEEDS.update({  # DRA (resource.k8s.io/v1)
    "DeviceClass": dra.device_class("fz-gpu"),
    "ResourceSlice": dra.resource_slice("fz-node", gpus=2, name="fz-slice"),
    "ResourceClaim": dra.resource_claim("fz-claim", NS, class_name="fz-gpu"),
    "ResourceClaimTemplate": dra.claim_template("fz-template", NS, class_name="fz-gpu"),
})
for key in ("Workload.scheduling.k8s.io", "PodGroup.scheduling.k8s.io"):
    SEEDS[key]["metadata"]["namespace"] = NS
KINDS = sorted(r.kind for r in RESOURCES if r.stored)
VERBS = ["create", "create", "create_yaml", "create_protobuf", "garbage", "odd_path", "update", "status", "merge",
         "strategic", "json_patch", "json_patch", "apply", "delete", "deletecollection", "binding", "get", "list",
         "list", "watch"]


BAD_VALUES: list[Callable[[random.Random], Any]] = [
    lambda r: None, lambda r: r.choice([True, False]), lambda r: r.randint(-(2**63), 2**64 - 1),
    lambda r: r.choice([2**31, -1, 0, 2**63 - 1, -(2**63), 2**64, 10**30]),
    lambda r: r.choice([1e308, -1e308, 0.5, -0.0]), lambda r: r.choice(["NaN", "Infinity"]),  # JSON has no nan
    lambda r: "".join(r.choice("aZ09-./:_ ü\u202e") for _ in range(r.randint(0, 12))),
    lambda r: "x" * r.choice([63, 64, 253, 254, 400, 70_000]),
    lambda r: r.choice(["", "1.5.5", "-1", "999999999999999Ei", "In", "Exists", "NoExecute", "a/b/c", "default",
                        "fuzz", "..", "kube-system", "Background", "Orphan"]),
    lambda r: [None, 1, "x"][: r.randint(0, 3)], lambda r: {"k": r.choice([None, 1, "v", [], {}])},
    lambda r: nested(r.choice([10, 63, 70, 99, 101, 300])),
]


def bad_value(r: random.Random) -> Any:
    return r.choice(BAD_VALUES)(r)


def mutated(obj: dict[str, Any], r: random.Random, times: int) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    for _ in range(times):
        places = [p for p in paths(out) if p[:2] != ("metadata", "name")]
        if not places:
            break
        path = r.choice(places)
        at: Any = out
        for p in path[:-1]:
            at = at[p]
        if isinstance(at, dict) and r.random() < 0.2:
            at[r.choice(["extra", "x-unknown", "$patch", "status"])] = bad_value(r)  # a field it does not have
        else:
            at[path[-1]] = bad_value(r)
    return out


def _field(number: int, value: bytes) -> bytes:
    return bytes([number << 3 | 2, len(value)]) + value  # length-delimited, short values only


def protobuf_namespace(name: str) -> bytes:
    """A Namespace as `kubectl create namespace` sends it."""
    meta = _field(1, name.encode()) + _field(11, _field(1, b"team") + _field(2, b"a"))
    raw = _field(1, meta) + _field(2, b"") + _field(3, b"")
    return MAGIC + _field(1, _field(1, b"v1") + _field(2, b"Namespace")) + _field(2, raw) + _field(3, b"")


# Requests that once got a 5xx, a traceback or an endless stream, sent first on every run:
# (kind, method, what follows the object's path, body, Content-Type)
CORPUS: list[tuple[str, str, str, bytes, str]] = [
    ("Pod", "PATCH", "", b'[{"op": "remove", "path": ""}]', "application/json-patch+json"),
    ("Pod", "PATCH", "/status", b'[{"op": "replace", "path": "", "value": {}}]', "application/json-patch+json"),
    ("Pod", "POST", "", b"[" * 100_000 + b"]" * 100_000, "application/json"),
    ("Pod", "POST", "", b"a: " + b"[" * 5_000 + b"]" * 5_000, "application/yaml"),
    ("Cohort", "PUT", "", b'{"metadata": {"name": "base-cohort"}, "x": 1' + b"0" * 30 + b"}", "application/json"),
    ("CSINode", "POST", "", b'{"metadata": {"name": "big"}, "spec": {"drivers": [{"name": "d", "nodeID": "i",'
                            b' "x": 18446744073709551616}]}}', "application/yaml"),
    ("Pod", "POST", "", b'{"metadata": {"name": "nan"}, "spec": {"priority": NaN}}', "application/json"),
    ("Pod", "POST", "", b"metadata: {name: dated, annotations: {a: 2024-01-02}}\n"
     b"spec: {schedulerName: fuzz-elsewhere, containers: [{name: c}]}",
     "application/yaml"),
    ("Namespace", "POST", "", protobuf_namespace("ok").replace(b"ok", b"\xffk"), PROTOBUF),
    ("Pod", "PATCH", "", b'{"spec": "x"}', "application/merge-patch+json"),
    ("Pod", "PATCH", "", b'[{"op": "remove", "path": "/spec/nodeName"}]', "application/json-patch+json"),
    ("Node", "GET", "?watch=true&timeoutSeconds=nan", b"", ""),
]


def as_yaml(obj: Any) -> bytes:
    try:
        return yaml.safe_dump(obj).encode()
    except RecursionError:  # PyYAML's emitter recurses: JSON is YAML too
        return json.dumps(obj).encode()


def pointer(path: tuple[Any, ...]) -> str:
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in path)


class Fuzzer:
    """The requests, the daemon's answers, and the checks between them."""

    def __init__(self, port: int, r: random.Random, alone: bool = True) -> None:
        self.port, self.r = port, r
        self.alone = alone  # False: other fuzzers write at the same time, so refusals cannot be compared
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        self.answers: Counter[str] = Counter()
        self.failures: list[str] = []
        self.tokens: list[str] = []  # continue tokens seen

    # --- HTTP -------------------------------------------------------------------------

    def call(self, method: str, path: str, body: Any = None, ctype: str = "application/json",
             raw: bytes | None = None, watch: bool = False, accept: str = JSON) -> tuple[int, Any]:
        data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
        headers = {"Accept": accept}
        if data is not None:
            headers["Content-Type"] = ctype
        for attempt in range(2):
            try:
                self.conn.request(method, path, body=data, headers=headers)
                resp = self.conn.getresponse()
                text = resp.read()
                break
            except (ConnectionError, http.client.HTTPException, OSError):
                self.conn.close()  # the server may close a connection after a refused body: reconnect
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
                if attempt:
                    raise
        if watch:
            return resp.status, [json.loads(line) for line in text.splitlines() if line.strip()]
        try:
            return resp.status, json.loads(text) if text.strip() else None
        except ValueError:
            return resp.status, text.decode(errors="replace")

    def url(self, kind: str, name: str = "", sub: str = "", namespace: str | None = None) -> str:
        res = BY_KIND[kind]
        base = "/api/v1" if not res.group else f"/apis/{res.group_version}"
        ns = NS if namespace is None else namespace
        path = f"{base}/namespaces/{ns}/{res.plural}" if res.namespaced and ns else f"{base}/{res.plural}"
        if name:
            path += "/" + urllib.parse.quote(name, safe="")
        return path + (f"/{sub}" if sub else "")

    def dump(self, kind: str) -> dict[str, Any]:
        """Every object of `kind`, by namespace/name, as the oracle compares them."""
        status, body = self.call("GET", self.url(kind, namespace=""))
        assert status == 200, (kind, status, body)
        out = {}
        for item in body["items"]:
            item = copy.deepcopy(item)
            if kind in CONTROLLED:
                if item["metadata"].get("deletionTimestamp"):
                    continue  # its controller lets it go when it likes
                item.pop("status", None)
                for field in ("resourceVersion", "finalizers"):
                    item["metadata"].pop(field, None)
            out[f"{item['metadata'].get('namespace', '')}/{item['metadata']['name']}"] = item
        return out

    # --- one request ------------------------------------------------------------------

    def one(self, i: int) -> None:
        r = self.r
        kind = r.choice(KINDS)
        res = BY_KIND[kind]
        verb = r.choice(VERBS)
        if verb == "binding":
            kind, res = "Pod", BY_KIND["Pod"]
        self.judged(kind, verb, lambda stored: self.send(verb, kind, res, i, stored))

    def run(self, first: int, count: int) -> None:
        """`count` requests, in a thread of their own: what goes wrong is a failure."""
        try:
            for i in range(first, first + count):
                self.one(i)
        except Exception as err:  # noqa: BLE001 - a broken fuzzer thread must fail the test, not vanish
            self.failures.append(f"fuzzer stopped: {err!r}")

    def replay(self, kind: str, method: str, sub: str, raw: bytes, ctype: str) -> None:
        """One request of the regression corpus, judged as the random ones are."""
        def send(stored: tuple[str, dict[str, Any]]) -> tuple[int, str]:
            path = self.url(kind) + sub if method in ("POST", "GET") else self.url(kind, stored[0]) + sub
            return self.call(method, path, raw=raw, ctype=ctype, watch="watch=" in sub)[0], \
                raw[:200].decode(errors="replace")
        self.judged(kind, "corpus", send)

    def judged(self, kind: str, verb: str, send: Callable[[tuple[str, dict[str, Any]]], tuple[int, str]]) -> None:
        stored = self.base(kind)  # before the dump: it may make the object again
        before = self.dump(kind) if self.alone else {}
        status, what = send(stored)
        label = f"{verb} {kind}: {what}"
        self.answers[str(status)] += 1
        if status >= 500:
            self.failures.append(f"{status} from {label}")
        if status >= 400 and verb not in ("get", "list", "watch") and self.alone:
            after = self.dump(kind)
            if after != before:
                changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
                self.failures.append(f"{status} refused yet changed {changed}: {label}")

    def base(self, kind: str) -> tuple[str, dict[str, Any]]:
        """A stored object of `kind` to write over (made again when the fuzz deleted it)."""
        name = f"base-{kind.lower()}"
        status, have = self.call("GET", self.url(kind, name))
        if status == 404:
            obj = copy.deepcopy(SEEDS[kind])
            obj["metadata"] = {**obj["metadata"], "name": name}
            if BY_KIND[kind].namespaced:
                obj["metadata"]["namespace"] = NS
            status, have = self.call("POST", self.url(kind), obj)
            if status == 404:  # the fuzz deleted every namespace (a deletecollection): make ours again
                assert self.call("POST", "/api/v1/namespaces", {"metadata": {"name": NS}})[0] in (201, 409)
                status, have = self.call("POST", self.url(kind), obj)
            if status in (404, 409) and not self.alone:  # another fuzzer made or deleted it meanwhile
                return self.base(kind)
        assert status in (200, 201), (kind, status, have.get("message"))
        return name, have

    def send(self, verb: str, kind: str, res: Resource, i: int, stored: tuple[str, dict[str, Any]]
             ) -> tuple[int, str]:
        r = self.r
        seed = copy.deepcopy(SEEDS[kind])
        seed["metadata"]["name"] = f"fz-{i}"
        if res.namespaced:
            seed["metadata"]["namespace"] = NS
        body = mutated(seed, r, r.choice([0, 1, 1, 2, 3]))
        if verb == "create":
            path = self.url(kind) + r.choice(["", "?fieldValidation=Strict", "?fieldValidation=Ignore",
                                              "?fieldValidation=Bogus", "?dryRun=All"])
            return self.call("POST", path, body, accept=r.choice([JSON, TABLE]))[0], json.dumps(body)[:300]
        if verb == "create_protobuf":
            data = bytearray(protobuf_namespace(f"fz-{i}"))
            for _ in range(r.randint(0, 4)):
                at = r.randrange(len(data))
                if r.random() < 0.3:
                    del data[at:]
                    break
                data[at] = r.randrange(256)
            return self.call("POST", self.url(kind), raw=bytes(data), ctype=PROTOBUF)[0], bytes(data).hex()
        if verb == "garbage":
            method = r.choice(["POST", "PUT", "PATCH"])
            data = r.choice([b"", b"{", b"\xff\xfe", b"[]" * 3, b"null", b'"x"', b"\x00" * 10, b"{}" * 2,
                             json.dumps(body).encode()[: r.randint(0, 40)]])
            ctype = r.choice(["application/json", "application/yaml", "text/plain", "", "application/merge-patch+json",
                              "application/json-patch+json", "application/apply-patch+yaml", PROTOBUF,
                              "application/strategic-merge-patch+json; charset=utf-8", "multipart/form-data"])
            path = self.url(kind, "" if method == "POST" else f"base-{kind.lower()}")
            return self.call(method, path, raw=data, ctype=ctype)[0], f"{method} {ctype} {data[:60]!r}"
        if verb == "odd_path":
            return self.odd_path(kind, res, body)
        if verb == "create_yaml":
            text = as_yaml(body)
            return self.call("POST", self.url(kind), raw=text, ctype="application/yaml")[0], text[:300].decode()
        if verb in ("get", "list", "watch"):
            return self.read(verb, kind, res)
        if verb == "deletecollection":
            q = self.selectors()
            status, _ = self.call("DELETE", self.url(kind) + ("?" + urllib.parse.urlencode(q) if q else ""),
                                  self.delete_options(None))
            return status, json.dumps(q)
        name, have = stored
        if verb == "binding":
            target = r.choice(["n1", "", "nope", None, 5])
            b = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name},
                 "target": {"apiVersion": "v1", "kind": "Node", "name": target}}
            return self.call("POST", self.url("Pod", name, "binding"), mutated(b, r, r.choice([0, 1])))[0], str(b)
        if verb == "delete":
            opts = self.delete_options(have)
            return self.call("DELETE", self.url(kind, name), opts)[0], json.dumps(opts)[:300]
        sub = "status" if "status" in res.subresources and r.random() < 0.3 else ""
        over = mutated(have, r, r.choice([0, 1, 2]))
        if verb == "update":
            return self.call("PUT", self.url(kind, name, sub), over)[0], json.dumps(over)[:300]
        if verb == "status":
            return self.call("PUT", self.url(kind, name, "status" if "status" in res.subresources else ""),
                             over)[0], json.dumps(over)[:300]
        if verb in ("merge", "strategic"):
            patch = self.subtree(over)
            ctype = f"application/{'merge' if verb == 'merge' else 'strategic-merge'}-patch+json"
            return self.call("PATCH", self.url(kind, name, sub), patch, ctype)[0], json.dumps(patch)[:300]
        if verb == "json_patch":
            ops = self.json_ops(have)
            return self.call("PATCH", self.url(kind, name, sub), ops, "application/json-patch+json")[0], \
                json.dumps(ops)[:300]
        applied = {k: v for k, v in over.items() if k != "status"} if not sub else over
        manager = r.choice(["?fieldManager=fuzz", "?fieldManager=fuzz&force=true", ""])
        raw = as_yaml(applied) if r.random() < 0.7 else json.dumps(applied).encode()
        return self.call("PATCH", self.url(kind, name, sub) + manager, raw=raw,
                         ctype="application/apply-patch+yaml")[0], raw[:300].decode()

    def odd_path(self, kind: str, res: Resource, body: Any) -> tuple[int, str]:
        """Any method on a path a client would not build: odd names and namespaces, unknown
        subresources, plurals and groups, a namespace on a cluster-scoped kind; odd Accepts."""
        r = self.r
        name = r.choice(["base-" + kind.lower(), "..", ".", "%2F", "a%2Fb", "x" * 300, "%C3%BC", "%FF", "%00", "a%20b",
                         "UPPER", "-", "fz-1"])
        base = "/api/v1" if not res.group else f"/apis/{res.group_version}"
        path = r.choice([
            f"{base}/namespaces/{r.choice([NS, 'nope', '..', 'x' * 70, '%2F'])}/{res.plural}/{name}",
            f"{base}/{res.plural}/{name}/{r.choice(['status', 'binding', 'scale', 'log', 'eviction', 'x/y'])}",
            f"{base}/namespaces/{NS}/{res.plural}/{name}/{r.choice(['status', 'binding', 'scale', 'exec'])}",
            f"{base}/nothing/{name}", f"/apis/{r.choice(['nope', 'kueue.x-k8s.io', 'apps'])}/v9/{res.plural}",
            f"{base}/namespaces/{NS}/bindings", f"{base}/namespaces/{NS}/bindings/{name}", f"{base}/{res.plural}//",
            f"{base}/namespaces//{res.plural}", f"/api/v1/namespaces/{NS}/{res.plural}/{name}?watch=true&watch=0",
        ])
        method = r.choice(["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"])
        ctype = r.choice([JSON, "application/merge-patch+json", "application/json-patch+json"])
        accept = r.choice([JSON, TABLE, "application/yaml", PROTOBUF, "*/*", "text/html", "garbage;;;=", ""])
        data = None if method in ("GET", "HEAD", "OPTIONS") else json.dumps(body).encode()
        timeout = "timeoutSeconds=1"
        path += ("&" if "?" in path else "?") + timeout
        status, _ = self.call(method, path, raw=data, ctype=ctype, accept=accept, watch="watch=" in path)
        return status, f"{method} {path[:200]} Accept: {accept}"

    def subtree(self, obj: dict[str, Any]) -> Any:
        """A merge patch: the whole object, one branch of it, or something odd."""
        r = self.r
        pick = r.random()
        if pick < 0.3:
            return obj
        if pick < 0.85:
            key = r.choice(list(obj))
            value = obj[key]
            if isinstance(value, dict) and value and r.random() < 0.5:
                inner = r.choice(list(value))
                return {key: {inner: value[inner]}}
            return {key: value}
        return r.choice([[], "x", 5, None, {"metadata": {"name": None}}, {"metadata": {"namespace": "other"}},
                         {"metadata": {"resourceVersion": "1"}}, {"metadata": {"uid": "u"}},
                         {"spec": {"nodeName": "n2"}}, {"spec": {"containers": [{"image": "no-name"}]}},
                         {"$patch": "delete"}, {"spec": {"$patch": "replace"}}, {"metadata": {"$retainKeys": 5}}])

    def json_ops(self, have: dict[str, Any]) -> Any:
        r = self.r
        if r.random() < 0.1:
            return r.choice([{"op": "add"}, "remove", [1, 2], [{"op": "remove", "path": ""}],
                             [{"op": "test", "path": "", "value": have}], None, [None],
                             [{"op": "copy", "from": "/metadata", "path": "/metadata/annotations/x"}] * 50])
        places = paths(have)
        ops = []
        for _ in range(r.randint(1, 3)):
            path = pointer(r.choice(places)) if places and r.random() < 0.85 else r.choice(["", "/", "/nope/x",
                                                                                           "no-slash", "/-"])
            op: dict[str, Any] = {"op": r.choice(["add", "remove", "replace", "test", "move", "copy", "frob"]),
                                  "path": path}
            if op["op"] in ("add", "replace", "test"):
                op["value"] = bad_value(r)
            if op["op"] in ("move", "copy"):
                op["from"] = pointer(r.choice(places)) if places else ""
            ops.append(op)
        return ops

    def delete_options(self, have: dict[str, Any] | None) -> Any:
        r = self.r
        meta = (have or {}).get("metadata") or {}
        pick = r.random()
        if pick < 0.25:
            return None
        if pick < 0.55:
            return {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": r.choice(
                ["Background", "Foreground", "Orphan", "Sideways", 5])}
        if pick < 0.85:
            return {"preconditions": {"uid": r.choice([meta.get("uid", ""), "other", 5]),
                                      "resourceVersion": r.choice([meta.get("resourceVersion", ""), "1", None])}}
        return r.choice([[], "x", {"gracePeriodSeconds": r.choice([0, -1, "soon", 2**70])}, {"dryRun": ["All"]},
                         {"orphanDependents": True, "propagationPolicy": "Orphan"}])

    def selectors(self) -> dict[str, str]:
        r = self.r
        q = {}
        if r.random() < 0.5:
            q["labelSelector"] = r.choice(["app=a", "app!=a", "app in (a,b)", "!app", "a==b=c", "app in (a",
                                           "x" * 400, "app=" + "y" * 70, ",", "app notin ()"])
        if r.random() < 0.4:
            q["fieldSelector"] = r.choice(["metadata.name=fz-1", f"metadata.namespace={NS}", "spec.nodeName=",
                                           "status.phase!=Running", "bogus.field=1", "a=b=c", "metadata.name"])
        return q

    def read(self, verb: str, kind: str, res: Resource) -> tuple[int, str]:
        r = self.r
        q = self.selectors()
        if r.random() < 0.5:
            q["limit"] = r.choice(["1", "2", "0", "-1", "abc", "1.5", str(2**70)])
        if r.random() < 0.3:
            q["continue"] = r.choice([*self.tokens[-3:], "garbage", "eyJ2IjoxfQ", "%%", "x" * 300]) \
                if self.tokens else r.choice(["garbage", "eyJ2IjoxfQ"])
        if r.random() < 0.5:
            q["resourceVersion"] = r.choice(["0", "1", "abc", "-1", str(2**70), "99999999"])
        if verb == "get":
            name = r.choice(["base-" + kind.lower(), "fz-1", "nope", "..", "x" * 300])
            status, _ = self.call("GET", self.url(kind, name) + "?" + urllib.parse.urlencode(q),
                                  accept=r.choice([JSON, TABLE]))
            return status, name
        if verb == "watch":
            q["watch"] = r.choice(["true", "1", "True"])
            # bounded: 0 or none is the server's default (endless here, 30-60 min upstream)
            q["timeoutSeconds"] = r.choice(["1", "-1", "-5", "abc", "nan", "inf", "1.5", "1e3"])
            if r.random() < 0.5:
                q["allowWatchBookmarks"] = r.choice(["true", "false", "maybe"])
            q.pop("continue", None)
            status, events = self.call("GET", self.url(kind, namespace=r.choice([NS, ""])) + "?"
                                       + urllib.parse.urlencode(q), watch=True, accept=r.choice([JSON, TABLE]))
            if status == 200:
                for e in events:
                    if e["type"] not in ("ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"):
                        self.failures.append(f"watch event of type {e['type']}: {q}")
            return status, json.dumps(q)
        status, body = self.call("GET", self.url(kind, namespace=r.choice([NS, ""])) + "?" + urllib.parse.urlencode(q),
                                 accept=r.choice([JSON, TABLE]))
        if status == 200 and isinstance(body, dict) and body.get("metadata", {}).get("continue"):
            self.tokens.append(body["metadata"]["continue"])
        return status, json.dumps(q)


def drain_lines(stream: Any, lines: list[str]) -> None:
    for line in iter(stream.readline, b""):
        lines.append(line.decode(errors="replace"))
