"""Fit the speed model's factors on the measured rows and write them to data/perf.yaml.

    python -m tools.fit_perf --jobs 2     # fit, check by leaving out, write data/perf.yaml
    python -m tools.fit_perf --dry-run    # fit and print, write nothing
    python -m tools.fit_perf --no-leave-out
    python -m tools.fit_perf --leave-out leave_one_source_out
    python -m tools.fit_perf --derive-only  # only the derived stacks (like x scales), no refit
    python -m tools.fit_perf --ranges-only  # only the ranges, from the recorded refits
    python -m tools.fit_perf --rescore      # the recorded figures by the current code, no refit

The rows are every ``data/perf/*.jsonl`` whose conditions are complete (``tools.perf_rows``:
each run once), run by vLLM or SGLang (TensorRT-LLM rows are benched, not fitted: another
engine). What is fitted (``tools.perf_priors.fit_names``): the global physics (HBM and tensor
fractions) and, for each software stack (``engine.perf.stack``: an engine on a vendor's stack and
kernel path) with runs of its own, the costs its runs exercise and, for a stack derived from
another (``like``), its kernels' efficiency; a stack with no runs keeps its like's factors times
its sourced scales.

The loss is the weighted mean |log(predicted / measured)| of TPOT plus half that of TTFT (TTFT is
the noisier figure; each row's TTFT statistic, the mean or the median request's, as it measured
it), an L1 loss so that rows the model cannot describe pull the fit no more than any other row,
plus a penalty that pulls each factor toward a prior read from a source
(``tools.perf_priors``): SCALE × the sum of squared z-scores of log(value) against the priors / 2,
per term. Rows are weighed per source (``source_group``): each source's rows together weigh the
square root of their count, so that InferenceX's hundreds of runs of one model do not make the
fit theirs. SCALE, how much the priors weigh against the rows, was chosen by the leave-out checks
of the first round (of 0.2, 1.5, 4 and 10, 4 was the best balance). Factors are searched in log
space by Nelder-Mead from the priors, within bounds that each say why.

Each row is traced once at unit factors and priced again at each trial (``tools.perf_trace``), so
a trial over every row costs tens of milliseconds. The fit is checked out of sample four ways:
leaving out each architecture, each GPU, each source (InferenceX's database, blog and pull
request as one) and each vendor (refitted without them, from the priors, then scored on them
alone; ``--jobs`` refits side by side); ``fit`` in data/perf.yaml records the in-sample and
out-of-sample errors, the command and the rows it used, and ``ranges`` the held-out errors'
quantiles the speeds' ranges come from (tools/perf_ranges.py).
"""

from __future__ import annotations

import argparse
import math
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from datetime import date
from typing import Any

import numpy as np
import yaml

from engine.perf.factors import Factors, perf_facts
from engine.perf.refit import derive, nelder_mead, split_name, value_of, with_values
from engine.perf.stack import STACK_FACTORS
from engine.rules import DATA_DIR
from tools.perf_priors import BOUNDS, COST_PRIORS, GLOBAL, PRIORS, clip, fit_names, prior_of
from tools.perf_ranges import RANGE_CHECK, ranges
from tools.perf_rows import Case, architecture, cases, load_rows, median_p90, vendor_of
from tools.perf_trace import METRICS, Rows

PERF_YAML = DATA_DIR / "perf.yaml"
FITTED_ENGINES = ("vllm", "sglang")
TTFT_WEIGHT = 0.5
SCALE = 4.0  # the weight of the priors: the Laplace scale of |log error| they are weighed against
COMMAND = "python -m tools.fit_perf"
ITERS = 1200
RESTARTS = (0.5, 0.2)  # Nelder-Mead's first simplex step (log space), then a restart from its best


def source_group(c: Case) -> str:
    """A row's source as the fit weighs and leaves it out: InferenceX's benchmark database, its
    blog and its pull requests are one (one harness, one client, one set of recipes)."""
    return "InferenceX (SemiAnalysis)" if "InferenceX" in c.source else c.source


def weights(rows: Sequence[Case]) -> np.ndarray:
    """Each row's weight: 1 / sqrt(its source's rows), scaled to a mean of 1 (each source
    weighs the square root of its count)."""
    n = Counter(source_group(c) for c in rows)
    w = np.array([1.0 / math.sqrt(n[source_group(c)]) for c in rows])
    return w * len(w) / w.sum() if len(w) else w


def penalty(values: dict[str, float]) -> float:
    """Half the sum of squared z-scores of log(value) against each prior."""
    z2 = 0.0
    for name, v in values.items():
        p = prior_of(name)
        z2 += ((math.log(v) - math.log(p.value)) / p.sigma) ** 2
    return z2 / 2


def loss_of(rows: Rows, w: np.ndarray, factors: Factors, names: Sequence[str]) -> float:
    """Weighted mean |log error| (TPOT + TTFT_WEIGHT × TTFT) + SCALE × penalty / terms."""
    logs = np.abs(np.log(rows.predict(factors)[:, :2] / rows.measured[:, :2]))
    seen = ~np.isnan(logs)
    data = float(np.nansum(w * logs[:, 0]) + TTFT_WEIGHT * np.nansum(w * logs[:, 1]))
    terms = max(float((w[:, None] * seen).sum()), 1.0)
    values = {name: value_of(factors, name) for name in names}
    return data / terms + SCALE * penalty(values) / terms


def fit(rows: Rows, base: Factors, iters: int, names: Sequence[str]) -> Factors:
    """Factors minimising the loss on ``rows``, searched on log(value) from ``base``."""
    w = weights(rows.cases)

    def decode(x: list[float]) -> dict[str, float]:
        return {name: clip(name, math.exp(v)) for name, v in zip(names, x, strict=True)}

    def objective(x: list[float]) -> float:
        return loss_of(rows, w, with_values(base, decode(x)), names)

    x = [math.log(value_of(base, name)) for name in names]
    for step in RESTARTS:  # a restart from the best point with a fresh simplex
        x = nelder_mead(objective, x, step, iters // len(RESTARTS))
    return with_values(base, decode(x))


Scores = dict[str, dict[str, float]]


def scores_of(pred: np.ndarray, measured: np.ndarray) -> Scores:
    """Median and p90 |relative error| per metric (no row: only the count, 0)."""
    out: Scores = {}
    for j, metric in enumerate(METRICS):
        ok = ~np.isnan(measured[:, j])
        errs = list(np.abs(pred[ok, j] - measured[ok, j]) / measured[ok, j])
        med, p90, n = median_p90([float(e) for e in errs])
        out[metric] = (
            {"median": round(med, 3), "p90": round(p90, 3), "rows": n} if n else {"rows": 0}
        )
    return out


def scores(rows: Rows, factors: Factors) -> Scores:
    return scores_of(rows.predict(factors), rows.measured)


def gpu_name(c: Case) -> str:
    return c.gpu


LEAVE_OUT: dict[str, Callable[[Case], str]] = {
    "leave_one_model_out": architecture,
    "leave_one_gpu_out": gpu_name,
    "leave_one_source_out": source_group,
    "leave_one_vendor_out": vendor_of,
}

# the rows a fit runs on, traced once in the parent: forked workers share them
_SHARED: dict[str, Any] = {}


def _refit(args: tuple[list[int], int, list[str]]) -> dict[str, float]:
    keep, iters, names = args
    rows: Rows = _SHARED["rows"]
    fitted = fit(rows.subset(keep), _SHARED["base"], iters, names)
    return {n: _sig(value_of(fitted, n)) for n in names}


def refit_names(rows: Rows, keep: Sequence[int], names: Sequence[str]) -> list[str]:
    """``names`` less the factors no kept row exercises (a stack whose rows are all left out
    stays where its priors put it)."""
    exercised = set(fit_names([(rows.traced[i].case, rows.traced[i].stack) for i in keep]))
    return [n for n in names if n in exercised]


def leave_out(
    rows: Rows,
    base: Factors,
    key: Callable[[Case], str],
    iters: int,
    names: Sequence[str],
    jobs: int = 1,
) -> dict[str, object]:
    """Refit without each group (``jobs`` refits at once), score the group with that fit: pooled
    errors over all groups, and each group's own."""
    groups = sorted({key(c) for c in rows.cases})
    work: list[tuple[str, tuple[list[int], int, list[str]]]] = []
    for g in groups:
        keep = [i for i, c in enumerate(rows.cases) if key(c) != g]
        if keep and len(keep) < len(rows.cases):
            work.append((g, (keep, iters, refit_names(rows, keep, names))))
    _SHARED.update(rows=rows, base=base)
    if jobs > 1:
        with ProcessPoolExecutor(jobs) as pool:
            fitted = list(pool.map(_refit, [w for _, w in work]))
    else:
        fitted = [_refit(w) for _, w in work]
    refits: dict[str, dict[str, float]] = {}
    preds, meas, per_group = [], [], {}
    for (g, _), values in zip(work, fitted, strict=True):
        refits[g] = values
        held = rows.subset([i for i, c in enumerate(rows.cases) if key(c) == g])
        pred = held.predict(with_values(base, values))  # as recorded: a rescore gives these
        preds.append(pred)
        meas.append(held.measured)
        per_group[g] = scores_of(pred, held.measured)
        print(f"  left out {g}: {len(held.cases)} rows", file=sys.stderr, flush=True)
    result: dict[str, object] = {"groups": groups}
    if preds:
        result.update(scores_of(np.vstack(preds), np.vstack(meas)))
    result["per_group"] = {
        g: {m: s[m].get("median") for m in METRICS} for g, s in per_group.items()
    }
    result["factors"] = refits
    return result


def rescore(rows: Rows, base: Factors, key: Callable[[Case], str], check: dict[str, Any]) -> Scores:
    """The pooled errors of a recorded leave-out check, recomputed from the factors it recorded
    for each group (no refit): what tests compare with the recorded figures."""
    refits: dict[str, dict[str, float]] = check["factors"]
    preds, meas = [], []
    for g, values in refits.items():
        held = rows.subset([i for i, c in enumerate(rows.cases) if key(c) == g])
        preds.append(held.predict(with_values(base, values)))
        meas.append(held.measured)
    if not preds:
        return {m: {"rows": 0} for m in METRICS}
    return scores_of(np.vstack(preds), np.vstack(meas))


def fit_rows() -> list[Case]:
    used, _ = cases(load_rows())
    return [c for c in used if c.engine in FITTED_ENGINES]


def recorded_rows() -> list[Case]:
    """The rows the recorded fit was made on (``fit.row_ids``): rows added to data/perf since
    enter the next fit, and the recorded figures stay what the code computes on theirs."""
    doc = yaml.safe_load(PERF_YAML.read_text(encoding="utf-8"))
    ids = (doc.get("fit") or {}).get("row_ids")
    rows = fit_rows()
    return rows if ids is None else [c for c in rows if c.id in set(ids)]


def prior_factors() -> Factors:
    """data/perf.yaml's factors with every fitted one at its prior: where each fit starts, so
    a rerun does not depend on the values the last run wrote."""
    f = perf_facts().factors
    values = {n: p.value for n, p in PRIORS.items()}
    for stack in f.stacks:
        if stack.like is None:
            values.update(
                {
                    f"{stack.key}.{c}": COST_PRIORS[c].value
                    for c in STACK_FACTORS
                    if c != "efficiency"
                }
            )
    return derive(with_values(f, values))


def _sig(v: float) -> float:
    return float(f"{v:.3g}")


SECTIONS = (
    "factors", "kernels", "benchmark", "engines", "speculative", "routing", "ranges", "fit"
)  # fmt: skip


def _dump(doc: dict[str, Any]) -> None:
    header = PERF_YAML.read_text(encoding="utf-8").split("\nfactors:")[0]
    body = yaml.safe_dump(
        {k: doc[k] for k in SECTIONS if k in doc}, sort_keys=False, allow_unicode=True, width=100
    )
    PERF_YAML.write_text(header + "\n" + body, encoding="utf-8")


def _written(name: str, value: float, unit: str, rows: int, fitted: bool) -> dict[str, Any]:
    """One factor as data/perf.yaml keeps it: its value, and its prior's source (and the fit's)."""
    p = prior_of(name)
    lo, hi, why = BOUNDS[split_name(name)[1]]
    prior = f"prior {p.value:g} (log sigma {p.sigma:g}): {p.source}; bounds {lo:g} to {hi:g}: {why}"
    how = (
        f"fitted by tools/fit_perf.py on data/perf/*.jsonl, {rows} vLLM / SGLang runs, "
        f"{date.today().isoformat()}; "
        if fitted
        else "not fitted (no measured run exercises it): "
    )
    return {"value": _sig(value), "unit": unit, "fitted": fitted, "source": how + prior}


def written_factors(factors: Factors, names: Sequence[str], rows: int) -> dict[str, Any]:
    """The factors section as tools/fit_perf.py writes it: each fitted factor with its prior and
    source, each derived stack at its like's factors × its scales."""
    out = factors.model_dump()
    for name in GLOBAL:
        unit = getattr(factors, name).unit
        out[name] = _written(name, value_of(factors, name), unit, rows, name in names)
    fitted = {split_name(n)[0] for n in names}
    for i, stack in enumerate(factors.stacks):
        if stack.like is not None and stack.key not in fitted:
            continue
        for cost in STACK_FACTORS:
            name = f"{stack.key}.{cost}"
            if stack.like is None and cost == "efficiency":
                continue  # the global fractions are this stack's: its efficiency is 1
            unit = getattr(stack, cost).unit
            out["stacks"][i][cost] = _written(name, stack.cost(cost), unit, rows, name in names)
    return out


def write(
    factors: Factors,
    names: Sequence[str],
    report: dict[str, Any],
    section: dict[str, Any] | None,
) -> None:
    doc = yaml.safe_load(PERF_YAML.read_text(encoding="utf-8"))
    doc["factors"] = written_factors(factors, names, report["rows"])
    doc["fit"] = report
    if section is not None:
        doc["ranges"] = section
    _dump(doc)


def _args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m tools.fit_perf", description=__doc__)
    ap.add_argument("--dry-run", action="store_true", help="print, do not write data/perf.yaml")
    ap.add_argument("--no-leave-out", action="store_true", help="skip the leave-out checks")
    ap.add_argument("--iters", type=int, default=ITERS, help="Nelder-Mead iterations")
    ap.add_argument("--fix", action="append", default=[], help="NAME=VALUE: hold a factor")
    ap.add_argument("--jobs", type=int, default=1, help="leave-out refits run at once")
    ap.add_argument(
        "--leave-out", choices=sorted(LEAVE_OUT), action="append", help="only these checks"
    )
    ap.add_argument(
        "--derive-only",
        action="store_true",
        help="rewrite only the derived stacks (their like's factors x their scales), no refit",
    )
    ap.add_argument(
        "--rescore",
        action="store_true",
        help="recompute the recorded figures (in sample, each leave-out check, the ranges) with "
        "the current code from the factors and refits the last fit recorded (no refit)",
    )
    ap.add_argument(
        "--ranges-only",
        action="store_true",
        help="rewrite only the ranges, from the refits the last fit recorded (no refit)",
    )
    return ap.parse_args(argv)


def _derive_only(dry_run: bool) -> int:
    doc = yaml.safe_load(PERF_YAML.read_text(encoding="utf-8"))
    derived = derive(perf_facts().factors).model_dump()
    doc["factors"]["stacks"] = [
        new if new["like"] else old
        for new, old in zip(derived["stacks"], doc["factors"]["stacks"], strict=True)
    ]
    if not dry_run:
        _dump(doc)
    return 0


def _ranges_only(rows: Rows, dry_run: bool) -> int:
    recorded = yaml.safe_load(PERF_YAML.read_text(encoding="utf-8"))["fit"][RANGE_CHECK]
    fresh = ranges(rows, prior_factors(), recorded, LEAVE_OUT[RANGE_CHECK], COMMAND)
    print(yaml.safe_dump(fresh, sort_keys=False, width=100))
    if not dry_run:
        doc = yaml.safe_load(PERF_YAML.read_text(encoding="utf-8"))
        doc["ranges"] = fresh
        _dump(doc)
    return 0


def _rescore(dry_run: bool) -> int:
    """The recorded fit's figures recomputed by the current code: in sample at data/perf.yaml's
    factors, each check's held-out groups at the factors its refits recorded."""
    doc = yaml.safe_load(PERF_YAML.read_text(encoding="utf-8"))
    record: dict[str, Any] = doc["fit"]
    base = prior_factors()
    rows = Rows.of(recorded_rows(), base)
    record["in_sample"] = scores(rows, perf_facts().factors)
    for name, key in LEAVE_OUT.items():
        check = record.get(name)
        if not check or not check.get("factors"):
            continue
        check.update(rescore(rows, base, key, check))
        for g, values in check["factors"].items():
            held = rows.subset([i for i, c in enumerate(rows.cases) if key(c) == g])
            got = scores_of(held.predict(with_values(base, values)), held.measured)
            check["per_group"][g] = {m: got[m].get("median") for m in METRICS}
    print(yaml.safe_dump(record, sort_keys=False, width=100))
    if not dry_run:
        doc["fit"] = record
        doc["ranges"] = ranges(rows, base, record[RANGE_CHECK], LEAVE_OUT[RANGE_CHECK], COMMAND)
        _dump(doc)
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _args(argv)
    if args.derive_only:
        return _derive_only(args.dry_run)
    if args.rescore:
        return _rescore(args.dry_run)
    held = {k: float(v) for k, v in (item.split("=", 1) for item in args.fix)}
    base = with_values(prior_factors(), held)
    rows = Rows.of(fit_rows(), base)
    if args.ranges_only:
        return _ranges_only(rows, args.dry_run)
    stacks = (t.stack for t in rows.traced)
    names = [n for n in fit_names(list(zip(rows.cases, stacks, strict=True))) if n not in held]
    print(f"fitting {len(names)} factors on {len(rows.cases)} rows", file=sys.stderr, flush=True)
    fitted = fit(rows, base, args.iters, names)
    fitted = with_values(base, {n: _sig(value_of(fitted, n)) for n in names})  # as written
    print(f"loss {loss_of(rows, weights(rows.cases), fitted, names):.4f}", file=sys.stderr)
    report: dict[str, Any] = {
        "rows": len(rows.cases),
        "row_ids": sorted(c.id for c in rows.cases),
        "command": COMMAND
        + (f" --iters {args.iters}" if args.iters != ITERS else "")
        + "".join(f" --fix {k}={v:g}" for k, v in held.items()),
        "loss": (
            "weighted mean |log(pred / measured)| (each source's rows weigh sqrt(count)): TPOT + "
            f"{TTFT_WEIGHT} x TTFT, + {SCALE} x sum(z^2) / 2 / terms"
            " (z: log(value / prior) / sigma)"
        ),
        "in_sample": scores(rows, fitted),
    }
    if not args.no_leave_out:
        # each refit starts from the priors, as the main fit did: nothing of the held-out rows
        for name in args.leave_out or list(LEAVE_OUT):
            report[name] = leave_out(rows, base, LEAVE_OUT[name], args.iters, names, args.jobs)
    section = (
        ranges(rows, base, report[RANGE_CHECK], LEAVE_OUT[RANGE_CHECK], COMMAND)
        if RANGE_CHECK in report
        else None
    )
    for name in names:
        print(f"{name:44} {prior_of(name).value:>12.4g} -> {value_of(fitted, name):.4g}")
    print(yaml.safe_dump({**report, "ranges": section}, sort_keys=False, width=100))
    if not args.dry_run:
        write(fitted, names, report, section)
        print(f"wrote {PERF_YAML}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
