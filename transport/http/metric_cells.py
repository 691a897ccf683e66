"""Metric families kept as plain Python state and collected for prometheus_client.

prometheus_client's Counter, Gauge and Histogram take a lock per value, look a
child up through labels() per call, and Histogram.observe walks its buckets in
Python. The scheduler records a few of these per pod on the event loop, so its
metrics (transport.http.metrics.SchedulerMetrics) keep their own state instead:
per label set a histogram cell (a count per bucket, found with bisect, and the
sum), a counter value or a gauge value, in a dict in the order the label sets
first appeared. Each family is a Collector registered in the daemon's registry
in its place, and collect() yields what prometheus_client's own object would:
the same family name, HELP, TYPE, samples (_bucket with cumulative counts and
its `le` string, then _count and _sum; counters' _total), label sets in the same
order, values as floats. So GET /metrics and registry.get_sample_value are the
same byte for byte (tests/transport/test_metric_cells.py checks that).

No locks: every recorder runs on the daemon's event loop (transport.http.metrics
says which actor calls what), and collection runs there too (the /metrics handler).
"""
from __future__ import annotations

from bisect import bisect_left
from typing import Iterable, Sequence

from prometheus_client import CollectorRegistry
from prometheus_client.metrics_core import Metric
from prometheus_client.utils import INF, floatToGoString

LabelValues = tuple[str, ...]


class HistogramCell:
    """One label set's histogram: observations per bucket (not cumulative), their sum."""

    __slots__ = ("bounds", "counts", "sum")

    def __init__(self, bounds: list[float]) -> None:
        self.bounds = bounds
        self.counts = [0] * len(bounds)
        self.sum = 0.0

    def observe(self, value: float) -> None:
        """prometheus_client's Histogram.observe: the first bucket whose bound is >= value
        (bisect_left), the value added to the sum; NaN lands in no bucket."""
        self.sum += value
        if value == value:
            self.counts[bisect_left(self.bounds, value)] += 1


class _Family:
    """What every family shares: its name, HELP, label names, registration."""

    kind = ""

    def __init__(self, registry: CollectorRegistry | None, name: str, documentation: str,
                 labelnames: Sequence[str] = ()) -> None:
        self.name = name
        self.documentation = documentation
        self.labelnames = tuple(labelnames)
        if registry is not None:
            registry.register(self)

    def describe(self) -> Iterable[Metric]:
        return [Metric(self.name, self.documentation, self.kind)]

    def _labels(self, values: LabelValues) -> dict[str, str]:
        return dict(zip(self.labelnames, values))


class CounterFamily(_Family):
    """A counter family: values by label values (name given without _total)."""

    kind = "counter"

    def __init__(self, registry: CollectorRegistry | None, name: str, documentation: str,
                 labelnames: Sequence[str] = ()) -> None:
        super().__init__(registry, name.removesuffix("_total"), documentation, labelnames)
        self.values: dict[LabelValues, float] = {} if self.labelnames else {(): 0}

    def inc(self, labelvalues: LabelValues = (), amount: float = 1) -> None:
        values = self.values
        values[labelvalues] = values.get(labelvalues, 0) + amount

    def collect(self) -> Iterable[Metric]:
        metric = Metric(self.name, self.documentation, self.kind)
        total = self.name + "_total"
        for labelvalues, value in list(self.values.items()):
            metric.add_sample(total, self._labels(labelvalues), float(value))
        return [metric]


class GaugeFamily(_Family):
    """A gauge family: the last value set, by label values."""

    kind = "gauge"

    def __init__(self, registry: CollectorRegistry | None, name: str, documentation: str,
                 labelnames: Sequence[str] = ()) -> None:
        super().__init__(registry, name, documentation, labelnames)
        self.values: dict[LabelValues, float] = {} if self.labelnames else {(): 0}

    def set(self, labelvalues: LabelValues, value: float) -> None:
        self.values[labelvalues] = value

    def collect(self) -> Iterable[Metric]:
        metric = Metric(self.name, self.documentation, self.kind)
        for labelvalues, value in list(self.values.items()):
            metric.add_sample(self.name, self._labels(labelvalues), float(value))
        return [metric]


class HistogramFamily(_Family):
    """A histogram family: a HistogramCell per label set, all on the same bounds
    (the buckets given, +Inf appended as prometheus_client appends it)."""

    kind = "histogram"

    def __init__(self, registry: CollectorRegistry | None, name: str, documentation: str,
                 labelnames: Sequence[str] = (), *, buckets: Sequence[float]) -> None:
        bounds = [float(b) for b in buckets]
        if bounds != sorted(bounds):
            raise ValueError(f"{name}: buckets not in sorted order")
        if not bounds or bounds[-1] != INF:
            bounds.append(INF)
        self.bounds = bounds
        self._le = [floatToGoString(b) for b in bounds]
        self.cells: dict[LabelValues, HistogramCell] = {}
        super().__init__(registry, name, documentation, labelnames)
        if not self.labelnames:
            self.cells[()] = HistogramCell(bounds)

    def cell(self, labelvalues: LabelValues = ()) -> HistogramCell:
        """The label set's cell, made on first use (as labels() makes a child)."""
        cell = self.cells.get(labelvalues)
        if cell is None:
            cell = self.cells[labelvalues] = HistogramCell(self.bounds)
        return cell

    def observe(self, labelvalues: LabelValues, value: float) -> None:
        self.cell(labelvalues).observe(value)

    def collect(self) -> Iterable[Metric]:
        metric = Metric(self.name, self.documentation, self.kind)
        bucket, count, total = self.name + "_bucket", self.name + "_count", self.name + "_sum"
        with_sum = self.bounds[0] >= 0
        for labelvalues, cell in list(self.cells.items()):
            labels = self._labels(labelvalues)
            acc = 0.0
            for le, n in zip(self._le, cell.counts):
                acc += n
                metric.add_sample(bucket, {**labels, "le": le}, acc)
            metric.add_sample(count, dict(labels), acc)
            if with_sum:
                metric.add_sample(total, dict(labels), cell.sum)
        return [metric]
