"""bench/slurm: only what needs no Slurm — the generated slurm.conf and sdiag's figures."""
from __future__ import annotations

from pathlib import Path

from bench.slurm import SHAPES, format_rows, sdiag_seconds
from bench.slurm_cluster import slurm_conf

SDIAG = """Main schedule statistics (microseconds):
\tLast cycle:   178
\tMax cycle:    178
\tTotal cycles: 2
\tMean cycle:   104
Backfilling stats
\tTotal backfilled jobs (since last slurm start): 0
\tTotal cycles: 3
\tLast cycle: 232836
\tMax cycle:  232836
\tMean cycle: 200000
"""


def test_slurm_conf_emulates_every_node_on_loopback_ports_in_the_temp_dir() -> None:
    root = Path("/tmp/ksched-slurm-x")
    text = slurm_conf(root, nodes=100, cpus=4, ctld_port=30000, slurmd_base=30001, munge_socket=root / "m.sock")
    lines = text.splitlines()
    assert ("NodeName=n[1-100] NodeHostName=localhost NodeAddr=127.0.0.1 Port=[30001-30100] CPUs=4 "
            "RealMemory=32768 State=UNKNOWN") in lines
    assert "SlurmdParameters=config_overrides" in lines
    assert "SlurmctldHost=localhost(127.0.0.1)" in lines and "SlurmctldPort=30000" in lines
    assert f"AuthInfo=socket={root}/m.sock" in lines
    for key in ("StateSaveLocation", "SlurmdSpoolDir", "SlurmctldPidFile", "SlurmdPidFile", "SlurmctldLogFile",
                "SlurmdLogFile"):
        value = next(x for x in lines if x.startswith(key + "=")).split("=", 1)[1]
        assert value.startswith(str(root)), key
    sched = next(x for x in lines if x.startswith("SchedulerParameters="))
    assert "sched_min_interval" not in sched  # its default; 0 is not a valid value
    assert "%n" in next(x for x in lines if x.startswith("SlurmdSpoolDir="))  # one spool per slurmd


def test_sdiag_gives_main_and_backfill_seconds_as_cycles_times_mean() -> None:
    assert sdiag_seconds(SDIAG) == {"main_s": 0.0, "backfill_s": 0.6, "main_cycles": 2, "backfill_cycles": 3}
    assert sdiag_seconds("Main schedule statistics (microseconds):\n\tTotal cycles: 0\n") == {
        "main_s": 0.0, "backfill_s": 0.0, "main_cycles": 0, "backfill_cycles": 0}


def test_the_table_sets_both_systems_side_by_side_for_each_shape() -> None:
    k = {"elapsed_s": 0.5, "pods_per_s": 800.0, "attempts_per_pod": 1.0, "transport": "tcp"}
    s = {"wall_s": 1.8, "jobs_per_s": 222.2, "main_s": 0.0, "backfill_s": 0.7, "main_cycles": 1, "backfill_cycles": 1}
    rows = format_rows([{"shape": "jobs400", "what": SHAPES["jobs400"].what, "ksched": k, "slurm": s}]).splitlines()
    assert rows[2] == ("| 400 one-CPU jobs, 100 nodes x 4 CPU | 0.5 | 800.0 pods/s, tcp | 1.0 | 1.8 | 222.2 jobs/s | "
                       "0.0 + 0.7 (1 + 1 cycles) |")
