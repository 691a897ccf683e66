"""A Pod's scheduling_group is read once per parse into a slot (the gang plugins, the
handle's index and the queue read it about a dozen times a member): held against
upstream's reading of spec.schedulingGroup.podGroupName over random specs, for the
parsed pod, a pod sharing its parsed spec and the scheduler's and store's copies."""
from collections.abc import Mapping

from hypothesis import given, settings, strategies as st

from framework.api.pod import Pod, share_parsed_spec


def reference(spec: dict) -> str:
    group = spec.get("schedulingGroup")
    if group is None:
        return ""
    name = group.get("podGroupName") if isinstance(group, Mapping) else None
    return name if isinstance(name, str) else ""


groups = st.one_of(
    st.none(), st.just("not-a-map"), st.integers(),
    st.fixed_dictionaries({}, optional={"podGroupName": st.one_of(st.text(max_size=6), st.integers(), st.none())}))


def raw_pod(group: object, name: str = "p") -> dict:
    spec: dict = {"containers": [{"name": "c", "image": "i"}]}
    if group is not None:
        spec["schedulingGroup"] = group
    return {"metadata": {"name": name, "namespace": "ns", "uid": name}, "spec": spec}


def test_it_is_a_slot_read_once_per_parse():
    assert "scheduling_group" in Pod.__slots__
    assert not isinstance(getattr(Pod, "scheduling_group"), property)


@settings(max_examples=200, deadline=None)
@given(group=groups, other=groups)
def test_matches_the_spec_for_every_copy(group, other):
    raw = raw_pod(group)
    want = reference(raw["spec"])
    p = Pod(raw)
    assert p.scheduling_group == want
    assert p.with_node_name("n1").scheduling_group == want
    bound = {**p.raw, "spec": {**p.spec, "nodeName": "n1"}, "status": {"phase": "Running"}}
    assert p.with_status_written(bound).scheduling_group == want
    assert p.with_server_fields(bound).scheduling_group == want
    # A pod parsed with the same spec object takes its parsed part from `p`.
    share_parsed_spec(p)
    assert Pod({"metadata": {"name": "q", "namespace": "ns"}, "spec": p.spec}).scheduling_group == want
    # A reread whose spec says otherwise reads it again (the copy shares nothing stale).
    changed = {**p.raw, "spec": raw_pod(other)["spec"]}
    assert p.with_server_fields(changed).scheduling_group == reference(changed["spec"])
