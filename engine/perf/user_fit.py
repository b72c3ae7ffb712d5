"""The software stack's factors refitted on one deployment's own benchmark results.

A benchmark run (``BenchPoint``: its concurrency, prompt and output tokens, and what it measured)
is predicted the way the Study predicts that load (``spread`` over the layout's copies), and the
stack's fitted factors are refitted so the predictions meet the measurements: the factors that
``data/perf.yaml`` marks ``fitted`` and that the results move, each pulled toward its global
value and held within a bound of it, searched by Nelder-Mead in log space with a fixed budget of
predictions (``data/bench.yaml`` fit). Which factors those are is read from the ``Factors``
object, never listed here: a new fitted factor is refitted with the others.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache

from pydantic import Field

from engine.engines.memory import Split
from engine.perf.calibration import Calibration
from engine.perf.estimate import Speculative, Speed, spread
from engine.perf.factors import Factors
from engine.perf.refit import fitted_names, nelder_mead, unit_of, value_of, with_values
from engine.perf.shape import PerfInputs
from engine.rules import Strict, load_data


class FitFacts(Strict):
    """``data/bench.yaml`` fit: the priors, bounds, weights and budget of the refit."""

    prior_log_sigma: float = Field(gt=0)
    bound_factor: float = Field(gt=1)
    sensitivity: float = Field(gt=0, lt=1)
    ttft_weight: float = Field(ge=0)
    tps_weight: float = Field(ge=0)
    prior_weight: float = Field(ge=0)
    max_evaluations: int = Field(ge=10, le=100_000)
    source: str = Field(min_length=1)


@cache
def fit_facts() -> FitFacts:
    return load_data(FitFacts, "bench.yaml", "fit")


@dataclass(frozen=True)
class BenchPoint:
    """One benchmark run: ``concurrency`` clients each sending ``prompts_per_client`` requests of
    ``isl`` prompt and ``osl`` output tokens (the run's means), and the run's mean TTFT and TPOT
    and output tokens per second per GPU of the endpoint."""

    concurrency: int
    isl: int
    osl: int
    prompts_per_client: float
    ttft_ms: float
    tpot_ms: float
    tokens_per_s_per_gpu: float


@dataclass(frozen=True)
class Target:
    """What a benchmark drives: one API endpoint of a layout of ``replicas`` copies cut as
    ``split``, served by ``servers`` endpoints alike. A run of c clients on one endpoint is
    predicted as c × ``servers`` requests over the whole layout: every endpoint with the same
    load, so the per-request figures and the tokens/s per GPU are the endpoint's."""

    inp: PerfInputs
    split: Split
    replicas: int
    servers: int
    speculative: Speculative | None = None
    gpus_per_node: int | None = None
    calibration: Calibration | None = None

    @property
    def gpus(self) -> int:
        """The GPUs behind one endpoint."""
        return max(1, self.split.gpus * self.replicas // self.servers)


def predict(target: Target, point: BenchPoint, factors: Factors | None = None) -> Speed:
    """The speed model's figures for ``point`` on ``target`` (``factors``: None for
    data/perf.yaml's)."""
    return spread(
        target.inp,
        target.split,
        target.replicas,
        point.concurrency * target.servers,
        point.isl,
        point.osl,
        target.speculative,
        gpus_per_node=target.gpus_per_node,
        calibration=target.calibration,
        factors=factors,
        prompts_per_client=point.prompts_per_client,
    )


def figures(speed: Speed) -> tuple[float, float, float]:
    """TTFT (ms), TPOT (ms) and output tokens/s per GPU: what a run measures."""
    return speed.ttft_ms, speed.tpot_ms, speed.output_tokens_per_s_per_gpu


def measured(point: BenchPoint) -> tuple[float, float, float]:
    return point.ttft_ms, point.tpot_ms, point.tokens_per_s_per_gpu


def stack_key(target: Target) -> str:
    """The software stack the target runs on (``engine.perf.stack``): its engine on its GPU's
    vendor."""
    return f"{target.inp.engine}/{target.inp.gpu.vendor}"


def bounds(base: Factors, name: str) -> tuple[float, float]:
    """Where ``name`` may go: within the bound factor of its global value, and a share (unit
    1) never above the whole."""
    value = value_of(base, name)
    k = fit_facts().bound_factor
    high = value * k
    return value / k, min(high, 1.0) if unit_of(base, name) == "1" else high


def _relative_errors(target: Target, points: Sequence[BenchPoint], f: Factors) -> list[float]:
    out: list[float] = []
    for p in points:
        for got, want in zip(figures(predict(target, p, f)), measured(p), strict=True):
            out.append(abs(got - want) / want)
    return out


def _moved(target: Target, points: Sequence[BenchPoint], base: Factors, name: str) -> bool:
    """Does doubling ``name`` change any prediction by the sensitivity or more?"""
    value = value_of(base, name)
    doubled = with_values(base, {name: value * 2})
    limit = math.log1p(fit_facts().sensitivity)
    for p in points:
        before = figures(predict(target, p, base))
        after = figures(predict(target, p, doubled))
        if any(abs(math.log(a / b)) >= limit for a, b in zip(after, before, strict=True)):
            return True
    return False


@dataclass(frozen=True)
class StackFit:
    """The refit: the new values of the factors the results move, the fitted factors they do
    not move (kept at their global values), the predictions spent, and the median error over
    every figure before and after."""

    values: dict[str, float]
    held: tuple[str, ...]
    evaluations: int
    error_before: float
    error_after: float
    factors: Factors


class _Budget:
    """The loss with a hard budget: past ``most`` evaluations it answers +inf without
    predicting, so the search stops improving and ends within its iterations."""

    def __init__(self, fn: Callable[[list[float]], float], most: int) -> None:
        self.fn, self.most, self.used = fn, most, 0

    def __call__(self, x: list[float]) -> float:
        if self.used >= self.most:
            return math.inf
        self.used += 1
        return self.fn(x)


class _Loss:
    """Mean weighted |log(predicted / measured)| over the runs' figures, plus the priors' pull:
    ``prior_weight`` × the sum of squared z-scores of log(value / global value) / 2 / terms."""

    def __init__(
        self, target: Target, points: Sequence[BenchPoint], base: Factors, names: Sequence[str]
    ) -> None:
        facts = fit_facts()
        self.target, self.points, self.base, self.names = target, points, base, names
        self.weights = (facts.ttft_weight, 1.0, facts.tps_weight)
        self.terms = len(points) * sum(1 for w in self.weights if w > 0)
        self.sigma, self.prior_weight = facts.prior_log_sigma, facts.prior_weight

    def decode(self, x: Sequence[float]) -> dict[str, float]:
        """Log values to values, each held within its bounds."""
        out = {}
        for name, v in zip(self.names, x, strict=True):
            low, high = bounds(self.base, name)
            out[name] = min(max(math.exp(v), low), high)
        return out

    def __call__(self, x: list[float]) -> float:
        values = self.decode(x)
        f = with_values(self.base, values)
        total = 0.0
        for p in self.points:
            pairs = zip(self.weights, figures(predict(self.target, p, f)), measured(p), strict=True)
            total += sum(w * abs(math.log(got / want)) for w, got, want in pairs)
        z2 = sum(
            ((math.log(v) - math.log(value_of(self.base, n))) / self.sigma) ** 2
            for n, v in values.items()
        )
        return total / self.terms + self.prior_weight * z2 / 2 / self.terms


def fit_stack(target: Target, points: Sequence[BenchPoint], base: Factors) -> StackFit:
    """``base`` refitted on ``points``: every fitted factor the points move, from its value in
    ``base``, within its bounds, with at most the fit's budget of evaluations."""
    mine = fitted_names(base, stack_key(target))
    names = [n for n in mine if _moved(target, points, base, n)]
    held = tuple(n for n in mine if n not in names)
    before = statistics.median(_relative_errors(target, points, base))
    if not names or not points:
        return StackFit({}, held, 0, before, before, base)
    loss = _Loss(target, points, base, names)
    budget = _Budget(loss, fit_facts().max_evaluations)
    x = [math.log(value_of(base, n)) for n in names]
    for step in (0.5, 0.2):  # a restart from the best point with a fresh simplex
        x = nelder_mead(budget, x, step, budget.most)
    values = {n: float(f"{v:.4g}") for n, v in loss.decode(x).items()}
    fitted = with_values(base, values, "fitted on your benchmark")
    after = statistics.median(_relative_errors(target, points, fitted))
    return StackFit(values, held, budget.used, before, after, fitted)
