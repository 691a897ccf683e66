"""`ksched bench --tcp --store etcd`: the workload through a real daemon on a local etcd."""
from __future__ import annotations

import pytest

from bench.runner import run_bench


def test_bench_over_tcp_on_etcd_schedules_every_pod_and_says_where_state_lived() -> None:
    result = run_bench("SchedulingBasic", nodes=20, pods=20, store="etcd", tcp=True)
    assert (result["scheduled"], result["store"], result["transport"]) == (20, "etcd", "tcp")


def test_bench_on_etcd_needs_tcp() -> None:
    with pytest.raises(ValueError, match="--store etcd: needs --tcp"):
        run_bench("SchedulingBasic", nodes=20, pods=20, store="etcd")
