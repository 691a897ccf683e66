"""kube-apiserver's answers at the edges of the REST API (issue 31): JSON patches on
the whole document and failing tests, patches that rename or move an object or carry
a stale resourceVersion, DELETE preconditions, bodies too big or nested too deep, and
tokens anywhere but one Authorization header. Each refusal changes nothing."""
from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import aiohttp

from transport.http.app import HttpDeps, make_http_app, start_http
from transport.http.metrics import SchedulerMetrics
from transport.kube.patching import JSON_PATCH_REJECTED
from transport.kube.request import MAX_BODY, MAX_BODY_DEPTH
from transport.server.service import StoreService

from tests.transport.conftest import node, pod
from tests.transport.test_kube_api import api  # noqa: F401 (a fixture)

POD = "/api/v1/namespaces/demo/pods/a"
JSON_PATCH = "application/json-patch+json"
MERGE = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"


async def _pod(api: Any) -> dict[str, Any]:
    status, body = await api.call("POST", "/api/v1/namespaces/demo/pods", pod("a", namespace="demo"))
    assert status == 201
    return body


async def _unchanged(api: Any, before: dict[str, Any]) -> None:
    status, now = await api.call("GET", POD)
    assert status == 200 and now == before


async def test_a_json_patch_on_the_whole_document_is_422_as_kube_apiserver_answers_it_and_changes_nothing(api):
    before = await _pod(api)
    for ops in ([{"op": "remove", "path": ""}], [{"op": "replace", "path": "", "value": {}}],
                [{"op": "add", "path": "", "value": before}], [{"op": "move", "from": "", "path": "/x"}],
                [{"op": "copy", "from": "/metadata", "path": ""}], [{"op": "frobnicate", "path": "/spec"}],
                [{"path": "/spec"}], [{"op": "remove"}], [{"op": "remove", "path": "/metadata/nope"}]):
        status, err = await api.call("PATCH", POD, ops, JSON_PATCH)
        assert (status, err["reason"], err["message"]) == (422, "Invalid", JSON_PATCH_REJECTED), ops
        assert not err.get("details")  # upstream's generic answer names no resource
        status, err = await api.call("PATCH", POD + "/status", ops, JSON_PATCH)
        assert status == 422, ops
    await _unchanged(api, before)


async def test_a_failing_test_operation_refuses_the_whole_patch_and_a_passing_one_lets_it_apply(api):
    before = await _pod(api)
    failing = [{"op": "add", "path": "/metadata/labels/x", "value": "1"},
               {"op": "test", "path": "/metadata/name", "value": "b"}]
    status, err = await api.call("PATCH", POD, failing, JSON_PATCH)
    assert (status, err["reason"], err["message"]) == (422, "Invalid", JSON_PATCH_REJECTED)
    # JSON's true is not 1, nor "1" the number 1
    status, _ = await api.call("PATCH", POD, [{"op": "add", "path": "/metadata/labels/x", "value": "1"},
                                              {"op": "test", "path": "/metadata/generation", "value": True}],
                               JSON_PATCH)
    assert status == 422
    await _unchanged(api, before)
    passing = [{"op": "test", "path": "", "value": before},
               {"op": "test", "path": "/metadata/uid", "value": before["metadata"]["uid"]},
               {"op": "add", "path": "/metadata/labels/x", "value": "1"}]
    status, out = await api.call("PATCH", POD, passing, JSON_PATCH)
    assert status == 200 and out["metadata"]["labels"] == {"x": "1"}


async def test_a_json_patch_that_is_no_list_of_operations_is_400_and_one_of_too_many_operations_413(api):
    before = await _pod(api)
    for body, words in (({"op": "remove", "path": "/spec"}, "cannot unmarshal object into Go value of type "
                                                              "jsonpatch.Patch"),
                        ("remove", "cannot unmarshal string"), ([1], "cannot unmarshal number into Go value of type "
                                                                     "jsonpatch.Operation")):
        status, err = await api.call("PATCH", POD, body, JSON_PATCH)
        assert (status, err["reason"]) == (400, "BadRequest") and words in err["message"], body
    many = [{"op": "test", "path": "/kind", "value": "Pod"}] * 10_001
    status, err = await api.call("PATCH", POD, many, JSON_PATCH)
    assert (status, err["reason"], err["message"]) == (
        413, "RequestEntityTooLarge",
        "Request entity too large: The allowed maximum operations in a JSON patch is 10000, got 10001")
    status, _ = await api.call("PATCH", POD, many[:10_000], JSON_PATCH)
    assert status == 200  # the limit itself is allowed
    await _unchanged(api, before)


async def test_a_chain_of_copies_cannot_double_an_object_without_bound(api):
    before = await _pod(api)
    ops: list[dict[str, Any]] = [{"op": "add", "path": "/metadata/annotations", "value": {"a": "x" * 1000}}]
    ops += [{"op": "copy", "from": "/metadata/annotations", "path": f"/metadata/annotations/{i}"} for i in range(40)]
    status, err = await api.call("PATCH", POD, ops, JSON_PATCH)  # 2**40 KB if nothing stopped it
    assert (status, err["message"]) == (422, JSON_PATCH_REJECTED)
    await _unchanged(api, before)


async def test_patches_that_rename_or_move_the_object_are_400_in_kube_apiservers_words(api):
    before = await _pod(api)
    cases = [
        ([{"op": "replace", "path": "/metadata/name", "value": "b"}], JSON_PATCH,
         "the name of the object (b) does not match the name on the URL (a)"),
        ({"metadata": {"name": "b"}}, MERGE, "the name of the object (b) does not match the name on the URL (a)"),
        ({"metadata": {"name": None}}, MERGE, "the name of the object () does not match the name on the URL (a)"),
        ([{"op": "replace", "path": "/metadata/namespace", "value": "other"}], JSON_PATCH,
         "the namespace of the object (other) does not match the namespace on the request (demo)"),
        ({"metadata": {"namespace": "other"}}, STRATEGIC,
         "the namespace of the object (other) does not match the namespace on the request (demo)"),
    ]
    for body, ctype, message in cases:
        status, err = await api.call("PATCH", POD, body, ctype)
        assert (status, err["reason"], err["message"]) == (400, "BadRequest", message), body
    await _unchanged(api, before)


async def test_a_patch_may_not_change_the_uid_and_a_stale_resource_version_is_a_conflict(api):
    before = await _pod(api)
    status, err = await api.call("PATCH", POD, [{"op": "replace", "path": "/metadata/uid", "value": "x"}], JSON_PATCH)
    assert (status, err["reason"]) == (422, "Invalid")
    assert err["message"] == 'Pod "a" is invalid: metadata.uid: Invalid value: "x": field is immutable'
    stale = str(int(before["metadata"]["resourceVersion"]) - 1)
    modified = ('Operation cannot be fulfilled on pods "a": the object has been modified; please apply your '
                "changes to the latest version and try again")
    for body, ctype in (([{"op": "replace", "path": "/metadata/resourceVersion", "value": stale},
                          {"op": "add", "path": "/metadata/labels/x", "value": "1"}], JSON_PATCH),
                        ({"metadata": {"resourceVersion": stale, "labels": {"x": "1"}}}, MERGE),
                        ({"metadata": {"resourceVersion": stale, "labels": {"x": "1"}}}, STRATEGIC)):
        status, err = await api.call("PATCH", POD, body, ctype)
        assert (status, err["reason"], err["message"]) == (409, "Conflict", modified), body
    await _unchanged(api, before)
    current = before["metadata"]["resourceVersion"]
    status, out = await api.call("PATCH", POD, {"metadata": {"resourceVersion": current, "labels": {"x": "1"}}},
                                 MERGE)
    assert status == 200 and out["metadata"]["labels"] == {"x": "1"}


async def test_a_bound_pods_node_name_cannot_be_changed_by_any_patch(api):
    await api.call("POST", "/api/v1/nodes", node("n1"))
    await api.call("POST", "/api/v1/nodes", node("n2"))
    await _pod(api)
    await StoreService(api.store).bind("demo", "a", "n1")
    _, before = await api.call("GET", POD)
    for body, ctype in (({"spec": {"nodeName": "n2"}}, MERGE), ({"spec": {"nodeName": "n2"}}, STRATEGIC),
                        ([{"op": "replace", "path": "/spec/nodeName", "value": "n2"}], JSON_PATCH),
                        ([{"op": "remove", "path": "/spec/nodeName"}], JSON_PATCH)):
        status, err = await api.call("PATCH", POD, body, ctype)
        assert (status, err.get("reason")) == (422, "Invalid"), (body, err)
        assert err["message"].startswith('Pod "a" is invalid: spec: Forbidden: pod updates may not change fields '
                                         "other than "), err["message"]
    # a PUT of the manifest without nodeName asks the same (kubectl replace -f pod.yaml)
    status, err = await api.call("PUT", POD, pod("a", namespace="demo"))
    assert (status, err.get("reason")) == (422, "Invalid") and "spec.nodeName: \"n1\" -> <none>" in err["message"]
    await _unchanged(api, before)
    # priority and preemptionPolicy left out are carried over, as the Priority admission plugin does on update
    status, out = await api.call("PATCH", POD, [{"op": "remove", "path": "/spec/priority"},
                                                {"op": "add", "path": "/metadata/labels/x", "value": "1"}], JSON_PATCH)
    assert status == 200 and out["spec"]["priority"] == before["spec"]["priority"]


async def test_delete_preconditions_hold_or_the_delete_is_a_conflict_that_removes_nothing(api):
    before = await _pod(api)
    uid, rv = before["metadata"]["uid"], before["metadata"]["resourceVersion"]
    for pre, message in (({"uid": "other"}, f"Precondition failed: UID in precondition: other, UID in object meta: "
                                             f"{uid}"),
                         ({"resourceVersion": "1"}, f"Precondition failed: ResourceVersion in precondition: 1, "
                                                    f"ResourceVersion in object meta: {rv}")):
        status, err = await api.call("DELETE", POD, {"kind": "DeleteOptions", "apiVersion": "v1",
                                                     "preconditions": pre})
        assert (status, err["reason"]) == (409, "Conflict")
        assert err["message"] == f'Operation cannot be fulfilled on pods "a": {message}'
    for body, code in (({"propagationPolicy": "Sideways"}, 422), ({"propagationPolicy": "Orphan",
                                                                    "orphanDependents": True}, 422),
                       ([1], 400), ({"preconditions": {"uid": 5}}, 400), ({"gracePeriodSeconds": "soon"}, 400),
                       ({"dryRun": ["All"]}, 400)):
        status, err = await api.call("DELETE", POD, body)
        assert status == code, body
    status, err = await api.call("DELETE", POD + "?propagationPolicy=Sideways")
    assert err["message"] == ('DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: '
                              '"Sideways": supported values: "Foreground", "Background", "Orphan", "nil"')
    await _unchanged(api, before)
    status, _ = await api.call("DELETE", POD, {"propagationPolicy": "Background",
                                               "preconditions": {"uid": uid, "resourceVersion": rv}})
    assert status == 200
    assert (await api.call("GET", POD))[0] == 404


async def test_bodies_nested_too_deep_are_400_at_once_and_within_the_bound_the_store_names_the_field(api):
    for body, ctype in ((b"[" * 200_000 + b"]" * 200_000, "application/json"),
                        (b"[" * 200_000 + b"]" * 200_000, MERGE),
                        (b"a: " + b"[" * 50_000 + b"]" * 50_000, "application/yaml"),
                        (json.dumps({"metadata": {"name": "deep"}, "x": _nested(MAX_BODY_DEPTH + 1)}).encode(),
                         "application/json")):
        status, err = await api.call("POST", "/api/v1/namespaces/demo/pods", body, ctype)
        assert (status, err["reason"]) == (400, "BadRequest"), body[:20]
        assert "could not be decoded" in err["message"]
    deep = pod("deep", namespace="demo")
    deep["metadata"]["annotations"] = _nested(MAX_BODY_DEPTH - 5)
    status, err = await api.call("POST", "/api/v1/namespaces/demo/pods", deep)
    assert (status, err["reason"]) == (422, "Invalid") and "metadata.annotations" in err["message"]


async def test_yaml_aliases_that_would_expand_without_bound_are_refused(api):
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 12)]  # 10**12 values
    body = ("\n".join(lines) + "\nmetadata: {name: a}\n").encode()
    status, err = await api.call("PATCH", "/api/v1/namespaces/demo/pods/a?fieldManager=x", body,
                                 "application/apply-patch+yaml")
    assert (status, err["reason"]) == (400, "BadRequest") and "excessive aliasing" in err["message"]
    assert (await api.call("GET", POD))[0] == 404


async def test_numbers_json_cannot_hold_or_wider_than_64_bits_never_reach_the_store_as_such(api):
    G = "/apis/kueue.x-k8s.io/v1beta2/cohorts"
    wide = b'{"apiVersion":"kueue.x-k8s.io/v1beta2","kind":"Cohort","metadata":{"name":"c"},"x":1' + b"0" * 30 + b"}"
    status, body = await api.call("POST", G, wide)  # was a 500: msgpack holds no such integer
    assert status in (201, 422) and (status != 201 or body.get("x") in (None, 1e30)), body
    for text in (b'{"metadata":{"name":"n"},"x":NaN}', b'{"metadata":{"name":"n"},"x":1e400}',
                 b'{"metadata":{"name":"n"},"x":-Infinity}', b'{"metadata":{"name":"n"},"x":' + b"9" * 5000 + b"}"):
        status, err = await api.call("POST", G, text)
        assert (status, err["reason"]) == (400, "BadRequest"), text[:40]
    two_docs = b"metadata: {name: a}\n---\nmetadata: {name: b}\n"
    status, err = await api.call("POST", "/api/v1/namespaces/demo/pods", two_docs, "application/yaml")
    assert (status, err["reason"]) == (400, "BadRequest") and "one YAML document" in err["message"]
    dated = pod("dated", namespace="demo")
    dated["metadata"]["annotations"] = {"when": "DATE"}
    text = json.dumps(dated).replace('"DATE"', "2024-01-02").encode()  # a YAML timestamp, as go-yaml keeps it: text
    status, body = await api.call("POST", "/api/v1/namespaces/demo/pods", text, "application/yaml")
    assert status == 201 and body["metadata"]["annotations"] == {"when": "2024-01-02"}


async def test_a_body_announced_too_large_is_413_before_it_is_sent(api):
    host, port = api.base.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(f"POST /api/v1/namespaces/demo/pods HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 f"Content-Length: {MAX_BODY + 1}\r\n\r\n{{".encode())
    await writer.drain()
    status_line = await reader.readline()  # answered with only one byte of the body sent
    writer.close()
    assert status_line.split()[1] == b"413"


async def _auth_statuses(headers_list: list[list[tuple[str, str]]], path: str) -> list[int]:
    deps = HttpDeps(ready=lambda: True, metrics=SchedulerMetrics(), token="s3cret")
    runner, (host, port) = await start_http(make_http_app(deps), "127.0.0.1", 0)
    try:
        async with aiohttp.ClientSession() as s:
            out = []
            for headers in headers_list:
                async with s.get(f"http://{host}:{port}{path}", headers=aiohttp.typedefs.CIMultiDict(headers)) as r:
                    out.append(r.status)
            return out
    finally:
        await runner.cleanup()


async def test_a_token_in_the_query_or_an_authorization_header_sent_twice_is_401():
    good = ("Authorization", "Bearer s3cret")
    statuses = await _auth_statuses([[], [good], [good, good], [good, ("Authorization", "Bearer other")]],
                                    "/metrics?access_token=s3cret")
    assert statuses == [401, 200, 401, 401]


def _nested(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth - 1):
        value = {"k": value}
    return value


async def test_bookmarks_come_as_the_watch_cache_sends_them_before_the_timeout_and_only_when_allowed(api):
    await api.call("POST", "/api/v1/nodes", node("n1"))
    _, listed = await api.call("GET", "/api/v1/nodes")
    rv = listed["metadata"]["resourceVersion"]

    async def stream(query: str) -> list[dict[str, Any]]:
        async with api.s.get(api.base + "/api/v1/nodes?watch=true&resourceVersion=0&timeoutSeconds=3" + query) as r:
            return [json.loads(line) for line in (await r.read()).splitlines()]  # to the stream's end

    allowed, plain = await asyncio.gather(stream("&allowWatchBookmarks=true"), stream(""))
    # no bookmark right after the replay (kube-apiserver sends none without sendInitialEvents);
    # one 2 s before the 3 s timeout, at the version the client has seen
    assert [e["type"] for e in allowed] == ["ADDED", "BOOKMARK"]
    assert allowed[1]["object"] == {"kind": "Node", "apiVersion": "v1", "metadata": {"resourceVersion": rv}}
    assert [e["type"] for e in plain] == ["ADDED"]


async def test_a_list_continued_from_a_compacted_version_is_410_expired(api):
    for i in range(3):
        await api.call("POST", "/api/v1/nodes", node(f"n{i}"))
    status, page = await api.call("GET", "/api/v1/nodes?limit=1")
    token = page["metadata"]["continue"]
    await api.call("PATCH", "/api/v1/nodes/n2", {"metadata": {"labels": {"x": "1"}}}, MERGE)  # after the snapshot
    api.store.history.reset(api.store.resource_version)  # compaction: the first page's version is gone
    status, err = await api.call("GET", f"/api/v1/nodes?limit=1&continue={token}")
    assert (status, err["reason"], err["code"]) == (410, "Expired", 410)
    assert err["message"].startswith("The provided continue parameter is too old to display a consistent list result.")
    status, err = await api.call("GET", "/api/v1/nodes?limit=1&continue=not-a-token")
    assert (status, err["reason"]) == (400, "BadRequest")


async def test_a_protobuf_body_with_a_name_that_is_not_utf8_is_refused_not_a_500(api):
    from tests.validation.rest_fuzzer import protobuf_namespace

    body = protobuf_namespace("team-a").replace(b"team-a", b"te\xffm-a")
    status, err = await api.call("POST", "/api/v1/namespaces", body, "application/vnd.kubernetes.protobuf")
    assert (status, err["reason"]) == (415, "UnsupportedMediaType") and "UTF-8" in err["message"]
    status, _ = await api.call("POST", "/api/v1/namespaces", protobuf_namespace("team-a"),
                               "application/vnd.kubernetes.protobuf")
    assert status == 201


async def test_a_patch_that_makes_a_pods_spec_no_object_is_422_not_a_500(api):
    before = await _pod(api)
    for body, ctype in (({"spec": "x"}, MERGE), ([{"op": "replace", "path": "/spec", "value": 5}], JSON_PATCH),
                        (b"apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec: x\n", "application/apply-patch+yaml")):
        path = POD + ("?fieldManager=t" if ctype.startswith("application/apply") else "")
        status, err = await api.call("PATCH", path, body, ctype)
        assert status in (400, 422) and err["reason"] in ("BadRequest", "Invalid"), (body, err)
    await _unchanged(api, before)


async def test_patch_options_are_judged_as_kube_apiserver_judges_them(api):
    before = await _pod(api)
    apply = "application/apply-patch+yaml"
    applied = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a", "labels": {"x": "1"}}}
    for query, body, ctype, text in (
            ("", applied, apply, "fieldManager: Required value: is required for apply patch"),
            ("?force=true", {"metadata": {"labels": {"x": "1"}}}, MERGE,
             "force: Forbidden: may not be specified for non-apply patch"),
            ("?fieldManager=" + "m" * 129, applied, apply, "fieldManager: Too long: may not be more than 128 bytes"),
            ("?fieldManager=a%0Ab", applied, apply, 'fieldManager: Invalid value: "a\\nb": invalid character U+000A '
                                                    "(at position 1)")):
        status, err = await api.call("PATCH", POD + query, body, ctype)
        assert (status, err["reason"], err["message"]) == (422, "Invalid", f'PatchOptions.meta.k8s.io "" is invalid: '
                                                                           f"{text}"), query[:30]
    await _unchanged(api, before)
    status, out = await api.call("PATCH", POD + "?fieldManager=kubectl&force=true", applied, apply)
    assert status == 200 and out["metadata"]["labels"] == {"x": "1"}


async def test_a_watch_from_a_version_that_is_no_unsigned_integer_is_422_and_too_old_says_it_once(api):
    for rv, why in (("abc", "invalid syntax"), ("-5", "invalid syntax"), (str(2**64), "value out of range")):
        status, err = await api.call("GET", f"/api/v1/namespaces/demo/pods?watch=1&resourceVersion={rv}")
        assert (status, err["reason"]) == (422, "Invalid")
        assert err["message"] == (f'pods "" is invalid: resourceVersion: Invalid value: "{rv}": strconv.ParseUint: '
                                  f'parsing "{rv}": {why}')
    for i in range(3):
        await api.call("POST", "/api/v1/nodes", node(f"n{i}"))
    api.store.history.reset(api.store.resource_version)
    async with api.s.get(api.base + "/api/v1/nodes?watch=true&resourceVersion=1") as r:
        (line,) = (await r.read()).splitlines()
    assert json.loads(line)["object"]["message"] == f"too old resource version: 1 ({api.store.resource_version})"


async def test_a_body_cut_off_or_framed_wrongly_is_refused_and_logs_no_error(api, caplog):
    host, port = api.base.removeprefix("http://").split(":")
    head = b"POST /api/v1/namespaces/demo/pods HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    with caplog.at_level(logging.WARNING):
        reader, writer = await asyncio.open_connection(host, int(port))
        writer.write(head + b"Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n")  # no chunk size
        await writer.drain()
        status_line = await reader.readline()
        writer.close()
        assert status_line.split()[1] == b"400"
        reader, writer = await asyncio.open_connection(host, int(port))
        writer.write(head + b'Content-Length: 1000\r\n\r\n{"metadata":')  # and the client goes away
        await writer.drain()
        writer.close()
        await writer.wait_closed()
        status, _ = await api.call("GET", "/api/v1/namespaces/demo/pods")  # the server carries on
        assert status == 200
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []
    assert any(r.getMessage().startswith("malformed HTTP request refused (400): 400, message:")
               for r in caplog.records)  # one warning line, no traceback


async def test_a_patch_that_makes_a_kueue_objects_apiversion_a_list_is_answered_as_for_a_pod_not_500(api):
    # Found by the REST fuzz at 3,000 requests: the Kueue schema lookup hashed the
    # patched apiVersion. As for built-in kinds, the version the URL names stays.
    v = "kueue.x-k8s.io/v1beta2"
    lqs = "/apis/kueue.x-k8s.io/v1beta2/namespaces/demo/localqueues"
    assert (await api.call("POST", "/apis/kueue.x-k8s.io/v1beta2/clusterqueues",
                           {"apiVersion": v, "kind": "ClusterQueue", "metadata": {"name": "cq"}, "spec": {}}))[0] == 201
    status, before = await api.call("POST", lqs, {"apiVersion": v, "kind": "LocalQueue",
                                                 "metadata": {"name": "lq", "namespace": "demo"},
                                                 "spec": {"clusterQueue": "cq"}})
    assert status == 201
    for ctype in (MERGE, "application/apply-patch+yaml"):
        status, now = await api.call("PATCH", lqs + "/lq" + ("?fieldManager=f" if "apply" in ctype else ""),
                                     {"apiVersion": ["fuzz", 1, "x"]}, ctype)
        assert status < 500, (ctype, now)
    status, now = await api.call("GET", lqs + "/lq")
    assert now["apiVersion"] == v and now["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]


async def test_a_deletecollection_the_store_refuses_deletes_nothing(api):
    # Found by the REST fuzz (seed 12): DELETE /api/v1/namespaces removed the namespaces
    # that may go, then answered 403 for "default". What will be refused goes first now.
    for ns in ("kube-public", "team-1", "team-2"):  # (the daemon creates kube-public; this fixture does not)
        assert (await api.call("POST", "/api/v1/namespaces", {"kind": "Namespace", "metadata": {"name": ns}}))[0] == 201
    status, err = await api.call("DELETE", "/api/v1/namespaces")
    assert (status, err["reason"]) == (403, "Forbidden") and "may not be deleted" in err["message"]
    status, listed = await api.call("GET", "/api/v1/namespaces")
    assert {"team-1", "team-2"} <= {n["metadata"]["name"] for n in listed["items"]}
    # the same with a precondition only one pod meets
    for name in ("a", "b"):
        await api.call("POST", "/api/v1/namespaces/demo/pods", pod(name, namespace="demo"))
    status, a = await api.call("GET", POD)
    status, err = await api.call("DELETE", "/api/v1/namespaces/demo/pods",
                                 {"kind": "DeleteOptions", "apiVersion": "v1",
                                  "preconditions": {"uid": a["metadata"]["uid"]}})
    assert status == 409
    status, listed = await api.call("GET", "/api/v1/namespaces/demo/pods")
    assert sorted(p["metadata"]["name"] for p in listed["items"]) == ["a", "b"]


async def test_a_binding_to_a_number_or_a_name_no_node_may_have_is_refused_and_binds_nothing(api):
    # Found by the REST fuzz: target.name 2**64 came in as a JSON number and the pod was
    # stored bound to "1.8446744073709552e+19", which its own validation then refused.
    other = pod("theirs", namespace="demo")
    other["spec"]["schedulerName"] = "my-scheduler"
    await api.call("POST", "/api/v1/namespaces/demo/pods", other)
    path = "/api/v1/namespaces/demo/pods/theirs/binding"
    for target, answer in (({"name": 2**64}, 400), ({"name": ["n1"]}, 400), ("n1", 400),
                           ({"name": "Not A Node"}, 422), ({"name": "a" * 254}, 422)):
        status, err = await api.call("POST", path, {"kind": "Binding", "metadata": {"name": "theirs"},
                                                    "target": target})
        assert status == answer, (target, err)
        if answer == 422:
            assert err["details"]["causes"][0]["field"] == "target.name"
    _, p = await api.call("GET", "/api/v1/namespaces/demo/pods/theirs")
    assert "nodeName" not in p["spec"]
