"""Failure reuse are exact: a failure reused for a pod of the same signature in the
same world equals what a fresh attempt of that pod gives, and any change of the
cluster makes a new world.

The differential runs real default plugins (DefaultPreemption's PostFilter included)
on random clusters. KSCHED_MEMO_EXAMPLES raises the number of examples."""
from __future__ import annotations

import os
import random
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from framework.algorithm import SchedulingAlgorithm
from framework.attempt_outcome import FitError
from framework.api.objects import Node, Pod
from framework.cache import Cache, Snapshot
from framework.config import build_frameworks, load_config
from framework.failure_memo import FailureMemo, KnownFailure, ProfileSigner
from framework.handle import FrameworkHandle, InMemoryObjects
from framework.interface import Code, CycleState
from framework.runtime import run_unsuspended

EXAMPLES = int(os.environ.get("KSCHED_MEMO_EXAMPLES", "25"))


def node(name: str, cpu: str, zone: str, tainted: bool) -> Node:
    spec: dict[str, Any] = {"taints": [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]} if tainted else {}
    alloc = {"cpu": cpu, "memory": "4Gi", "pods": "110"}
    return Node({"kind": "Node", "metadata": {"name": name, "labels": {"zone": zone, "kubernetes.io/hostname": name}},
                 "spec": spec, "status": {"capacity": alloc, "allocatable": alloc}})


def pod(name: str, t: dict[str, Any], node_name: str = "") -> Pod:
    requests = {"cpu": t["cpu"], "memory": "64Mi"} if t["cpu"] else {}  # "": a pod requesting nothing
    spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": requests}}],
                            "priority": t["priority"]}
    if node_name:
        spec["nodeName"] = node_name
    if t.get("tolerates"):
        spec["tolerations"] = [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}]
    if t.get("zone"):
        spec["nodeSelector"] = {"zone": t["zone"]}
    if t.get("never"):
        spec["preemptionPolicy"] = "Never"
    if t.get("anti"):
        spec["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "kubernetes.io/hostname"}]}}
    return Pod({"kind": "Pod", "metadata": {"name": name, "uid": name, "labels": {"app": t["app"]}}, "spec": spec})


templates = st.fixed_dictionaries({
    "cpu": st.sampled_from(["", "0", "500m", "1", "2", "3"]),
    "priority": st.sampled_from([0, 5, 20]),
    "app": st.sampled_from(["x", "y"]),
    "tolerates": st.booleans(),
    "zone": st.sampled_from(["", "a", "b"]),
    "never": st.booleans(),
    "anti": st.booleans(),
})
nodes_st = st.lists(st.tuples(st.sampled_from(["1", "2", "4"]), st.sampled_from(["a", "b"]), st.booleans()),
                    min_size=1, max_size=5)
# A step: ("pod", template index) schedules a pod; ("bind"/"unbind", i) changes the cluster.
steps_st = st.lists(st.tuples(st.sampled_from(["pod", "pod", "pod", "bind", "unbind", "same"]), st.integers(0, 30)),
                    min_size=2, max_size=14)


class World:
    def __init__(self, nodes: list[Node], bound: list[Pod]) -> None:
        self.cache = Cache()
        self.objects = InMemoryObjects()
        for n in nodes:
            self.cache.add_node(n)
        for p in bound:
            self.cache.add_pod(p)
        self.snapshot = Snapshot()
        self.refresh()

    def refresh(self) -> None:
        self.cache.update_snapshot(self.snapshot)

    def key(self) -> tuple[int, int, int]:
        return self.snapshot.generation, 0, self.objects.revision


def fresh_attempt(w: World, p: Pod) -> tuple[Any, ...]:
    """One attempt with new plugin instances: schedule_pod, then PostFilter on a
    FitError, as the Scheduler's cycle runs them."""
    handle = FrameworkHandle(snapshot=w.snapshot, objects=w.objects, rand=random.Random(0))
    fwk = build_frameworks(load_config(None), handle)["default-scheduler"]
    state = CycleState()
    try:
        SchedulingAlgorithm(random.Random(0)).schedule_pod(fwk, state, p, w.snapshot)
    except FitError as e:
        run = run_unsuspended(fwk.run_post_filter(state, p, e.diagnosis.node_to_status))
        if run.status.code != Code.Error:
            e.diagnosis.post_filter_msg = run.status.message()
        nominated = run.result.nominated_node_name if run.result is not None else None
        return ("failed", e, e.message(), nominated, bool(handle.evicted))
    return ("scheduled",)


def outcome_of(known: KnownFailure) -> tuple[Any, ...]:
    d = known.diagnosis
    return known.message, sorted(d.unschedulable_plugins), sorted(d.pending_plugins), known.nominated


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(nodes_st, st.lists(templates, min_size=1, max_size=3), st.lists(st.tuples(st.integers(0, 9), st.integers(0, 2)),
                                                                         max_size=8), steps_st)
def test_a_reused_failure_equals_a_fresh_attempt(node_specs, tmpls, bound_specs, steps):
    nodes = [node(f"n{i}", cpu, zone, tainted) for i, (cpu, zone, tainted) in enumerate(node_specs)]
    bound = [pod(f"b{i}", tmpls[t % len(tmpls)] | {"cpu": "500m"}, nodes[n % len(nodes)].name)
             for i, (n, t) in enumerate(bound_specs)]
    w = World(nodes, bound)
    signer = ProfileSigner(build_frameworks(load_config(None), FrameworkHandle())["default-scheduler"])
    assert signer.enabled
    memo = FailureMemo()
    stored: set[tuple[Any, Any]] = set()  # (signature, world) of every failure stored
    for i, (kind, k) in enumerate(steps):
        before = w.key()
        if kind == "bind":
            w.cache.add_pod(pod(f"x{i}", tmpls[k % len(tmpls)] | {"cpu": "500m"}, nodes[k % len(nodes)].name))
        elif kind == "unbind" and bound:
            w.cache.remove_pod(bound.pop(k % len(bound)))
        if kind != "pod":
            w.refresh()
            changed = kind == "bind" or (kind == "unbind" and w.key() != before)
            assert (w.key() != before) == changed  # a change, and only a change, makes a new world
            continue
        p = pod(f"p{i}", tmpls[k % len(tmpls)])
        signature = signer.sign(p, nominated=False)
        assert signature is not None  # every template is one the signer can sign
        known = memo.lookup(signer.profile, signature, w.key())
        # A failure stored in this world is found again, and only such a one.
        assert (known is not None) == ((signature, w.key()) in stored)
        fresh = fresh_attempt(w, p)
        if known is not None:
            assert fresh[0] == "failed"
            _, err, message, nominated, _ = fresh
            d = err.diagnosis
            assert outcome_of(known) == (message, sorted(d.unschedulable_plugins), sorted(d.pending_plugins), nominated)
            assert known.num_all_nodes == err.num_all_nodes
        elif fresh[0] == "failed" and not fresh[4] and not fresh[3]:
            _, err, message, nominated, _ = fresh
            memo.store(signer.profile, signature, w.key(), KnownFailure(err.num_all_nodes, err.diagnosis, message,
                                                                        nominated, True))
            stored.add((signature, w.key()))


def test_a_repeated_failure_is_found_and_a_changed_snapshot_drops_it():
    t = {"cpu": "3", "priority": 0, "app": "y"}
    w = World([node("n0", "2", "a", False)], [])
    signer = ProfileSigner(build_frameworks(load_config(None), FrameworkHandle())["default-scheduler"])
    memo = FailureMemo()
    first = fresh_attempt(w, pod("p1", t))
    assert first[0] == "failed"
    sig = signer.sign(pod("p1", t), nominated=False)
    memo.store(signer.profile, sig, w.key(), KnownFailure(1, first[1].diagnosis, first[2], first[3], True))
    again = signer.sign(pod("p2", t), nominated=False)
    assert again == sig  # another pod, the same signature
    w.refresh()  # nothing changed: the same world
    assert memo.lookup(signer.profile, again, w.key()) is not None
    w.cache.add_pod(pod("b", {"cpu": "500m", "priority": 0, "app": "x"}, "n0"))
    w.refresh()
    assert memo.lookup(signer.profile, again, w.key()) is None
    assert len(memo) == 0 and memo.hits == 1


def test_a_pod_signed_again_reuses_its_encoded_spec_and_every_pod_keeps_its_own_signature(monkeypatch) -> None:
    import framework.failure_memo as fm
    encoded: list[Any] = []
    real = fm._canonical
    monkeypatch.setattr(fm, "_canonical", lambda value: encoded.append(value) or real(value))
    signer = ProfileSigner(build_frameworks(load_config(None), FrameworkHandle())["default-scheduler"])
    t = {"cpu": "1", "priority": 0, "app": "x"}
    first = pod("p-first", t)
    signature = signer.sign(first, False)
    assert signer.sign(first, False) == signature and len(encoded) == 2  # its labels and spec, once
    others = [pod(f"p{i}", {**t, "cpu": str(i % 3 + 1)}) for i in range(fm._PlainParts.SIZE + 1)]
    assert [signer.sign(p, False) == signature for p in others] == [i % 3 == 0 for i in range(len(others))]
    assert signer.sign(first, False) == signature  # pushed out by the others: encoded again, the same
    assert len(encoded) == 2 * (len(others) + 2)


def test_a_pod_signed_again_asks_its_plugins_once_and_a_nominated_pod_is_still_refused() -> None:
    signer = ProfileSigner(build_frameworks(load_config(None), FrameworkHandle())["default-scheduler"])
    asked: list[str] = []
    signer.signers = [lambda p, s=s: asked.append(p.name) or s(p) for s in signer.signers]
    t = {"cpu": "1", "priority": 0, "app": "x"}
    first, twin = pod("p-first", t), pod("p-twin", t)
    signature = signer.sign(first, False)
    per_pod = len(asked)
    assert signature is not None and per_pod == len(signer.signers)
    assert signer.sign(first, False) == signature and len(asked) == per_pod  # the plugins are not asked again
    assert signer.sign(first, True) is None  # nominated: refused before any kept answer
    assert signer.sign(twin, False) == signature and len(asked) == 2 * per_pod  # another object: signed itself


class _Signing:
    """A plugin signing every pod, or (`refuses`) refusing those labelled refuse=yes;
    it counts the pods it is asked about."""

    def __init__(self, name: str, refuses: bool = False) -> None:
        self.name, self.refuses = name, refuses
        self.asked: list[str] = []

    def sign_pod(self, p: Pod, purpose: Any) -> Any:
        self.asked.append(p.name)
        return None if self.refuses and p.labels.get("refuse") == "yes" else (self.name,)


class _Profile:
    profile_name = "p"

    def __init__(self, plugins: list[Any]) -> None:
        self._plugins = plugins

    def plugins_at(self, point: str) -> list[Any]:
        return self._plugins if point == "preFilter" else []


def _labelled(name: str, refuse: bool) -> Pod:
    return Pod({"metadata": {"name": name, "namespace": "default", "uid": name,
                             "labels": {"refuse": "yes" if refuse else "no"}},
                "spec": {"containers": [{"name": "c"}]}})


def test_a_pod_refused_by_a_later_plugin_asks_it_first_next_time_and_signs_the_same() -> None:
    first, refusing, last = _Signing("First"), _Signing("Refusing", refuses=True), _Signing("Last")
    signer = ProfileSigner(_Profile([first, refusing, last]))  # type: ignore[arg-type]
    assert signer.sign(_labelled("a", refuse=True), False) is None
    assert (first.asked, refusing.asked, last.asked) == (["a"], ["a"], [])
    assert signer.sign(_labelled("b", refuse=True), False) is None
    assert (first.asked, refusing.asked) == (["a"], ["a", "b"])  # asked first, it refused at once
    signed = signer.sign(_labelled("c", refuse=False), False)
    assert first.asked == ["a", "c"] and last.asked == ["c"]
    fresh = ProfileSigner(_Profile([_Signing("First"), _Signing("Refusing", refuses=True),  # type: ignore[arg-type]
                                    _Signing("Last")]))
    assert signed is not None and fresh.sign(_labelled("c2", refuse=False), False) == signed


def test_signers_of_one_profile_for_one_purpose_ask_its_plugins_once_for_a_pod_and_other_purposes_ask_again() -> None:
    from framework.interface import SignPurpose
    plugin = _Signing("Only")
    profile = _Profile([plugin])
    queue_side, scheduler_side = ProfileSigner(profile), ProfileSigner(profile)  # type: ignore[arg-type]
    p = _labelled("a", refuse=False)
    signature = queue_side.sign(p, False)
    assert scheduler_side.sign(p, False) == signature and plugin.asked == ["a"]  # the first signer's answer
    placement = ProfileSigner(profile, points=("preFilter",), purpose=SignPurpose.PLACEMENT)  # type: ignore[arg-type]
    assert placement.sign(p, False) is not None and plugin.asked == ["a", "a"]  # its own memo
    other = ProfileSigner(_Profile([plugin]))  # type: ignore[arg-type]
    assert other.sign(p, False) == signature and plugin.asked == ["a", "a", "a"]  # another profile object


def test_pods_sharing_one_spec_object_encode_it_once_and_sign_alike(monkeypatch) -> None:
    import framework.failure_memo as fm
    encoded: list[Any] = []
    real = fm._canonical
    monkeypatch.setattr(fm, "_canonical", lambda value: encoded.append(value) or real(value))
    signer = ProfileSigner(build_frameworks(load_config(None), FrameworkHandle())["default-scheduler"])
    spec = {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}  # one template's spec
    pods = [Pod({"kind": "Pod", "metadata": {"name": f"p{i}", "uid": f"p{i}", "labels": {"app": "x"}}, "spec": spec})
            for i in range(3)]
    signatures = {signer.sign(p, False) for p in pods}
    assert len(signatures) == 1 and None not in signatures
    assert sum(1 for v in encoded if v is spec) == 1 and len(encoded) == 4  # the spec once, each pod's labels
    copy = Pod({"kind": "Pod", "metadata": {"name": "c", "uid": "c", "labels": {"app": "x"}},
                "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}})
    assert signer.sign(copy, False) in signatures and len(encoded) == 6  # an equal spec object: encoded, equal
