"""Kueue's admission layer (kueue.x-k8s.io/v1beta2), pure: objects and validation,
the quota tree, flavor assignment, the admission cycle, classic, hierarchical and
fair-sharing preemption, Workload conditions. No I/O; actors/admission/ drives it.
"""
