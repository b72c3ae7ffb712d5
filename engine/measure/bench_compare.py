"""The user's benchmark read against the plan it tested: each run beside the speed model's
prediction for that load, checked as physics, the software stack's factors refitted on the runs
("calibrated on your benchmark"), and the Study searched again with them.

The runs are predicted on the plan that was benchmarked: the Study's pick for the engine that
wrote the results (pinned to that layout when the scenario's engine is the other one, as the
bench command's plan for that engine is). A measured figure more than ``physics_factor`` from
its prediction on the catalog's GPU (data/bench.yaml results) is no serving measurement: a unit
slip, a corrupted or a forged file, refused by name. The refit (``engine.perf.user_fit``) starts
from data/perf.yaml's factors; the calibration it gives is held by digest and applied to that
engine's speeds only (``Scenario.bench_calibration``); the layouts are then ranked again.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from engine.decision import Code, Decimal, Name
from engine.engines import Engine
from engine.errors import InputError
from engine.measure.bench_data import bench_facts, tool_for
from engine.measure.bench_result import FIELD, BenchRun
from engine.perf import stack_calibration
from engine.perf.factors import perf_facts
from engine.perf.stack_calibration import StackCalibration
from engine.perf.user_fit import BenchPoint, StackFit, Target, figures, fit_stack, predict
from engine.study import Study, study
from engine.text.words import say

PHYSICS = Code("error.bench.physics", "file", "line", "key", "value", "predicted", "factor")
MIXED = Code("error.bench.mixed_tools")
NO_PLAN = Code("error.bench.no_plan", "engine")

# the result files' keys behind each figure (both tools' writers use the same names)
KEYS = ("mean_ttft_ms", "mean_tpot_ms", "output_throughput")


@dataclass(frozen=True)
class Row:
    """One run with the speed model's figures for it: TTFT (ms), TPOT (ms) and output
    tokens/s per GPU, as the Study predicts them and as the refit does."""

    run: BenchRun
    point: BenchPoint
    predicted: tuple[float, float, float]
    calibrated: tuple[float, float, float]


@dataclass(frozen=True)
class Comparison:
    engine: Engine
    planned: Study  # the plan that was benchmarked
    target: Target
    rows: tuple[Row, ...]
    fit: StackFit
    calibration: StackCalibration
    digest: str
    calibrated: Study  # the scenario searched again with the calibration


def _engine(runs: Sequence[BenchRun]) -> Engine:
    tools = {r.tool for r in runs}
    if len(tools) != 1:
        raise InputError(
            FIELD,
            "result files of one tool: vllm bench serve or sglang.bench_serving, not both",
            expects=MIXED(),
        )
    return tool_for(next(iter(tools)))


def planned(st: Study, engine: Engine) -> Study:
    """The Study whose pick is the plan ``engine`` runs for ``st``: ``st`` itself for its own
    engine, else the other engine pinned to ``st``'s layout."""
    if engine == st.scenario.engine:
        return st
    lay = st.layout
    s = st.scenario.replace(
        engine=engine, tp=lay.split.tp, dp=lay.split.dp, pp=lay.split.pp, ep=lay.split.ep,
        replicas=lay.replicas,
    )  # fmt: skip
    return study(s)


def target_of(st: Study) -> Target:
    """One endpoint of the Study's plan, as the bench command drives it."""
    inp, plan = st.search_inputs, st.plan
    if inp is None or plan is None:
        engine = st.scenario.engine
        raise InputError(
            FIELD, f"a plan of {engine} for this scenario", expects=NO_PLAN(engine=Name(engine))
        )
    servers = max(1, sum(1 for c in plan.commands if c.port is not None))
    lay = st.layout
    return Target(
        inp, lay.split, lay.replicas, servers, inp.speculative, st.scenario.gpus_per_node,
        inp.calibration,
    )  # fmt: skip


def _check(run: BenchRun, measured: tuple[float, float, float], pred: tuple[float, ...]) -> None:
    """Each measured figure within the physics factor of its prediction."""
    factor = bench_facts().results.physics_factor
    for key, got, want in zip(KEYS, measured, pred, strict=True):
        if abs(math.log(got / want)) > math.log(factor):
            raise InputError(
                FIELD,
                f"{key} within {factor:g}x of the speed model's {want:.4g} for that run on this "
                f"GPU; {run.file} line {run.line} says {got:.4g}",
                expects=PHYSICS(
                    file=Name(run.file[:120]), line=run.line, key=Name(key),
                    value=Decimal(got, 4), predicted=Decimal(want, 4), factor=Decimal(factor, 0),
                ),
            )  # fmt: skip


def _calibration(st: Study, rows: Sequence[Row], fit: StackFit) -> StackCalibration:
    plan = st.plan
    assert plan is not None
    tools = sorted({r.run.tool for r in rows})
    return StackCalibration(
        engine=plan.engine,
        engine_version=plan.engine_version,
        gpu=st.gpu.key,
        model=st.model.name[:200] or "?",
        layout=say(st.layout.name())[:200],
        runs=len(rows),
        factors=fit.values,
        error_before=fit.error_before,
        error_after=fit.error_after,
        how=(
            f"bench-compare: {len(rows)} runs ({', '.join(tools)}); refitted "
            f"{', '.join(fit.values) or 'nothing'}; held {', '.join(fit.held) or 'nothing'}; "
            f"{fit.evaluations} evaluations"
        )[:2000],
    )


def compare(st: Study, runs: Sequence[BenchRun]) -> Comparison:
    """``runs`` against the plan they tested, the refit on them and the Study searched again
    with it (raises InputError naming the file, the line and the key of a bad run)."""
    engine = _engine(runs)
    plan_st = planned(st, engine)
    target = target_of(plan_st)
    shown = plan_st.search_inputs.factors if plan_st.search_inputs else None
    points = [r.point(target.gpus) for r in runs]
    predicted = [figures(predict(target, p, shown)) for p in points]
    for run, p, pred in zip(runs, points, predicted, strict=True):
        _check(run, (p.ttft_ms, p.tpot_ms, p.tokens_per_s_per_gpu), pred)
    fit = fit_stack(target, points, perf_facts().factors)
    rows = tuple(
        Row(run, p, pred, figures(predict(target, p, fit.factors)))
        for run, p, pred in zip(runs, points, predicted, strict=True)
    )
    cal = _calibration(plan_st, rows, fit)
    digest = stack_calibration.put(cal)
    again = study(st.scenario.replace(engine=engine, bench_calibration=digest))
    return Comparison(engine, plan_st, target, rows, fit, cal, digest, again)
