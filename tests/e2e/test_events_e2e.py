"""Events are stored objects, end to end (issue 21): `ksched get events` with kubectl's
columns and field selectors against a real daemon, events kept across kill -9, and a
pod created again under its name described with its new life's events only."""
from __future__ import annotations

from tests.e2e.conftest import DaemonProcess, poll
from tests.e2e.test_cli_kubectl_habits import NODE, apply, bound, pod


def _events(d: DaemonProcess, field_selector: str = "") -> list[dict]:
    """Over msgpack (the polls); the CLI's own output is checked where it matters."""
    with d.client() as c:
        return c.list("Event", "default", field_selector=field_selector)[0]


def _reasons(d: DaemonProcess, name: str) -> list[str]:
    return sorted(e["reason"] for e in _events(d, f"involvedObject.name={name}"))


def test_events_are_listed_survive_kill_9_and_a_pod_created_again_shows_only_its_new_lifes(daemon_factory):
    d = daemon_factory()
    apply(d, NODE, pod("a", "100m"), pod("big", "64"))
    poll(lambda: _reasons(d, "a") == ["Scheduled"] and _reasons(d, "big") == ["FailedScheduling"] or None,
         "the Scheduled and FailedScheduling events")
    rows = d.cli("get", "events").stdout.splitlines()
    assert rows[0].split() == ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    assert any(r.split()[1:4] == ["Normal", "Scheduled", "pod/a"] and "Successfully assigned default/a to n1" in r
               for r in rows[1:])
    assert any(r.split()[1:4] == ["Warning", "FailedScheduling", "pod/big"] for r in rows[1:])
    only_a = d.cli("get", "events", "--field-selector", "involvedObject.name=a").stdout.splitlines()[1:]
    assert [r.split()[3] for r in only_a] == ["pod/a"]
    assert d.cli("get", "events", "-A").stdout.splitlines()[0].split()[:3] == ["NAMESPACE", "LAST", "SEEN"]
    before = {e["metadata"]["name"] for e in _events(d)}

    d.kill9()
    d = daemon_factory(data_dir=d.data_dir)
    after = {e["metadata"]["name"] for e in _events(d)}
    assert before <= after  # every event listed before the kill is still there
    # big is tried again at start: the same failure folds into its stored event
    poll(lambda: [e["count"] for e in _events(d, "involvedObject.name=big")][0] >= 2 or None,
         "the repeated FailedScheduling counted on the stored event")

    with d.client() as c:
        c.delete("Pod", "a", "default")
        c.apply([pod("a", "100m")])
    poll(lambda: bound(d, "a"), "the new pod a bound")
    poll(lambda: _reasons(d, "a") == ["Scheduled", "Scheduled"] or None, "both lives' Scheduled events")
    described = d.cli("describe", "pod", "a").stdout
    events = described.split("Events:")[1]
    assert events.count("Successfully assigned default/a to n1") == 1  # the new life's only
    assert events.splitlines()[1].split() == ["TYPE", "REASON", "AGE", "FROM", "MESSAGE"]
    assert "default-scheduler" in events
