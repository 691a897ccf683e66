"""`ksched serve` configuration: both documents, flags over file, errors naming the field."""
from __future__ import annotations

import argparse
import os
import re
import threading
from pathlib import Path

import pytest

from framework.api.errors import ValidationError
from transport.cli.serve import serve_main
from transport.daemon.serve import load_serve_config
from transport.daemon.config import Address, DaemonConfig, apply_flags, parse_address, parse_config_text

ROOT = Path(__file__).resolve().parents[2]
DAEMON_HEAD = "apiVersion: ksched.io/v1alpha1\nkind: DaemonConfiguration\n"


def serve_args(**kw: object) -> argparse.Namespace:
    base = dict(config=None, listen=None, http=None, data_dir=None, token_file=None, log_level=None)
    base.update(kw)
    return argparse.Namespace(**base)


def test_no_config_gives_the_documented_defaults():
    sched, cfg = load_serve_config(serve_args())
    assert cfg == DaemonConfig()
    assert (str(cfg.listen), str(cfg.http), str(cfg.data_dir)) == ("127.0.0.1:7777", "127.0.0.1:10251", ".ksched")
    assert [p.scheduler_name for p in sched.profiles] == ["default-scheduler"]


def test_the_shipped_default_yaml_equals_no_config_at_all():
    sched, cfg = load_serve_config(serve_args(config=str(ROOT / "configs" / "default.yaml")))
    assert cfg == DaemonConfig()
    assert (sched.pod_initial_backoff_seconds, sched.pod_max_backoff_seconds) == (1, 10)


def test_an_upstream_kube_scheduler_configuration_alone_is_accepted_unchanged():
    text = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
podMaxBackoffSeconds: 20
profiles:
  - schedulerName: default-scheduler
  - schedulerName: batch
"""
    serve = parse_config_text(text)
    assert serve.daemon == DaemonConfig()
    assert serve.scheduler is not None and serve.scheduler["podMaxBackoffSeconds"] == 20


def test_both_documents_are_read_and_flags_win_over_the_file():
    text = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
---
""" + DAEMON_HEAD + """listen: 0.0.0.0:9000
http: ""
dataDir: /var/lib/ksched
maxFrameBytes: 2048
store: {backend: memory, synchronous: NORMAL}
"""
    cfg = parse_config_text(text).daemon
    assert (cfg.listen, cfg.http, cfg.data_dir, cfg.max_frame_bytes) == (Address("0.0.0.0", 9000), None,
                                                                         Path("/var/lib/ksched"), 2048)
    assert (cfg.store_backend, cfg.store_synchronous) == ("memory", "NORMAL")
    flagged = apply_flags(cfg, listen="127.0.0.1:1234", data_dir="d")
    assert (str(flagged.listen), flagged.data_dir, flagged.max_frame_bytes) == ("127.0.0.1:1234", Path("d"), 2048)


@pytest.mark.parametrize("body, message", [
    pytest.param("listen: nope\n", "DaemonConfiguration.listen: must be HOST:PORT", id="listen-no-port"),
    pytest.param("listen: 'h:99999'\n", "DaemonConfiguration.listen: port must be between 0 and 65535", id="listen-port"),
    pytest.param("http: 'h:x'\n", "DaemonConfiguration.http: port must be an integer", id="http-port"),
    pytest.param("maxFrameBytes: big\n", "DaemonConfiguration.maxFrameBytes: must be an integer", id="frame-type"),
    pytest.param("maxFrameBytes: 10\n", "DaemonConfiguration.maxFrameBytes: must be between", id="frame-range"),
    pytest.param("shutdownGracePeriodSeconds: -1\n", "DaemonConfiguration.shutdownGracePeriodSeconds: must be greater",
                 id="grace"),
    pytest.param("dataDir: 5\n", "DaemonConfiguration.dataDir: must be a path string", id="data-dir"),
    pytest.param("store: {synchronous: SOMETIMES}\n", "DaemonConfiguration.store.synchronous: must be one of",
                 id="synchronous"),
    pytest.param("store: {backend: postgres}\n", "DaemonConfiguration.store.backend: must be one of", id="backend"),
    pytest.param("store: {size: 1}\n", "DaemonConfiguration.store.size: unknown field", id="store-field"),
    pytest.param("tls: {certFile: a.crt}\n", "DaemonConfiguration.tls: certFile and keyFile", id="tls-half"),
    pytest.param("tls: {certFile: a, keyFile: b, caFile: 3}\n", "DaemonConfiguration.tls.caFile: must be a path",
                 id="tls-ca"),
    pytest.param("tls: {certFile: a, keyFile: b, ca: c}\n", "DaemonConfiguration.tls.ca: unknown field; known "
                 "fields: caFile, certFile, keyFile", id="tls-typo"),
    pytest.param("logLevel: LOUD\n", "DaemonConfiguration.logLevel: must be one of", id="log-level"),
    pytest.param("lisen: 1.2.3.4:5\n", "DaemonConfiguration.lisen: unknown field", id="typo"),
])
def test_a_bad_daemon_field_is_rejected_naming_it(body, message):
    with pytest.raises(ValidationError) as err:
        parse_config_text(DAEMON_HEAD + body)
    assert str(err.value).startswith(message)


@pytest.mark.parametrize("text, message", [
    pytest.param("apiVersion: ksched.io/v2\nkind: DaemonConfiguration\n", "DaemonConfiguration.apiVersion: must be",
                 id="api-version"),
    pytest.param("kind: Deployment\n", "config[0].kind: must be KubeSchedulerConfiguration or DaemonConfiguration",
                 id="other-kind"),
    pytest.param("- a\n", "config[0]: document must be a mapping", id="list"),
    pytest.param(DAEMON_HEAD + "---\n" + DAEMON_HEAD, "config[1].kind: DaemonConfiguration appears twice", id="twice"),
    pytest.param("a: [", "config: not valid YAML", id="yaml"),
])
def test_a_bad_document_is_rejected_naming_where(text, message):
    with pytest.raises(ValidationError) as err:
        parse_config_text(text)
    assert str(err.value).startswith(message)


def test_tls_ca_file_is_what_the_kubeconfig_names():
    cfg = parse_config_text(DAEMON_HEAD + "tls: {certFile: s.crt, keyFile: s.key, caFile: ca.crt}\n").daemon
    assert (cfg.tls_cert_file, cfg.tls_ca_file) == (Path("s.crt"), Path("ca.crt"))
    assert parse_config_text(DAEMON_HEAD + "tls: {certFile: s.crt, keyFile: s.key}\n").daemon.tls_ca_file is None


def test_an_unreadable_token_file_names_the_field(tmp_path):
    cfg = DaemonConfig(token_file=tmp_path / "missing")
    with pytest.raises(ValidationError, match="^tokenFile: cannot read"):
        cfg.read_token()
    (tmp_path / "empty").write_text("\n")
    (tmp_path / "empty").chmod(0o600)
    with pytest.raises(ValidationError, match="is empty"):
        DaemonConfig(token_file=tmp_path / "empty").read_token()


def test_ipv6_addresses_keep_their_brackets_when_printed():
    a = parse_address("[::1]:7777", "listen")
    assert (a.host, a.port, str(a)) == ("::1", 7777, "[::1]:7777")


@pytest.mark.parametrize("config, message", [
    pytest.param(DAEMON_HEAD + "listen: nope\n", "DaemonConfiguration.listen", id="daemon-field"),
    pytest.param("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
                 "profiles:\n  - schedulerName: s\n    plugins:\n      filter:\n        enabled:\n"
                 "          - name: NoSuchPlugin\n", "NoSuchPlugin", id="unknown-plugin"),
])
def test_serve_exits_2_with_an_error_naming_the_field(tmp_path, capsys, config, message):
    path = tmp_path / "ksched.yaml"
    path.write_text(config)
    assert serve_main(serve_args(config=str(path))) == 2
    err = capsys.readouterr().err
    assert err.startswith("ksched serve: error:") and message in err


def test_serve_with_a_missing_config_file_exits_2_naming_the_flag(tmp_path, capsys):
    assert serve_main(serve_args(config=str(tmp_path / "nope.yaml"))) == 2
    assert "--config: cannot read" in capsys.readouterr().err


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604])
def test_a_token_file_others_can_read_is_refused_as_ssh_refuses_a_key(tmp_path, mode):
    token = tmp_path / "token"
    token.write_text("sixteen-bytes-ok\n")
    token.chmod(mode)
    with pytest.raises(ValidationError, match=rf"^tokenFile: permissions {mode:04o} for .* are too open"):
        DaemonConfig(token_file=token).read_token()
    token.chmod(0o600)
    assert DaemonConfig(token_file=token).read_token() == "sixteen-bytes-ok"


def test_a_token_shorter_than_16_bytes_is_refused_saying_so(tmp_path):
    token = tmp_path / "token"
    token.write_text("x\n")
    token.chmod(0o600)
    with pytest.raises(ValidationError, match=r"^tokenFile: .*: the token is 1 bytes; at least 16 are required"):
        DaemonConfig(token_file=token).read_token()
    token.write_text("fifteen-bytes-x\n")
    with pytest.raises(ValidationError, match="the token is 15 bytes"):
        DaemonConfig(token_file=token).read_token()


def test_a_fifo_or_a_directory_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo, 0o600)  # no writer: a blocking open would wait forever
    outcome: list[BaseException] = []

    def read() -> None:
        try:
            DaemonConfig(token_file=fifo).read_token()
        except BaseException as exc:  # noqa: BLE001 - handed to the test's thread
            outcome.append(exc)

    reader = threading.Thread(target=read, daemon=True)  # a daemon thread: a hang cannot block the run's exit
    reader.start()
    reader.join(timeout=60)  # a hang guard, not a speed threshold
    assert outcome, "reading a FIFO token file blocked"
    assert isinstance(outcome[0], ValidationError)
    assert re.match(r"^tokenFile: .*fifo: not a regular file \(a FIFO\)", str(outcome[0]))
    (tmp_path / "dir").mkdir(mode=0o700)
    with pytest.raises(ValidationError, match=r"not a regular file \(a directory\)"):
        DaemonConfig(token_file=tmp_path / "dir").read_token()


@pytest.mark.skipif(os.geteuid() != 0, reason="making a file another user owns needs root")
def test_a_token_file_owned_by_another_user_is_refused_naming_both_uids(tmp_path):
    token = tmp_path / "token"
    token.write_text("sixteen-bytes-ok\n")
    token.chmod(0o600)
    os.chown(token, 65534, 65534)
    with pytest.raises(ValidationError, match=r"owned by uid 65534, not by the daemon's user \(uid 0\)"):
        DaemonConfig(token_file=token).read_token()


def test_a_token_file_that_is_not_utf8_is_refused(tmp_path):
    token = tmp_path / "token"
    token.write_bytes(b"\xff" * 20)
    token.chmod(0o600)
    with pytest.raises(ValidationError, match="not UTF-8 text"):
        DaemonConfig(token_file=token).read_token()


def test_limits_are_read_from_the_daemon_configuration_and_checked_by_name():
    cfg = parse_config_text("apiVersion: ksched.io/v1alpha1\nkind: DaemonConfiguration\nmaxFrameBytes: 2048\n"
                            "limits: {maxConnections: 10, idleTimeoutSeconds: 0, maxObjectBytes: 4096}\n").daemon
    assert (cfg.server_limits.max_connections, cfg.server_limits.idle_timeout) == (10, 0.0)
    assert (cfg.server_limits.max_frame_bytes, cfg.server_limits.max_hello_bytes) == (2048, 2048)
    assert cfg.store_limits.max_object_bytes == 4096
    for text, message in [
        ("limits: {maxConections: 1}", "DaemonConfiguration.limits.maxConections: unknown field"),
        ("limits: {maxConnections: 0}", "DaemonConfiguration.limits.maxConnections: must be greater than or equal to 1"),
        ("limits: {maxEvents: ten}", "DaemonConfiguration.limits.maxEvents: must be an integer"),
        ("maxFrameBytes: 4096\nlimits: {maxHelloBytes: 9000}", "DaemonConfiguration.limits.maxHelloBytes: must not be above maxFrameBytes"),
    ]:
        with pytest.raises(ValidationError) as err:
            parse_config_text(f"apiVersion: ksched.io/v1alpha1\nkind: DaemonConfiguration\n{text}\n")
        assert str(err.value).startswith(message)


def test_http_and_auth_throttle_limits_are_read_checked_and_flags_win():
    cfg = parse_config_text(DAEMON_HEAD + "limits: {maxHttpConnections: 5, httpIdleTimeoutSeconds: 2.5, "
                            "authFailureBurst: 3, authFailuresPerSecond: 0.5, maxAuthFailureAddresses: 7}\n").daemon
    assert (cfg.http_limits.max_connections, cfg.http_limits.idle_timeout) == (5, 2.5)
    assert (cfg.auth_throttle.burst, cfg.auth_throttle.per_second, cfg.auth_throttle.max_addresses) == (3, 0.5, 7)
    flagged = apply_flags(cfg, max_http_connections=9, http_idle_timeout=1)
    assert (flagged.http_limits.max_connections, flagged.http_limits.idle_timeout) == (9, 1.0)
    for text, message in [
        ("limits: {maxHttpConnections: 0}", "DaemonConfiguration.limits.maxHttpConnections: must be greater than"),
        ("limits: {httpIdleTimeoutSeconds: 0}", "DaemonConfiguration.limits.httpIdleTimeoutSeconds: must be greater"),
        ("limits: {authFailureBurst: many}", "DaemonConfiguration.limits.authFailureBurst: must be an integer"),
    ]:
        with pytest.raises(ValidationError) as err:
            parse_config_text(DAEMON_HEAD + text + "\n")
        assert str(err.value).startswith(message)
    with pytest.raises(ValidationError, match="^--http-idle-timeout: must be greater than 0"):
        apply_flags(cfg, http_idle_timeout=0)


@pytest.mark.parametrize("text, seconds", [("1h", 3600.0), ("1h0m0s", 3600.0), ("30m", 1800.0), ("90s", 90.0),
                                           ("1.5h", 5400.0), ("500ms", 0.5), ("120", 120.0)])
def test_event_ttl_flag_takes_a_go_duration_or_seconds_over_the_file(text, seconds):
    from transport.daemon.config import DaemonConfig, apply_flags

    assert apply_flags(DaemonConfig(), event_ttl=text).store_limits.event_ttl_seconds == seconds


@pytest.mark.parametrize("text", ["0", "-5m", "1d", "soon", "1h30", ""])
def test_a_bad_event_ttl_is_refused_naming_the_flag(text):
    from framework.api.errors import ValidationError
    from transport.daemon.config import DaemonConfig, apply_flags

    with pytest.raises(ValidationError) as e:
        apply_flags(DaemonConfig(), event_ttl=text)
    assert e.value.field == "--event-ttl"
def test_the_watch_backlog_bound_comes_from_limits_or_the_serve_flag():
    cfg = parse_config_text("apiVersion: ksched.io/v1alpha1\nkind: DaemonConfiguration\n"
                            "limits: {maxWatchBacklogBytes: 2048}\n").daemon
    assert cfg.server_limits.max_watch_backlog_bytes == 2048
    assert DaemonConfig().server_limits.max_watch_backlog_bytes == 64 * 1024 * 1024
    assert apply_flags(cfg, max_watch_backlog_bytes=4096).server_limits.max_watch_backlog_bytes == 4096
    with pytest.raises(ValidationError, match="--max-watch-backlog-bytes"):
        apply_flags(cfg, max_watch_backlog_bytes=10)


def test_the_bulk_apply_share_is_read_from_the_limits_and_at_most_the_fair_half():
    cfg = parse_config_text(DAEMON_HEAD + "limits: {bulkApplyObjects: 1000, bulkApplySchedulerShare: 0.25}\n").daemon
    assert (cfg.store_limits.bulk_apply_objects, cfg.store_limits.bulk_apply_scheduler_share) == (1000, 0.25)
    for text, message in [
        ("limits: {bulkApplySchedulerShare: 0.6}", "DaemonConfiguration.limits.bulkApplySchedulerShare: must be less "
                                                   "than or equal to 0.5"),
        ("limits: {bulkApplySchedulerShare: -1}", "DaemonConfiguration.limits.bulkApplySchedulerShare: must be greater"),
        ("limits: {bulkApplyObjects: 0}", "DaemonConfiguration.limits.bulkApplyObjects: must be greater"),
    ]:
        with pytest.raises(ValidationError) as err:
            parse_config_text(DAEMON_HEAD + text + "\n")
        assert str(err.value).startswith(message)


def test_kueues_wait_for_pods_ready_defaults_are_kueue_configuration_v1beta2s():
    from transport.daemon.kueue_config import parse_kueue

    # On unless turned off, with Kueue's default timeout of 30 minutes (apis/config/v1beta2/defaults.go).
    assert parse_kueue(None).pods_ready_timeout_seconds == 1800.0
    assert parse_kueue({"waitForPodsReady": {}}).pods_ready_timeout_seconds == 1800.0
    assert parse_kueue({"waitForPodsReady": {"timeout": "5m"}}).pods_ready_timeout_seconds == 300.0
    assert parse_kueue({"waitForPodsReady": {"enable": False}}).pods_ready_timeout_seconds is None
    assert (parse_kueue(None).backoff_base_seconds, parse_kueue(None).backoff_max_seconds) == (60.0, 3600.0)
