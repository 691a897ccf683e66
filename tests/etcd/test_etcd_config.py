"""DaemonConfiguration's etcd and leaderElection fields, and --etcd-servers."""
from __future__ import annotations

import pytest

from actors.leader_election import LeaderElectionConfig
from framework.api.errors import ValidationError
from transport.daemon.config import DaemonConfig, apply_flags, parse_config_text

HEAD = "apiVersion: ksched.io/v1alpha1\nkind: DaemonConfiguration\n"


def test_an_etcd_backend_reads_endpoints_prefix_and_upstream_leader_election_durations() -> None:
    cfg = parse_config_text(HEAD + "store: {backend: etcd}\n"
                            "etcd: {endpoints: ['127.0.0.1:2379', 'http://10.0.0.2:2379'], prefix: /k8s, maxTxnOps: 1024}\n"
                            "leaderElection: {leaseDuration: 1m30s, renewDeadline: 500ms, retryPeriod: 0.25}\n").daemon
    assert cfg.store_backend == "etcd"
    assert cfg.etcd_endpoints == ("127.0.0.1:2379", "10.0.0.2:2379")
    assert cfg.etcd_prefix == "/k8s"
    assert (cfg.etcd_max_txn_ops, cfg.etcd_max_request_bytes) == (1024, 1536 * 1024)
    assert (cfg.leader_election.lease_duration_seconds, cfg.leader_election.renew_deadline_seconds,
            cfg.leader_election.retry_period_seconds) == (90.0, 0.5, 0.25)


def test_leader_election_defaults_are_upstreams() -> None:
    assert LeaderElectionConfig() == LeaderElectionConfig(lease_duration_seconds=15, renew_deadline_seconds=10,
                                                          retry_period_seconds=2, resource_name="kube-scheduler",
                                                          resource_namespace="kube-system")
    assert DaemonConfig().leader_election == LeaderElectionConfig()


@pytest.mark.parametrize("body, field", [
    ("store: {backend: etcd}\n", "DaemonConfiguration.etcd.endpoints"),
    ("etcd: {endpoints: []}\n", "DaemonConfiguration.etcd.endpoints"),
    ("etcd: {endpoints: ['nohost']}\n", "DaemonConfiguration.etcd.endpoints[0]"),
    ("etcd: {prefix: registry}\n", "DaemonConfiguration.etcd.prefix"),
    ("etcd: {endpoint: x}\n", "DaemonConfiguration.etcd.endpoint"),
    ("etcd: {maxTxnOps: 1}\n", "DaemonConfiguration.etcd.maxTxnOps"),
    ("etcd: {caFile: /nonexistent/ca.crt}\n", "DaemonConfiguration.etcd.caFile"),
    ("leaderElection: {leaseDuration: 10s}\n", "DaemonConfiguration.leaderElection.leaseDuration"),
    ("leaderElection: {retryPeriod: soon}\n", "DaemonConfiguration.leaderElection.retryPeriod"),
    ("leaderElection: {renewDeadline: 3s, retryPeriod: 3s}\n", "DaemonConfiguration.leaderElection.renewDeadline"),
    ("leaderElection: {leaderElect: true}\n", "DaemonConfiguration.leaderElection.leaderElect"),
], ids=["etcd-without-endpoints", "empty-endpoints", "endpoint-without-port", "relative-prefix", "unknown-etcd-field", "too-few-txn-ops", "missing-ca-file",
        "lease-not-above-renew-deadline", "not-a-duration", "renew-deadline-not-above-retry", "unknown-field"])
def test_bad_etcd_and_leader_election_settings_name_the_field(body: str, field: str) -> None:
    with pytest.raises(ValidationError) as err:
        parse_config_text(HEAD + body)
    assert err.value.field == field, str(err.value)


def test_etcd_servers_flag_selects_the_etcd_backend_as_kube_apiserver_names_it() -> None:
    cfg = apply_flags(DaemonConfig(), etcd_servers="http://127.0.0.1:2379,127.0.0.1:22379")
    assert cfg.store_backend == "etcd"
    assert cfg.etcd_endpoints == ("127.0.0.1:2379", "127.0.0.1:22379")
