"""The measured rows traced once, predicted at any factors in microseconds: what the fit asks
thousands of times (tools/fit_perf.py).

Each row's copy is built once at unit factors (``engine.perf.pricing``: every pass the scheduler
asks for, with each term's bytes, FLOPs and fixed multiples), and its closed loop is run again at
each trial's prices: the same figures ``tools.perf_rows.predict`` gives (the tests check they
agree), without building a single term again. The rows' measurements and weights are arrays, so
the loss is a few numpy operations over every row.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from engine.engines.memory import Split
from engine.perf.estimate import copy_model, scheduler
from engine.perf.factors import Factors, perf_facts
from engine.perf.opmodel import CopyModel
from engine.perf.pricing import Pricing, unit_factors
from engine.perf.scheduler import Load, Scheduler
from tools.perf_rows import NODE_GPUS, Case, admitted, case_inputs, runs_as

METRICS = ("tpot", "ttft", "tps_per_gpu")


@dataclass(frozen=True)
class Traced:
    """One row's copy traced at unit factors, the scheduler and load it runs at, and the
    software stack it runs on."""

    case: Case
    model: CopyModel
    scheduler: Scheduler
    load: Load
    stack: str
    gpus: int


def trace(c: Case, base: Factors) -> Traced:
    inp = case_inputs(c)
    split = Split(c.tp, c.dp, c.pp, c.ep)
    engine = runs_as(c.engine, c.adapter)
    model = copy_model(
        inp, split, c.run_isl, c.run_osl, gpus_per_node=NODE_GPUS, factors=unit_factors(base),
        engine_version=c.engine_version, runs_as=engine, eager=c.eager, aiter=c.aiter,
    )  # fmt: skip
    waves = c.prompts_per_client or perf_facts().benchmark.prompts_per_client
    load = Load(c.concurrency, c.run_osl, waves, admitted(c), c.recv_interval)
    sched = scheduler(inp, split, engine)
    sched.closed_loop(model.costs(), load)  # every pass it asks for, built once
    return Traced(c, model, sched, load, model.stack.key, split.gpus)


def figures(t: Traced, pricing: Pricing) -> tuple[float, float, float]:
    """TPOT (ms), TTFT (ms, the row's statistic) and output tokens/s per GPU at ``pricing``."""
    line = t.scheduler.closed_loop(t.model.priced(pricing).costs(), t.load)
    ttft = line.median_ttft if t.case.ttft_median else line.ttft
    return line.tpot * 1e3, ttft * 1e3, line.per_copy / t.gpus


@dataclass(frozen=True)
class Rows:
    """Traced rows with their measurements as arrays (NaN where a row measured nothing)."""

    traced: tuple[Traced, ...]
    measured: np.ndarray  # rows x metrics

    @classmethod
    def of(cls, cases: Sequence[Case], base: Factors) -> Rows:
        traced = tuple(trace(c, base) for c in cases)
        measured = np.array(
            [[c.tpot_ms or math.nan, c.ttft_ms or math.nan, c.tps_per_gpu or math.nan]
             for c in cases],
            dtype=float,
        ).reshape(len(cases), len(METRICS))  # fmt: skip
        return cls(traced, measured)

    def subset(self, keep: Sequence[int]) -> Rows:
        return Rows(tuple(self.traced[i] for i in keep), self.measured[list(keep)])

    @property
    def cases(self) -> list[Case]:
        return [t.case for t in self.traced]

    def predict(self, f: Factors) -> np.ndarray:
        """Every row's figures at ``f`` (rows x metrics)."""
        prices = {s.key: Pricing.of(f, s) for s in f.stacks}
        out = np.empty((len(self.traced), len(METRICS)))
        for i, t in enumerate(self.traced):
            out[i] = figures(t, prices[t.stack])
        return out
