"""The HTTP port's edges under a fuzz, against a live daemon: credentials sent every
wrong way, and bytes that are not quite HTTP on raw sockets. KSCHED_FUZZ_REST_N and
KSCHED_FUZZ_REST_SEED as in test_fuzz_rest.py."""
from __future__ import annotations

import http.client
import random
import socket
import threading
from collections import Counter

import yaml

from tests.e2e.conftest import UNVERIFIED
from tests.validation.rest_fuzzer import drain_lines
from tests.validation.test_fuzz_rest import N, SEED


def test_fuzzed_credentials_never_get_in_and_never_get_a_5xx(daemon_factory, tmp_path, summary):
    """Against a daemon with a token (HTTPS): only exactly one `Authorization: Bearer
    <token>` header gets a 200; a token in the query, twice, in another scheme, with
    other case or padding, cut or extended gets 401 (400 from the HTTP parser for a
    header value with control characters)."""
    token = "s3cret-token-of-the-fuzz"
    (tmp_path / "token").write_text(token + "\n")
    (tmp_path / "token").chmod(0o600)
    config = tmp_path / "daemon.yaml"  # a budget of failures big enough that every credential is judged
    config.write_text(yaml.safe_dump({"apiVersion": "ksched.io/v1alpha1", "kind": "DaemonConfiguration",
                                      "tokenFile": str(tmp_path / "token"), "limits": {"authFailureBurst": 1000}}))
    d = daemon_factory("--config", str(config))
    r = random.Random(SEED)
    candidates: list[tuple[list[tuple[str, str]], str, bool]] = [([("Authorization", f"Bearer {token}")], "", True)]
    wrong_values = [f"Bearer {token}x", f"Bearer {token[:-1]}", f"Basic {token}", token, f"Bearer{token}",
                    f"bearer  {token.upper()}", "Bearer ", "", f"Bearer {token}\x7f", "Bearer " + "x" * 8000,
                    f"Bearer {token},Bearer {token}"]
    for _ in range(60):
        pick = r.random()
        if pick < 0.3:
            candidates.append(([("Authorization", r.choice(wrong_values))], "", False))
        elif pick < 0.5:
            candidates.append(([], f"access_token={token}", False))
        elif pick < 0.7:
            candidates.append(([("Authorization", f"Bearer {token}")] * 2, "", False))
        elif pick < 0.85:
            candidates.append(([("Authorization", f"Bearer {token}"), ("Authorization", r.choice(wrong_values))],
                               "", False))
        else:
            candidates.append(([("Authorization", f"Bearer {token}")], f"access_token=x&token={token}", True))
    answers: Counter[str] = Counter()
    wrong: list[str] = []
    for headers, query, allowed in candidates:
        conn = http.client.HTTPSConnection("127.0.0.1", d.http_port, timeout=30, context=UNVERIFIED)
        conn.putrequest("GET", "/api/v1/namespaces" + (f"?{query}" if query else ""))
        for name, value in headers:
            conn.putheader(name, value)
        conn.endheaders()
        status = conn.getresponse().status
        conn.close()
        answers[str(status)] += 1
        malformed = any(not v.isprintable() for _, v in headers)  # the HTTP parser's 400, as Go's server's
        if status != (200 if allowed else 400 if malformed else 401):
            wrong.append(f"{status} for headers {[(n, v[:40]) for n, v in headers]} query {query!r}")
    assert wrong == []
    assert d.proc is not None and d.proc.poll() is None
    by_code = " ".join(f"{code}={n}" for code, n in sorted(answers.items()))
    summary(f"rest-auth-fuzz: requests={len(candidates)} answers: {by_code} wrongly-admitted=0 5xx=0")


_RAW_BODY = (b'{"metadata":{"name":"raw"},"spec":{"schedulerName":"fuzz-elsewhere",'
             b'"containers":[{"name":"c","image":"x"}]}}')
RAW = (b"POST /api/v1/namespaces/default/pods HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
       b"Content-Length: %d\r\n\r\n%s" % (len(_RAW_BODY), _RAW_BODY))


def _first_reply(s: socket.socket) -> bytes:
    """The start of the server's answer. A request it still waits on (its headers or
    body shorter than announced) is finished with what ends headers and a chunked body
    and filler that completes a Content-Length and then is no request line, so the
    server answers and closes; b"waiting" if it still waits for more (its idle timeout
    ends that connection)."""
    s.settimeout(1.0)
    try:
        return s.recv(65536)
    except ConnectionResetError:
        return b""
    except TimeoutError:
        s.sendall(b"\r\n\r\n0\r\n\r\n" + b" " * 100)
    s.settimeout(1.0)  # only classifies the answer: a request still waited on is no failure
    try:
        return s.recv(65536)
    except ConnectionResetError:
        return b""
    except TimeoutError:
        return b"waiting"


def test_malformed_http_never_gets_a_5xx_nor_an_error_in_the_daemons_log(daemon_factory, summary):
    """Bytes that are not quite HTTP (a valid request with bytes flipped, cut or
    repeated, bad chunk sizes, header lines without a colon, huge header lines) on raw
    sockets: each is answered 4xx or the connection is closed; the daemon logs no
    ERROR and no traceback and keeps serving."""
    d = daemon_factory()
    log: list[str] = []
    drain = threading.Thread(target=drain_lines, args=(d.proc.stderr, log), daemon=True)
    drain.start()
    r = random.Random(SEED)
    chunked = RAW.split(b"Content-Length")[0] + b"Transfer-Encoding: chunked\r\n\r\n%x\r\n%s" % (
        len(_RAW_BODY), _RAW_BODY)
    cases = [chunked.replace(b"\r\n\r\n", b"\r\n\r\nzz\r\n", 1), RAW.replace(b"Host: x", b"Host x"),
             RAW.replace(b"Host: x", b"X-Long: " + b"a" * 20_000), b"GARBAGE\r\n\r\n", b"\x16\x03\x01\x00\xa5",
             RAW.replace(b"HTTP/1.1", b"HTTP/9.9"), RAW.replace(b"Length: ", b"Length: -"),
             RAW.replace(b"Length: ", b"Length: 99999999999999999999")]
    for _ in range(max(N // 10, 20)):
        data = bytearray(r.choice([RAW, chunked]))
        for _ in range(r.randint(1, 4)):
            at = r.randrange(len(data))
            pick = r.random()
            if pick < 0.5:
                data[at] = r.randrange(256)
            elif pick < 0.75:
                del data[at:at + r.randint(1, 10)]
            else:
                data[at:at] = data[at:at + r.randint(1, 20)]
        cases.append(bytes(data))
    statuses: Counter[str] = Counter()
    for raw in cases:
        with socket.create_connection(("127.0.0.1", d.http_port), timeout=30) as s:
            s.sendall(raw)
            reply = _first_reply(s)
        code = reply.split(b" ", 2)[1].decode() if reply.startswith(b"HTTP/1.") else \
            "waiting" if reply == b"waiting" else "closed"
        statuses[code] += 1
        assert not code.startswith("5"), (code, raw[:120])
    assert d.http_get("/readyz") == "ok"
    assert d.terminate() == 0
    drain.join(timeout=10)
    assert [line for line in log if "Traceback" in line or " ERROR " in line] == [], "".join(log[-40:])
    by_code = " ".join(f"{code}={n}" for code, n in sorted(statuses.items()))
    summary(f"rest-raw-http-fuzz: requests={len(cases)} answers: {by_code} 5xx=0 errors-logged=0")
