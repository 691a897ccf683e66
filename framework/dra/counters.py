"""Shared counters while the allocator searches (DRAPartitionableDevices).

A device that consumes counters fits only while, in its pool, no counter of any counter
set is consumed beyond what the pool publishes: the devices already allocated (in the
slices the pool was read from) count first, then the devices taken so far in this search.
As upstream, the tally is kept per pool name."""
from __future__ import annotations

from fractions import Fraction
from typing import AbstractSet, Any, Mapping

from framework.api.quantity import parse_quantity_text
from framework.dra.pools import Pool

_Tally = dict[str, dict[str, Fraction]]  # counter set -> counter -> amount


def _consumption(device: Mapping[str, Any]) -> list[tuple[str, str, Fraction]]:
    return [(c.get("counterSet", ""), name, parse_quantity_text(str((v or {}).get("value", "0"))))
            for c in device.get("consumesCounters") or [] for name, v in (c.get("counters") or {}).items()]


class CounterTally:
    def __init__(self, allocated: AbstractSet[str]) -> None:
        self._allocated = allocated
        self._available: dict[str, _Tally] = {}
        self._consumed: dict[str, _Tally] = {}

    def _available_in(self, pool: Pool) -> _Tally:
        available = self._available.get(pool.name)
        if available is None:
            available = {name: dict(counters) for name, counters in pool.counter_sets.items()}
            for s in pool.targeting + pool.not_targeting:
                spec = s.get("spec") or {}
                for d in spec.get("devices") or []:
                    if f"{spec.get('driver', '')}/{pool.name}/{d.get('name', '')}" not in self._allocated:
                        continue
                    for counter_set, name, amount in _consumption(d):
                        counters = available.get(counter_set)
                        if counters is not None and name in counters:
                            counters[name] -= amount
            self._available[pool.name] = available
        return available

    def take(self, pool: Pool, device: Mapping[str, Any]) -> bool:
        """Counts the device's consumption in; False (and nothing counted) when that
        would consume more of some counter than the pool has left."""
        available = self._available_in(pool)
        consumed = self._consumed.setdefault(pool.name, {})
        for counter_set, name, amount in _consumption(device):
            counters = consumed.setdefault(counter_set, {})
            counters[name] = counters.get(name, Fraction(0)) + amount
        for counter_set, counters in available.items():
            used = consumed.get(counter_set, {})
            if any(amount < used.get(name, Fraction(0)) for name, amount in counters.items()):
                self.give_back(pool, device)
                return False
        return True

    def give_back(self, pool: Pool, device: Mapping[str, Any]) -> None:
        consumed = self._consumed[pool.name]
        for counter_set, name, amount in _consumption(device):
            consumed[counter_set][name] -= amount
