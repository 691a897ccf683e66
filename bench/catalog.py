"""The names `ksched bench` offers, light enough to import for the command line's parser."""
from __future__ import annotations

from bench.dra_workloads import DRA_WORKLOADS
from bench.workloads import WORKLOADS as BASE_WORKLOADS

WORKLOADS = {**BASE_WORKLOADS, **DRA_WORKLOADS}  # scheduler_perf's DRA workloads in their own module
STORES = ("sqlite", "memory", "etcd")  # etcd: --tcp only (a local etcd under the daemon)
# Gang workloads run their own driver (bench/gang.py): they report groups per
# second and time to full placement beside the per-pod figures.
GANG_WORKLOADS = ("Gang", "GangContended", "GangWorkload", "GangTopology")
DEFAULT_GANG_SIZE = 3  # members per group when --gang-size is not given (GANG_SIZES has the others)
