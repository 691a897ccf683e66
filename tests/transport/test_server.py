"""The msgpack server end to end over loopback: ops, errors, connection policy, watches."""
from __future__ import annotations

import asyncio
import struct

import msgpack
import pytest

from transport.client.tcp import Client
from transport.protocol.framing import encode_frame
from transport.protocol.wire import ApiError, Reason

from tests.transport.conftest import RawConn, node, pod, start_daemon, stop_daemon


async def test_applied_objects_can_be_read_back_by_get_and_list(daemon):
    async with await Client.connect(daemon.address) as c:
        items = await c.apply([node("n1"), pod("p1"), pod("p2", labels={"app": "web"})])
        assert [i["metadata"]["resourceVersion"] for i in items] == ["1", "2", "3"]
        assert (await c.get("Pod", "p1"))["metadata"]["name"] == "p1"
        web, rv = await c.list("Pod", label_selector="app=web")
        assert [p["metadata"]["name"] for p in web] == ["p2"] and rv == 3
        pending, _ = await c.list("Pod", field_selector="status.phase=Pending")
        assert sorted(p["metadata"]["name"] for p in pending) == ["p1", "p2"]


async def test_an_invalid_object_in_apply_names_its_field_and_nothing_is_applied(daemon):
    bad = pod("p2", cpu="1.5.5")
    async with await Client.connect(daemon.address) as c:
        with pytest.raises(ApiError) as err:
            await c.apply([node("n1"), bad])
        assert err.value.reason == Reason.INVALID
        assert err.value.message.startswith("objects[1] (Pod default/p2): spec.containers[0].resources.requests[cpu]: ")
        assert (await c.list("Node"))[0] == []


@pytest.mark.parametrize("op, fields, reason", [
    pytest.param("get", {"kind": "Pod", "name": "missing"}, Reason.NOT_FOUND, id="get-missing"),
    pytest.param("create", {"object": node("n1")}, Reason.ALREADY_EXISTS, id="create-existing"),
    pytest.param("apply", {"objects": [{**node("n1"), "metadata": {"name": "n1", "resourceVersion": "99"}}]},
                 Reason.CONFLICT, id="stale-resource-version"),
    pytest.param("list", {"kind": "Gadget"}, Reason.INVALID, id="unknown-kind"),
    pytest.param("explain", {"pod": pod("p")}, Reason.UNAVAILABLE, id="explain-without-scheduler"),
])
async def test_a_refused_request_gets_its_reason(daemon, op, fields, reason):
    async with await Client.connect(daemon.address) as c:
        await c.create(node("n1"))
        with pytest.raises(ApiError) as err:
            await c.request(op, **fields)
        assert err.value.reason == reason


@pytest.mark.parametrize("frame, expected_id, field", [
    pytest.param({"id": 7, "op": "get", "kind": 5, "name": "n1"}, 7, "kind: must be a string", id="int-kind"),
    pytest.param({"id": 8, "op": "apply", "objects": {"kind": "Node"}}, 8, "objects: must be a list", id="map-objects"),
    pytest.param({"id": 9, "op": "apply", "objects": [1]}, 9, "objects[0]: must be a map", id="int-object"),
    pytest.param({"id": 10, "op": "watch", "resourceVersion": "5"}, 10, "resourceVersion: must be an integer",
                 id="string-rv"),
    pytest.param({"id": 11, "op": "frobnicate"}, 11, "op: unknown op", id="unknown-op"),
    pytest.param({"id": 12, "op": "create", "object": {**node("n1"), "spec": {"x": b"\x00"}}}, 12,
                 "object.spec.x: must be JSON", id="bytes-value"),
    pytest.param({"id": 13, "op": "apply", "objects": [{**node("n1"), "spec": {5: "x"}}]}, 13,
                 "objects[0].spec: map keys must be strings", id="int-key"),
    pytest.param({"id": "x", "op": "stats"}, None, "id: must be an integer", id="string-id"),
    pytest.param({"op": "stats"}, None, "id: must be an integer", id="no-id"),
])
async def test_a_malformed_request_gets_invalid_naming_the_field_and_the_connection_stays(daemon, frame, expected_id, field):
    raw = await RawConn.open(daemon)
    await raw.send(frame)
    reply = await raw.recv()
    assert reply["id"] == expected_id and reply["ok"] is False
    assert reply["error"]["reason"] == "Invalid" and field in reply["error"]["message"]
    await raw.send({"id": 100, "op": "stats"})
    assert (await raw.recv())["ok"] is True
    await raw.close()


async def test_garbage_oversize_and_wrong_typed_frames_get_their_errors_while_another_client_is_served(daemon):
    async with await Client.connect(daemon.address) as other:
        await other.apply([node("n1"), pod("p1")])
        raw = await RawConn.open(daemon)

        await raw.send_bytes(struct.pack(">I", 3) + b"\xc1\xc1\xc1")  # not msgpack
        garbage = await raw.recv()
        assert (garbage["id"], garbage["error"]["reason"]) == (None, "Invalid")
        assert (await other.get("Node", "n1"))["metadata"]["name"] == "n1"

        await raw.send({"id": 1, "op": "create", "object": "Node n2"})  # wrong type
        wrong = await raw.recv()
        assert (wrong["id"], wrong["error"]["reason"]) == (1, "Invalid")
        assert "object: must be a map" in wrong["error"]["message"]
        assert len((await other.list("Pod"))[0]) == 1

        await raw.send_bytes(struct.pack(">I", (1 << 20) + 1))  # header only: rejected before the body
        too_large = await raw.recv()
        assert (too_large["id"], too_large["error"]["reason"]) == (None, "TooLarge")
        assert await raw.recv() is None  # and the connection is closed
        await raw.close()

        stats = await other.stats()
        assert stats["resourceVersion"] == 2 and stats["objects"] == {"Node": 1, "Pod": 1}


async def test_an_oversize_body_already_on_the_wire_is_not_read(daemon):
    raw = await RawConn.open(daemon)
    body = msgpack.packb({"id": 1, "op": "create", "object": node("x" * (1 << 20))})
    raw.writer.write(struct.pack(">I", len(body)) + body)
    reply = await raw.recv()
    assert reply["error"]["reason"] == "TooLarge"
    assert await raw.recv() is None
    await raw.close()
    async with await Client.connect(daemon.address) as c:
        assert (await c.list("Node"))[0] == []


async def test_requests_pipelined_on_one_connection_each_get_their_own_reply(daemon):
    raw = await RawConn.open(daemon)
    await raw.send_bytes(b"".join(encode_frame({"id": i, "op": "create", "object": node(f"n{i}")}) for i in range(1, 21)))
    replies = [await raw.recv() for _ in range(20)]
    assert sorted(r["id"] for r in replies) == list(range(1, 21)) and all(r["ok"] for r in replies)
    await raw.close()


async def test_with_a_token_a_request_before_hello_is_unauthorized_and_the_connection_closes():
    d, task = await start_daemon(token="s3cret")
    try:
        raw = await RawConn.open(d)
        await raw.send({"id": 1, "op": "list", "kind": "Node"})
        assert (await raw.recv())["error"]["reason"] == "Unauthorized"
        assert await raw.recv() is None
        await raw.close()

        with pytest.raises(ApiError) as err:
            await Client.connect(d.address, token="wrong")
        assert err.value.reason == Reason.UNAUTHORIZED

        async with await Client.connect(d.address, token="s3cret") as c:
            assert (await c.list("Node"))[0] == []
    finally:
        await stop_daemon(d, task)


async def test_a_watch_sees_changes_in_order_until_cancelled(daemon):
    async with await Client.connect(daemon.address) as c:
        await c.apply([node("n1")])
        seen = []
        stream = c.watch(["Pod"], resource_version=1)
        await c.apply([pod("p1"), pod("p2")])
        await c.delete("Pod", "p1")
        async for ev in stream:
            seen.append((ev.type, ev.object["metadata"]["name"], ev.resource_version))
            if len(seen) == 3:
                break
        await stream.aclose()
        assert seen == [("ADDED", "p1", 2), ("ADDED", "p2", 3), ("DELETED", "p1", 4)]


async def test_a_watch_from_zero_lists_current_objects_first(daemon):
    async with await Client.connect(daemon.address) as c:
        await c.apply([node("n1"), node("n2")])
        stream = c.watch(["Node"])
        names = [(await anext(stream)).object["metadata"]["name"] for _ in range(2)]
        await stream.aclose()
        assert sorted(names) == ["n1", "n2"]


async def test_watches_resume_after_the_daemon_restarts_on_the_same_port(daemon):
    async with await Client.connect(daemon.address) as c:
        streams = [c.watch(["Node"], resource_version=0), c.watch(["Node"], resource_version=0)]
        await c.apply([node("n1")])
        firsts = [await anext(s) for s in streams]
        await daemon.server.close()  # connection lost; the store and its history remain
        server2 = type(daemon.server)(daemon.server.service)
        await server2.start(daemon.host, daemon.port)
        try:
            writer = await Client.connect(daemon.address)
            await writer.apply([node("n2")])
            seconds = await asyncio.wait_for(asyncio.gather(*(anext(s) for s in streams)), 10)
            connections = len(server2.connections)  # the watching client reconnected once, plus the writer
            await writer.close()
        finally:
            for s in streams:
                await s.aclose()
            await server2.close()
        assert [f.object["metadata"]["name"] for f in firsts] == ["n1", "n1"]
        assert [(e.type, e.object["metadata"]["name"], e.resource_version) for e in seconds] == [("ADDED", "n2", 2)] * 2
        assert connections == 2


async def test_applying_the_same_manifest_again_keeps_the_binding_uid_and_creation_time(daemon):
    from actors.store import StoreClient

    async with await Client.connect(daemon.address) as c:
        [first] = await c.apply([pod("p1")])
        assert first["metadata"]["uid"] and first["metadata"]["creationTimestamp"]
        await StoreClient(daemon.store).bind("default", "p1", "n1", first["metadata"]["uid"])
        [again] = await c.apply([pod("p1")])
    assert again["spec"]["nodeName"] == "n1"
    assert {c["type"]: c["status"] for c in again["status"]["conditions"]} == {"PodScheduled": "True"}
    for field in ("uid", "creationTimestamp"):
        assert again["metadata"][field] == first["metadata"][field]


async def test_a_deleted_and_recreated_object_gets_a_new_uid(daemon):
    async with await Client.connect(daemon.address) as c:
        old = await c.create(node("n1"))
        await c.delete("Node", "n1")
        new = await c.create(node("n1"))
    assert old["metadata"]["uid"] != new["metadata"]["uid"]


async def test_a_client_that_pipelines_thousands_of_requests_gets_every_reply_and_others_are_served(daemon):
    async with await Client.connect(daemon.address) as other:
        await other.create(node("n1"))
        raw = await RawConn.open(daemon)
        n = 2500
        raw.writer.write(b"".join(encode_frame({"id": i, "op": "get", "kind": "Node", "name": "n1"}) for i in range(n)))
        assert (await other.get("Node", "n1"))["metadata"]["name"] == "n1"
        replies = [await raw.recv() for _ in range(n)]
        assert sorted(r["id"] for r in replies) == list(range(n)) and all(r["ok"] for r in replies)
        await raw.close()


async def test_after_cancel_a_watch_sends_nothing_more_and_cancelling_again_is_not_found(daemon):
    raw = await RawConn.open(daemon)
    await raw.send({"id": 1, "op": "watch", "kinds": ["Node"], "namespace": ""})
    assert (await raw.recv())["result"]["watch"] == 1
    async with await Client.connect(daemon.address) as c:
        await c.create(node("n1"))
        event = await raw.recv()
        assert (event["id"], event["event"]["type"], event["event"]["resourceVersion"]) == (1, "ADDED", 1)
        await raw.send({"id": 2, "op": "cancel", "watch": 1})
        assert (await raw.recv()) == {"id": 2, "ok": True, "result": {}}
        await c.create(node("n2"))
        await raw.send({"id": 3, "op": "cancel", "watch": 1})
        again = await raw.recv()  # the next frame is this reply, not an event for n2
        assert (again["id"], again["error"]["reason"]) == (3, "NotFound")
    await raw.close()


async def test_a_watch_with_a_namespace_sees_only_that_namespace(daemon):
    async with await Client.connect(daemon.address) as c:
        stream = c.watch(["Pod"], namespace="team-a")
        await c.apply([pod("x", namespace="team-b"), pod("y", namespace="team-a")])
        ev = await anext(stream)
        await stream.aclose()
    assert (ev.object["metadata"]["namespace"], ev.object["metadata"]["name"]) == ("team-a", "y")


async def test_events_recorded_about_an_object_are_served_with_their_age(daemon):
    from actors.store import StoreClient

    async with await Client.connect(daemon.address) as c:
        await c.apply([pod("p1")])
        StoreClient(daemon.store).record_event("Pod", "default/p1", "Warning", "FailedScheduling", "0/0 nodes")
        events = await c.events("Pod", "p1")
    assert [(e["type"], e["reason"], e["message"]) for e in events] == [("Warning", "FailedScheduling", "0/0 nodes")]
    assert events[0]["ageSeconds"] >= 0


async def test_one_client_can_have_many_requests_in_flight_at_once(daemon):
    async with await Client.connect(daemon.address) as c:
        created = await asyncio.gather(*(c.create(node(f"n{i}")) for i in range(200)))
        assert sorted(int(o["metadata"]["resourceVersion"]) for o in created) == list(range(1, 201))
        assert len((await c.list("Node"))[0]) == 200


async def test_apply_says_which_objects_were_created_configured_or_unchanged(daemon):
    async with await Client.connect(daemon.address) as c:
        await c.apply([node("n1"), node("n2")])
        result = await c.request("apply", objects=[node("n1"), node("n2", labels={"zone": "b"}), node("n3")])
    assert result["actions"] == ["unchanged", "configured", "created"]


async def test_the_same_object_twice_in_one_apply_is_created_then_seen(daemon):
    async with await Client.connect(daemon.address) as c:
        result = await c.request("apply", objects=[node("n1"), node("n1"), node("n1", labels={"zone": "a"})])
        stored = await c.get("Node", "n1")
    assert result["actions"] == ["created", "unchanged", "configured"]
    assert stored["metadata"]["labels"] == {"zone": "a"} and stored["metadata"]["resourceVersion"] == "2"


async def test_a_client_that_sends_and_half_closes_still_gets_every_reply(daemon):
    raw = await RawConn.open(daemon)
    raw.writer.write(b"".join(encode_frame({"id": i, "op": "create", "object": node(f"n{i}")}) for i in range(50)))
    raw.writer.write_eof()
    replies = []
    while (frame := await raw.recv()) is not None:
        replies.append(frame)
    assert sorted(r["id"] for r in replies) == list(range(50)) and all(r["ok"] for r in replies)
    await raw.close()


async def test_an_apply_asking_for_the_compact_reply_gets_names_and_actions_not_the_objects(daemon):
    async with await Client.connect(daemon.address) as c:
        await c.apply([node("n1")])
        result = await c.request("apply", objects=[node("n1"), node("n2"), pod("p1")], compact=True)
        with pytest.raises(ApiError) as err:
            await c.request("apply", objects=[node("n3")], compact="yes")
        stored, _ = await c.list("Node")
    assert "items" not in result and result["compact"] is True
    assert result["actions"] == ["unchanged", "created", "created"]
    assert result["names"] == ["/n1", "/n2", "default/p1"] and result["counts"] == {"unchanged": 1, "created": 2}
    assert result["resourceVersion"] == 3
    assert err.value.reason == Reason.INVALID and err.value.message == "compact: must be a boolean, got str"
    assert sorted(n["metadata"]["name"] for n in stored) == ["n1", "n2"]
