"""A pod admitted with a remembered spec (actors/store/pod_specs.py) is the pod the
write chain admits in full: the same raw dict byte for byte (key order and exact
types), the same parsed object, the same warnings, the same refusal with the same
message and field; over varied specs, refused ones, PriorityClasses that change
between pods, the GenericWorkload gate flipping, Kueue's pod defaults and every
fieldValidation mode. Two chains over the same stored objects, one with the memo off."""
from __future__ import annotations

import random
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from hypothesis import HealthCheck, given, settings, strategies as st

from actors.store.messages import BadRequest, Invalid, NotFound
from actors.store.pod_specs import AdmittedPodSpecs
from actors.store.raw import exact_encoding
from actors.store.write_chain import AS_WRITTEN, STRICT, WriteChain, WriteRules
from framework.api.objects import parse_as
from framework.api.pod import _POD_SLOTS, _SPEC_PART, Pod
from framework.features import FeatureGates
from framework.kueue.pods import QUEUE_LABEL
from framework.api.workload_api import GENERIC_WORKLOAD

CONTAINER = {"name": "c", "image": "pause", "resources": {"requests": {"cpu": "100m", "memory": "500Mi"}}}

# spec fields, each a few values: valid, refused, null, unknown, 1 against 1.0
SPEC_VARIANTS: dict[str, list[Any]] = {
    "priorityClassName": [None, "high", "low", "missing", "system-node-critical", 7],
    "priority": [None, 10, 100, 1000, 2_000_001_000, "10"],
    "preemptionPolicy": [None, "Never", "PreemptLowerPriority", "Sometimes"],
    "terminationGracePeriodSeconds": [None, 30, 30.0, True],
    "schedulingGroup": [None, {"podGroupName": "g"}],
    "schedulingGates": [None, [{"name": "wait"}]],
    "colour": [None, "blue"],  # not a PodSpec field
    "containers": [[CONTAINER], [{**CONTAINER, "name": "Bad_Name"}], [CONTAINER, {**CONTAINER, "name": "d"}], []],
    "nodeName": [None, "node-1"],
}
CLASSES = st.dictionaries(st.sampled_from(["high", "low"]),
                          st.tuples(st.sampled_from([10, 100, 1000]), st.booleans(),
                                    st.sampled_from(["PreemptLowerPriority", "Never"])), max_size=2)


def spec_of(choice: dict[str, int]) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    for field, values in SPEC_VARIANTS.items():
        v = values[choice.get(field, 0) % len(values)]
        if v is not None or choice.get(field, 0) == len(values):  # a null field, now and then
            spec[field] = v
    return spec


SPECS = st.dictionaries(st.sampled_from(sorted(SPEC_VARIANTS)), st.integers(0, 6), max_size=4)
STEP = st.one_of(
    st.tuples(st.just("pod"), st.integers(0, 2), st.sampled_from([None, "Strict", "Warn", "Ignore"]),
              st.sampled_from(["plain", "queued", "grouped", "bad-label", "unknown-meta", "nan-unknown",
                               "nan-label", "no-name"])),
    st.tuples(st.just("classes"), CLASSES),
    st.tuples(st.just("gate"), st.booleans()),
)


def pod_raw(i: int, spec: dict[str, Any], meta_kind: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": f"p{i}", "namespace": "default", "labels": {"app": "x"}}
    if meta_kind == "queued":
        meta["labels"][QUEUE_LABEL] = "q"
    elif meta_kind == "grouped":
        meta["labels"]["scheduling.x-k8s.io/pod-group"] = "pg"
    elif meta_kind == "bad-label":
        meta["labels"]["bad key!"] = "x"
    elif meta_kind == "unknown-meta":
        meta["shoeSize"] = 9
    elif meta_kind == "nan-unknown":  # the plain copy's slow path; dropped under Warn and Ignore
        meta["shoeSize"] = float("nan")
    elif meta_kind == "nan-label":
        meta["labels"]["n"] = float("nan")
    elif meta_kind == "no-name":
        meta = {"generateName": "p-", "namespace": "default"}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def classes_of(want: dict[str, tuple[int, bool, str]]) -> dict[str, Any]:
    out = {}
    for name, (value, default, policy) in want.items():
        out[name] = parse_as("PriorityClass", {
            "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
            "value": value, "globalDefault": default, "preemptionPolicy": policy})
    return out


def shape(v: Any, depth: int = 0) -> Any:
    """A comparable form of a parsed value (slotted objects by their slots)."""
    if v is None or isinstance(v, (str, int, float, Fraction)):
        return (type(v).__name__, v)
    if depth > 8:
        return ("deep", repr(v))
    if isinstance(v, Mapping):
        return ("map", tuple((k, shape(x, depth + 1)) for k, x in v.items()))
    if isinstance(v, (list, tuple)):
        return ("seq", tuple(shape(x, depth + 1) for x in v))
    slots = [s for c in type(v).__mro__ for s in getattr(c, "__slots__", ())]
    fields = {s: getattr(v, s, None) for s in slots if s != "raw"} or getattr(v, "__dict__", {})
    return (type(v).__name__, tuple((k, shape(x, depth + 1)) for k, x in fields.items()))


def outcome(chain: WriteChain, raw: dict[str, Any], fv: str | None) -> Any:
    try:
        got = chain.create(raw, fv)
    except (Invalid, BadRequest, NotFound) as e:
        return ("refused", type(e).__name__, str(e), getattr(e, "field", None))
    masked = {**got.raw, "metadata": {k: v for k, v in got.raw["metadata"].items() if k != "uid"}}
    parsed = {s: shape(getattr(got.obj, s)) for s in _POD_SLOTS if s not in ("raw", "uid", "meta")}
    meta = {s: shape(getattr(got.obj.meta, s)) for s in type(got.obj.meta).__slots__ if s != "uid"}
    return ("admitted", exact_encoding(masked), parsed, meta, list(got.warnings))


def chains(rules: WriteRules) -> tuple[WriteChain, WriteChain, dict[str, Any]]:
    objects: dict[str, Any] = {"Namespace": {}, "PriorityClass": {}, "PodGroup": {
        "default/pg": parse_as("PodGroup", {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
                                            "metadata": {"name": "pg", "namespace": "default",
                                                         "labels": {QUEUE_LABEL: "q"}},
                                            "spec": {"minMember": 1}})}}
    on = WriteChain(objects, lambda: 1.7e9, random.Random(7), rules)
    off = WriteChain(objects, lambda: 1.7e9, random.Random(7), rules)
    off.pod_specs = AdmittedPodSpecs(enabled=False)
    return on, off, objects


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(templates=st.lists(SPECS, min_size=3, max_size=3), steps=st.lists(STEP, min_size=1, max_size=30),
       strict=st.booleans())
def test_a_pod_admitted_through_the_memo_is_the_pod_admitted_in_full(templates: list[dict[str, int]],
                                                                     steps: list[Any], strict: bool) -> None:
    """Pods are made from three templates (as a workload's are), so specs repeat."""
    on, off, objects = chains(STRICT if strict else AS_WRITTEN)
    for i, step in enumerate(steps):
        if step[0] == "classes":
            objects["PriorityClass"] = classes_of(step[1])
        elif step[0] == "gate":
            on.features = off.features = FeatureGates({GENERIC_WORKLOAD: step[1]})
        else:
            _, template, fv, meta_kind = step
            # each chain gets its own copy of the same manifest, built twice
            assert outcome(on, pod_raw(i, spec_of(templates[template]), meta_kind), fv) == \
                outcome(off, pod_raw(i, spec_of(templates[template]), meta_kind), fv), step


def test_pods_of_one_template_share_one_admitted_spec_and_its_parsed_part() -> None:
    on, off, _ = chains(STRICT)
    spec = {"containers": [CONTAINER], "tolerations": [{"key": "k", "operator": "Exists"}]}
    first = on.create(pod_raw(0, dict(spec), "plain"), None)
    second = on.create(pod_raw(1, dict(spec), "plain"), None)
    assert on.pod_specs.proven_count == 1
    assert second.raw["spec"] is first.raw["spec"]
    assert second.obj.tolerations is first.obj.tolerations and second.obj.name == "p1"
    alone = off.create(pod_raw(2, dict(spec), "plain"), None)
    assert alone.raw["spec"] is not first.raw["spec"] and off.pod_specs.proven_count == 0


def test_a_changed_priority_class_is_read_again_not_taken_from_the_memo() -> None:
    on, _, objects = chains(STRICT)
    objects["PriorityClass"] = classes_of({"high": (100, False, "PreemptLowerPriority")})
    spec = {"containers": [CONTAINER], "priorityClassName": "high"}
    assert on.create(pod_raw(0, dict(spec), "plain"), None).obj.priority == 100
    objects["PriorityClass"] = classes_of({"high": (1000, False, "Never")})
    second = on.create(pod_raw(1, dict(spec), "plain"), None)
    assert (second.obj.priority, second.obj.preemption_policy) == (1000, "Never")
    assert on.pod_specs.proven_count == 0


def test_a_refused_spec_is_refused_again_with_its_field() -> None:
    on, _, _ = chains(STRICT)
    bad = {"containers": [{**CONTAINER, "name": "Bad_Name"}]}
    for i in range(2):
        try:
            on.create(pod_raw(i, dict(bad), "plain"), None)
        except Invalid as e:
            assert e.field == "spec.containers[0].name"
        else:
            raise AssertionError("admitted a container name that is not a DNS label")
    assert on.pod_specs.proven_count == 0


def test_the_spec_part_names_every_slot_a_pod_parses_from_its_spec_alone() -> None:
    per_pod = {"raw", "meta", "name", "namespace", "labels", "key", "uid",
               "phase", "nominated_node_name", "conditions", "start_time", "_pod_affinity_terms"}
    assert set(_POD_SLOTS) - set(_SPEC_PART) == per_pod and isinstance(Pod.__slots__, tuple)
