"""Fuzz a live daemon over real TCP: hypothesis mutates valid Pods, Nodes, PodGroups
and PriorityClasses (any field replaced by a wrong type, a huge or negative number,
inf/nan, null, bytes, deep nesting, a long or unicode string) and creates each, or
applies it over a stored object of its kind (the update path). Every reply is
Invalid naming the field (Conflict or AlreadyExists where the mutation earned it),
or the object is stored valid and scheduled without harm; the daemon stays up;
ordinary pods keep binding afterwards.

KSCHED_FUZZ_EXAMPLES sets the number of cases (default 3000); KSCHED_FUZZ_SEED draws
other cases than CI's fixed ones."""
from __future__ import annotations

import copy
import itertools
import math
import os
import re
from collections import Counter
from typing import Any

from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from actors.store.actor import describe
from framework.api.schema import validate_object
from transport.protocol.wire import ApiError

from tests.e2e.conftest import poll

EXAMPLES = int(os.environ.get("KSCHED_FUZZ_EXAMPLES", "3000"))
SEED = os.environ.get("KSCHED_FUZZ_SEED")
MODE = "fuzz"
TERM = {"topologyKey": "zone", "labelSelector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["a"]}]},
        "namespaces": ["default"]}

SEEDS: dict[str, dict[str, Any]] = {
    "Pod": {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "seed", "namespace": "default", "labels": {"app": "a", "mode": MODE},
                         "annotations": {"note": "x"},
                         "ownerReferences": [{"apiVersion": "v1", "kind": "ReplicaSet", "name": "rs", "uid": "u1"}]},
            "spec": {"containers": [{"name": "c", "image": "pause", "ports": [{"containerPort": 80}],
                                     "resources": {"requests": {"cpu": "1m", "memory": "1Mi"},
                                                   "limits": {"cpu": "2m"}}}],
                     "priority": 0, "nodeSelector": {"fuzz": "yes"},
                     "tolerations": [{"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule"}],
                     "affinity": {
                         "nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                             {"weight": 3, "preference": {"matchExpressions": [
                                 {"key": "zone", "operator": "In", "values": ["z0"]}]}}]},
                         "podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                             {"weight": 10, "podAffinityTerm": TERM}]},
                         "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                             {**TERM, "labelSelector": {"matchLabels": {"never": "matches"}}}]}},
                     "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone",
                                                    "whenUnsatisfiable": "ScheduleAnyway",
                                                    "labelSelector": {"matchLabels": {"app": "a"}}}],
                     "volumes": [{"name": "v", "emptyDir": {"sizeLimit": "1Gi"}}]},
            "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False"}]}},
    "Node": {"kind": "Node", "metadata": {"name": "seed", "labels": {"zone": "z9", "fuzz": "no"}},
             "spec": {"taints": [{"key": "fuzz", "value": "x", "effect": "NoSchedule"}], "unschedulable": False},
             "status": {"capacity": {"cpu": "1", "memory": "1Gi", "pods": "10"},
                        "allocatable": {"cpu": "1", "memory": "1Gi", "pods": "10"},
                        "images": [{"names": ["pause"], "sizeBytes": 1000}],
                        "conditions": [{"type": "Ready", "status": "True"}]}},
    "PodGroup": {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
                 "metadata": {"name": "seed", "namespace": "default"},
                 "spec": {"minMember": 2, "minResources": {"cpu": "1"}, "scheduleTimeoutSeconds": 10}},
    "PriorityClass": {"kind": "PriorityClass", "metadata": {"name": "seed"}, "value": 10,
                      "globalDefault": False, "description": "d", "preemptionPolicy": "Never"},
}


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in `value` a mutation may replace (containers and leaves)."""
    out = [prefix] if prefix else []
    if isinstance(value, dict):
        for k, v in value.items():
            out += paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += paths(v, (*prefix, i))
    return out


PATHS = {kind: [p for p in paths(seed) if p[0] != "kind" and p[:2] != ("metadata", "name")]
         for kind, seed in SEEDS.items()}


def nested(depth: int) -> Any:
    v: Any = "leaf"
    for i in range(depth):
        v = {"a": v} if i % 2 else [v]
    return v


BAD_VALUES = st.one_of(
    st.none(), st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**64 - 1),
    st.sampled_from([2**31, 2**31 - 1, -(2**31) - 1, 2**63 - 1, -(2**63), 2**64 - 1, -1, 0, 101]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([1e308, -1e308, math.inf, -math.inf, math.nan, 0.5]),
    st.text(max_size=12),
    st.text(min_size=64, max_size=400),
    st.sampled_from(["x", "", "999999999999999Ei", "1.5.5", "-1", "1e308", "inf", "NaN", "In", "Exists", "Gt",
                     "ünïcödé", "\u202e", "a" * 254, "Equal", "NoExecute", b"\x00\xff"]),
    st.lists(st.one_of(st.none(), st.integers(-5, 5), st.text(max_size=3)), max_size=3),
    st.dictionaries(st.text(max_size=4), st.one_of(st.none(), st.integers(-5, 5), st.text(max_size=3)), max_size=3),
    st.integers(min_value=60, max_value=200).map(nested),
)


def set_path(obj: dict[str, Any], path: tuple[Any, ...], value: Any) -> None:
    at: Any = obj
    for p in path[:-1]:
        at = at[p]
    at[path[-1]] = value


NAMES = itertools.count()
# A reply that names the field: "spec.priority: ...", "value: ...", "status.allocatable[cpu]: ...".
NAMES_A_FIELD = re.compile(r"^[A-Za-z][\w.\-/]*(\[[^\]]*\])*(\.[\w\-/]+(\[[^\]]*\])*)*: \S")
EXPECTED = {"create": ("Invalid", "AlreadyExists"), "update": ("Invalid", "Conflict")}


def test_fuzzed_objects_through_a_live_daemon_are_refused_naming_the_field_or_stored_valid(daemon_factory, summary):
    d = daemon_factory()
    with d.client() as c:
        c.apply([{"kind": "Node", "metadata": {"name": f"node-{i}", "labels": {"zone": f"z{i}", "fuzz": "yes"}},
                  "status": {"allocatable": {"cpu": "1000", "memory": "1000Gi", "pods": "100000"}}} for i in range(3)])
        c.apply([{**copy.deepcopy(seed), "metadata": {**seed["metadata"], "name": f"base-{kind.lower()}"}}
                 for kind, seed in SEEDS.items()])
    outcome: Counter[str] = Counter()
    bad_replies: list[str] = []

    with d.client() as c:
        @settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=SEED is None,
                  suppress_health_check=list(HealthCheck))
        @seed(int(SEED or 0))
        @given(kind=st.sampled_from(sorted(SEEDS)), update=st.booleans(), data=st.data())
        def one_case(kind: str, update: bool, data: st.DataObject) -> None:
            obj = copy.deepcopy(SEEDS[kind])
            obj["metadata"]["name"] = f"base-{kind.lower()}" if update else f"fz-{next(NAMES)}"
            for _ in range(data.draw(st.integers(1, 3), label="mutations")):
                path = data.draw(st.sampled_from(PATHS[kind]), label="path")
                try:
                    set_path(obj, path, data.draw(BAD_VALUES, label="value"))
                except (KeyError, IndexError, TypeError):
                    pass  # an earlier mutation replaced a parent: this one has nowhere to go
            mode = "update" if update else "create"
            try:
                c.apply([obj]) if update else c.create(obj)
                outcome[f"stored-{mode}"] += 1
            except ApiError as e:
                outcome[str(e.reason)] += 1
                message = e.message.removeprefix(f"{describe(obj, 0)}: ")  # apply names the object first
                if str(e.reason) not in EXPECTED[mode] or (
                        str(e.reason) == "Invalid" and not NAMES_A_FIELD.match(message)):
                    bad_replies.append(f"{mode} {e.reason}: {e.message[:300]}")

        one_case()

    assert d.proc is not None and d.proc.poll() is None, "the daemon exited"
    assert bad_replies == []
    invalid_stored = []
    with d.client() as c:
        for kind in SEEDS:
            items, _ = c.list(kind)
            invalid_stored += [f"{kind} {o['metadata'].get('name')}: {validate_object(o)[0]}"
                               for o in items if validate_object(o)]
        assert invalid_stored == []
        c.apply([{"kind": "Pod", "metadata": {"name": f"ordinary-{i}", "namespace": "default"},
                  "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "10m"}}}]}}
                 for i in range(10)])

    def ordinary_bound() -> bool | None:
        with d.client() as c:
            pods, _ = c.list("Pod", "default")
        mine = [p for p in pods if p["metadata"]["name"].startswith("ordinary-")]
        return True if len(mine) == 10 and all(p["spec"].get("nodeName") for p in mine) else None

    poll(ordinary_bound, "ordinary pods bound after the fuzzing", attempts=1200)
    d.cli("get", "pods", "-A", "-o", "json")
    assert d.terminate() == 0
    cases = sum(outcome.values())
    summary(f"fuzz: cases={cases} invalid={outcome['Invalid']} created={outcome['stored-create']} "
            f"updated={outcome['stored-update']} conflict={outcome['Conflict']} "
            f"already-exists={outcome['AlreadyExists']} internal=0 invalid-stored=0 crashes=0 ordinary-bound=10/10")
