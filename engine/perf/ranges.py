"""How sure a speed figure is: a range from the model's own out-of-sample errors.

``tools/fit_perf.py`` refits the factors leaving out each source of measured runs and predicts
that source's runs with the refit: the signed error log(predicted / measured) of every such
held-out run, per metric, is what the model misses by on runs it never saw. Its low and high
quantiles (``data/perf.yaml`` ranges: the 10th and 90th percentiles) per engine and vendor
stack (CUDA on NVIDIA, ROCm on AMD) turn a figure into the range the measurement likely falls
in: measured = predicted / exp(error), so a model that runs 20 % fast on a group (error +0.18)
puts its range above its figure. A group with fewer held-out runs than ``min_rows`` takes its
engine's runs on every vendor stack, and one still too small takes every run (``pooled``
names what it took). Two speeds whose ranges overlap on a metric cannot be told apart by the
model (``speeds_overlap``).
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import Field, model_validator

from engine.rules import Strict

Metric = Literal["ttft", "tpot", "tps_per_gpu"]
METRICS: tuple[Metric, ...] = ("ttft", "tpot", "tps_per_gpu")
Pooled = Literal["own", "engine", "all"]


class Quantiles(Strict):
    """The low and high quantile of log(predicted / measured) over held-out runs."""

    low: float
    high: float

    @model_validator(mode="after")
    def _ordered(self) -> Quantiles:
        if self.low > self.high:
            raise ValueError(f"low {self.low} above high {self.high}")
        return self


class ErrorBand(Strict):
    """One engine on one vendor stack: its held-out errors' quantiles per metric."""

    engine: str = Field(min_length=1)
    vendor: Literal["nvidia", "amd"]
    rows: int = Field(ge=0)  # held-out runs the quantiles were taken over
    pooled: Pooled  # own: this group's runs; engine: its engine on every vendor; all: every run
    ttft: Quantiles
    tpot: Quantiles
    tps_per_gpu: Quantiles

    def around(self, metric: Metric, value: float) -> tuple[float, float]:
        """The range ``value`` (a prediction of ``metric``) likely holds the measurement in,
        stretched to hold ``value`` itself: where every held-out error of a group has one sign
        (a stack the model runs fast on), the quantiles alone would put the figure outside its
        own range."""
        q: Quantiles = getattr(self, metric)
        low, high = value * math.exp(-q.high), value * math.exp(-q.low)
        return min(low, value), max(high, value)


class Ranges(Strict):
    """``data/perf.yaml`` ranges, written by tools/fit_perf.py."""

    quantiles: tuple[float, float]  # e.g. (0.1, 0.9): the share of held-out runs below each
    min_rows: int = Field(ge=1)
    check: str = Field(min_length=1)  # the leave-out check the errors come from
    pooling: str = Field(min_length=1)  # the rule, in words, for the record
    command: str = Field(min_length=1)
    date: str = Field(min_length=1)
    bands: tuple[ErrorBand, ...] = Field(min_length=1)

    def band(self, engine: str, vendor: str) -> ErrorBand:
        """The band of ``engine`` on ``vendor``; an engine the fit never saw takes the band
        pooled over every run."""
        for b in self.bands:
            if b.engine == engine and b.vendor == vendor:
                return b
        return max(self.bands, key=lambda b: (b.pooled == "all", b.rows))


def overlap(a: tuple[float, float], b: tuple[float, float]) -> bool:
    """Whether two [low, high] ranges share a point."""
    return a[0] <= b[1] and b[0] <= a[1]
