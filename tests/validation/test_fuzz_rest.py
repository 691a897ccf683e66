"""Fuzz the Kubernetes REST API of a live daemon (a subprocess) over real HTTP, as
test_fuzz_daemon.py fuzzes the msgpack port: seeded random requests of every verb
and body type the API takes (POST as JSON and YAML, PUT, PATCH as merge, strategic,
JSON patch and server-side apply with a fieldManager, the status and binding
subresources, DELETE with DeleteOptions and preconditions, deletecollection, get,
list and watch with labelSelector, fieldSelector, limit, continue, resourceVersion,
timeoutSeconds and allowWatchBookmarks) on every stored kind, their bodies valid
objects with random fields replaced by wrong types, huge or negative numbers, NaN,
null, deep nesting, long or odd strings.

It passes when no answer is a 5xx, the daemon logs no traceback and no ERROR, it
stays alive, every stored object still reads back and validates, and no refused
request changed anything (every object of the kind it aimed at, compared before
and after; Kueue's kinds and PodGroups without their status and resourceVersion,
which the admission actor writes on its own).

KSCHED_FUZZ_REST_N sets the number of requests (default 300, a few seconds);
KSCHED_FUZZ_REST_SEED draws others than CI's fixed ones."""
from __future__ import annotations

import copy
import os
import random
import threading

from framework.api.errors import ValidationError
from framework.api.objects import parse_object
from framework.api.schema import validate_object

from tests.validation.rest_fuzzer import CORPUS, KINDS, NS, SEEDS, Fuzzer, drain_lines

N = int(os.environ.get("KSCHED_FUZZ_REST_N", "300"))
CONCURRENT = 4  # fuzzers at once after the sequential run, N/2 requests among them
SEED = int(os.environ.get("KSCHED_FUZZ_REST_SEED", "31"))


def test_fuzzed_rest_requests_never_get_a_5xx_nor_change_anything_when_refused(daemon_factory, summary):
    d = daemon_factory()
    log: list[str] = []
    drain = threading.Thread(target=drain_lines, args=(d.proc.stderr, log), daemon=True)
    drain.start()
    f = Fuzzer(d.http_port, random.Random(SEED))
    assert f.call("POST", "/api/v1/namespaces", {"kind": "Namespace", "metadata": {"name": NS}})[0] == 201
    for node in ("n1", "n2"):
        obj = {**copy.deepcopy(SEEDS["Node"]), "metadata": {"name": node}}
        assert f.call("POST", "/api/v1/nodes", obj)[0] == 201
    for kind in KINDS:
        f.base(kind)

    for kind, method, sub, raw, ctype in CORPUS:
        f.replay(kind, method, sub, raw, ctype)
    for i in range(N):
        f.one(i)
    together = [Fuzzer(d.http_port, random.Random(SEED * 100 + k), alone=False) for k in range(CONCURRENT)]
    threads = [threading.Thread(target=g.run, args=(N + 1000 * (k + 1), N // (2 * CONCURRENT)))
               for k, g in enumerate(together)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for g in together:
        f.failures += g.failures
        f.answers.update(g.answers)

    assert d.proc is not None and d.proc.poll() is None, "the daemon exited"
    assert f.failures == []
    invalid = []
    for kind in KINDS:
        for key, item in f.dump(kind).items():
            status, again = f.call("GET", f.url(kind, item["metadata"]["name"],
                                                namespace=item["metadata"].get("namespace", "")))
            if status != 200:
                invalid.append(f"{kind} {key}: reads back {status}")
            elif validate_object(again):
                invalid.append(f"{kind} {key}: {validate_object(again)[0]}")
            else:
                try:
                    parse_object(again)  # the typed form too (Kueue's kinds have no schema table)
                except ValidationError as err:
                    invalid.append(f"{kind} {key}: {err}")
    assert invalid == []
    assert d.terminate() == 0
    drain.join(timeout=10)
    bad_lines = [line for line in log if "Traceback" in line or " ERROR " in line]
    assert bad_lines == [], "".join(log[-60:])
    by_code = " ".join(f"{code}={n}" for code, n in sorted(f.answers.items()))
    summary(f"rest-fuzz: requests={N}+{len(CORPUS)} corpus+{N // (2 * CONCURRENT) * CONCURRENT} concurrent "
            f"seed={SEED} answers: {by_code} 5xx=0 tracebacks=0 refused-changed=0")
