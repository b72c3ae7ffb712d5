"""Fit the speed model's factors on the measured rows and write them to data/perf.yaml.

    python -m tools.fit_perf              # fit, check by leaving out, write data/perf.yaml
    python -m tools.fit_perf --jobs 2     # the leave-out refits two at a time
    python -m tools.fit_perf --dry-run    # fit and print, write nothing
    python -m tools.fit_perf --no-leave-out
    python -m tools.fit_perf --derive-only  # only the derived stacks (like x scales), no refit
    python -m tools.fit_perf --ranges-only  # only the ranges, from the recorded refits

The rows are every ``data/perf/*.jsonl`` whose conditions are complete (``tools.perf_rows``:
each run once), run by vLLM or SGLang (TensorRT-LLM rows are benched, not fitted: another
engine). What is fitted: the global physics (HBM and tensor fractions) and, for each software
stack (``engine.perf.stack``: an engine on a vendor's stack) with runs of its own, the costs its
runs exercise (``fit_names``); a stack with none keeps its like's costs times its scales.
The loss is the mean |log(predicted / measured)| of TPOT
plus half that of TTFT (TTFT is the noisier figure), an L1 loss so that rows the model cannot
describe pull the fit no more than any other row, plus a penalty that pulls each factor toward
a prior read from a source (``PRIORS``): SCALE × the sum of squared z-scores of log(value)
against the priors / 2, per term. A factor the rows barely constrain (a fixed cost hidden under
a larger one, a fraction that trades against another) then stays where its source puts it
instead of running to a bound. SCALE, how much the priors weigh against the rows, was chosen by
the leave-out checks below: of 0.2, 1.5, 4 and 10 (median error leaving out each architecture:
TTFT 52, 38, 37, 35 %, TPOT 19, 16, 15, 16 %; each GPU: TTFT 52, 46, 34, 35 %, TPOT 14, 10, 11,
12 %), 4 is the best balance; weaker priors fit the rows in sample and miss out of it.
Factors are searched in log space by Nelder-Mead from the priors, within bounds that each say
why (``BOUNDS``).

Afterwards the fit is checked out of sample four ways: leaving out each architecture, each
GPU, each source and each vendor of rows (refitted without them, from the priors, then scored on
them alone); ``fit`` in data/perf.yaml records the in-sample and out-of-sample errors, the
command and the rows it used, and ``ranges`` the held-out errors' quantiles the speeds' ranges
come from. On 79 rows a full run takes ~10 minutes on one core; each refit's time grows with the
rows and the stacks they exercise.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from datetime import date
from typing import Any

import yaml

from engine.hardware.gpus import lookup_gpu
from engine.perf.factors import Factors, perf_facts
from engine.perf.refit import derive, nelder_mead, split_name, value_of, with_values
from engine.perf.stack import STACK_COSTS
from engine.rules import DATA_DIR
from tools.perf_rows import (
    Case,
    architecture,
    cases,
    load_rows,
    median_p90,
    predict,
    row_prefill_mode,
    vendor_of,
)

PERF_YAML = DATA_DIR / "perf.yaml"
FITTED_ENGINES = ("vllm", "sglang")
TTFT_WEIGHT = 0.5
SCALE = 4.0  # the weight of the priors: the Laplace scale of |log error| they are weighed against
COMMAND = "python -m tools.fit_perf"
ITERS = 1200


@dataclass(frozen=True)
class Prior:
    """Where a factor starts and is pulled: ``value`` from ``source``, ``sigma`` the spread of
    log(value) the source leaves (wide where it is only an order of magnitude)."""

    value: float
    sigma: float
    source: str


PRIORS: dict[str, Prior] = {
    "hbm_fraction": Prior(
        0.8,
        0.15,
        "aiconfigurator systems/*.yaml mem_bw_empirical_scaling_factor 0.8 ('nonofficial "
        "correction based on observations')",
    ),
    "tensor_fraction": Prior(
        0.75,
        0.35,
        "stas00/ml-engineering compute/accelerator: the rate is a share of the GPU's Maximum "
        "Achievable Matmul FLOPS (data/gpus.yaml matmul: the best shape's rate, 80.3 % of the "
        "BF16 peak on H100 SXM); serving GEMMs are smaller than the best shape and 'around 50 % "
        "MFU is considered a win' (0.62 of an H100's MAMF): 0.75 between them",
    ),
}

# the software stacks' costs (engine.perf.stack), each stack with measured runs pulled toward these
COST_PRIORS: dict[str, Prior] = {
    "kernel_seconds": Prior(
        3e-6,
        0.7,
        "one kernel of a replayed CUDA graph: its launch gap and a tiny kernel's own floor, a few "
        "us (aiconfigurator mem_empirical_constant_latency: 3 us per memory op; a graph replay "
        "costs ~0.58 us per node of submission, ahrefs/ocannl issue #488)",
    ),
    "eager_kernel_seconds": Prior(
        1e-4,
        0.7,
        "[order of magnitude] one fused kernel's worth of eager PyTorch: several unfused ops, "
        "each Python, the dispatcher and a launch (~6.4 us per individual CUDA launch + sync, "
        "ahrefs/ocannl issue #488)",
    ),
    "prefill_kernel_seconds": Prior(
        6.7e-5,
        0.5,
        "aiconfigurator vllm_backend._prefill_dispatch_overhead_ms: 0.8 ms x num_layers "
        "('calibrated against the full silicon corpus (947 vLLM agg entries)') over ~12 kernels "
        "per layer (data/perf.yaml kernels)",
    ),
    "step_seconds": Prior(
        1e-3,
        1.5,
        "[order of magnitude] one scheduler pass, sampler and output processing per step",
    ),
    "request_step_seconds": Prior(
        2e-5,
        1.5,
        "[order of magnitude] per running request per step: its sampling and bookkeeping",
    ),
    "request_seconds": Prior(
        1e-2,
        1.5,
        "[order of magnitude] tokenize, admit, sample and detokenize one request, once",
    ),
    "collective_latency_seconds": Prior(
        1e-5,
        0.7,
        "aiconfigurator systems/h800_sxm.yaml p2p_latency 0.00001 (10 us)",
    ),
}

# name -> (lower, upper, why)
BOUNDS: dict[str, tuple[float, float, str]] = {
    "hbm_fraction": (0.3, 1.0, "a share of the datasheet's bandwidth"),
    "tensor_fraction": (0.1, 1.0, "a share of the GPU's measured matmul ceiling"),
    "kernel_seconds": (3e-7, 3e-5, "a graph-replayed kernel: 0.3 us to 30 us"),
    "eager_kernel_seconds": (3e-6, 1e-3, "a host-launched kernel: a launch (3 us) to 1 ms"),
    "prefill_kernel_seconds": (1e-7, 1e-3, "a compiled prefill's dispatch per kernel: to 1 ms"),
    "step_seconds": (1e-5, 0.02, "a scheduler pass: above 10 us, below a 20 ms stall"),
    "request_step_seconds": (1e-8, 2e-4, "below a decode step's own floor per request"),
    "request_seconds": (1e-4, 0.3, "a request's fixed cost: 0.1 ms to 300 ms"),
    "collective_latency_seconds": (1e-6, 1e-4, "NVLink / PCIe hop: 1 us to 100 us"),
}
GLOBAL = ("hbm_fraction", "tensor_fraction")


def prior_of(name: str) -> Prior:
    """A factor's prior: a global one's, a stack cost's, or for a stack derived from a like
    (an AMD row fitted once it has runs of its own) the like's prior times its scale."""
    key, cost = split_name(name)
    if key is None:
        return PRIORS[cost]
    p = COST_PRIORS[cost]
    stack = next((s for s in perf_facts().factors.stacks if s.key == key), None)
    scale = stack.scales.get(cost) if stack is not None else None
    if scale is None:
        return p
    return Prior(p.value * scale.value, p.sigma, f"{p.source}; x {scale.value:g}: {scale.source}")


def _clip(name: str, v: float) -> float:
    lo, hi, _ = BOUNDS[split_name(name)[1]]
    return min(max(v, lo), hi)


def fit_names(rows: Sequence[Case]) -> list[str]:
    """The factors the rows constrain: the global ones, and each cost of a stack its rows
    exercise (a compiled prefill's dispatch only where a row prefills compiled, an eager one
    only where a row prefills eagerly)."""
    names = list(GLOBAL)
    used: dict[str, set[str]] = {}
    for c in rows:
        key = f"{c.adapter}/{lookup_gpu(c.gpu).vendor}"
        mode = row_prefill_mode(c)
        used.setdefault(key, set()).add(
            "eager_kernel_seconds" if mode == "eager" else "prefill_kernel_seconds"
        )
    for key in sorted(used):
        always = [
            c for c in STACK_COSTS if c not in ("eager_kernel_seconds", "prefill_kernel_seconds")
        ]
        names += [f"{key}.{c}" for c in STACK_COSTS if c in always or c in used[key]]
    return names


def data_loss(rows: Sequence[Case], factors: Factors) -> tuple[float, int]:
    """Sum of |log(pred / measured)| (TTFT weighted ``TTFT_WEIGHT``) and the number of terms."""
    total = 0.0
    n = 0
    for c in rows:
        s = predict(c, factors)
        if c.tpot_ms:
            total += abs(math.log(s.tpot_ms / c.tpot_ms))
            n += 1
        if c.ttft_ms:
            total += TTFT_WEIGHT * abs(math.log(s.ttft_ms / c.ttft_ms))
            n += 1
    return total, n


def penalty(values: dict[str, float]) -> float:
    """Half the sum of squared z-scores of log(value) against each prior."""
    z2 = 0.0
    for name, v in values.items():
        p = prior_of(name)
        z2 += ((math.log(v) - math.log(p.value)) / p.sigma) ** 2
    return z2 / 2


def loss(rows: Sequence[Case], factors: Factors, names: Sequence[str]) -> float:
    """Mean |log error| + SCALE × penalty / terms: SCALE × the negative log posterior per term."""
    total, n = data_loss(rows, factors)
    n = max(n, 1)
    values = {name: value_of(factors, name) for name in names}
    return total / n + SCALE * penalty(values) / n


def fit(rows: Sequence[Case], base: Factors, iters: int, names: Sequence[str]) -> Factors:
    """Factors minimising ``loss`` on ``rows``, searched on log(value) from the priors."""

    def decode(x: list[float]) -> dict[str, float]:
        return {name: _clip(name, math.exp(v)) for name, v in zip(names, x, strict=True)}

    x = [math.log(value_of(base, name)) for name in names]
    for step in (0.5, 0.2):  # a restart from the best point with a fresh simplex
        x = nelder_mead(
            lambda v: loss(rows, with_values(base, decode(v)), names), x, step, iters // 2
        )
    return with_values(base, decode(x))


Scores = dict[str, dict[str, float]]


def _score(pairs: Sequence[tuple[Case, Factors]]) -> Scores:
    errs: dict[str, list[float]] = {"tpot": [], "ttft": [], "tps_per_gpu": []}
    for c, f in pairs:
        s = predict(c, f)
        if c.tpot_ms:
            errs["tpot"].append(abs(s.tpot_ms - c.tpot_ms) / c.tpot_ms)
        if c.ttft_ms:
            errs["ttft"].append(abs(s.ttft_ms - c.ttft_ms) / c.ttft_ms)
        if c.tps_per_gpu:
            errs["tps_per_gpu"].append(
                abs(s.output_tokens_per_s_per_gpu - c.tps_per_gpu) / c.tps_per_gpu
            )
    out: Scores = {}
    for k, v in errs.items():
        med, p90, n = median_p90(v)
        # no held-out row (a vendor left out while every row is that vendor's): nothing to say
        out[k] = {"median": round(med, 3), "p90": round(p90, 3), "rows": n} if n else {"rows": 0}
    return out


def scores(rows: Sequence[Case], factors: Factors) -> Scores:
    return _score([(c, factors) for c in rows])


def source_name(c: Case) -> str:
    return c.source


def gpu_name(c: Case) -> str:
    return c.gpu


LEAVE_OUT: dict[str, Callable[[Case], str]] = {
    "leave_one_model_out": architecture,
    "leave_one_gpu_out": gpu_name,
    "leave_one_source_out": source_name,
    "leave_one_vendor_out": vendor_of,
}


def _refit(args: tuple[list[Case], Factors, int, list[str]]) -> dict[str, float]:
    train, base, iters, names = args
    fitted = fit(train, base, iters, names)
    return {n: _sig(value_of(fitted, n)) for n in names}


def leave_out(
    rows: Sequence[Case],
    base: Factors,
    key: Callable[[Case], str],
    iters: int,
    names: Sequence[str],
    jobs: int = 1,
) -> dict[str, object]:
    """Refit without each group (``jobs`` refits at once), score the group with that fit: pooled
    errors over all groups, and each group's own."""
    groups = sorted({key(c) for c in rows})
    work = []
    for g in groups:
        train = [c for c in rows if key(c) != g]
        if train and len(train) < len(rows):
            work.append((g, (train, base, iters, list(names))))
    if jobs > 1:
        with ProcessPoolExecutor(jobs) as pool:
            fitted = list(pool.map(_refit, [w for _, w in work]))
    else:
        fitted = [_refit(w) for _, w in work]
    held: list[tuple[Case, Factors]] = []
    per_group: dict[str, Scores] = {}
    refits: dict[str, dict[str, float]] = {}
    for (g, _), values in zip(work, fitted, strict=True):
        refits[g] = values
        rounded = with_values(base, values)  # as recorded, so a rescore gives these figures
        pairs = [(c, rounded) for c in rows if key(c) == g]
        held += pairs
        per_group[g] = _score(pairs)
        print(f"  left out {g}: {len(pairs)} rows", file=sys.stderr, flush=True)
    result: dict[str, object] = {"groups": groups}
    result.update(_score(held))
    result["per_group"] = {
        g: {m: s[m].get("median") for m in ("tpot", "ttft", "tps_per_gpu")}
        for g, s in per_group.items()
    }
    result["factors"] = refits
    return result


def rescore(
    rows: Sequence[Case], base: Factors, key: Callable[[Case], str], check: dict[str, Any]
) -> Scores:
    """The pooled errors of a recorded leave-out check, recomputed from the factors it recorded
    for each group (no refit): what tests compare with the recorded figures."""
    refits: dict[str, dict[str, float]] = check["factors"]
    pairs = [(c, with_values(base, refits[key(c)])) for c in rows if key(c) in refits]
    return _score(pairs)


# --- ranges: the out-of-sample errors' quantiles per engine and vendor stack -------------------

RANGE_CHECK = "leave_one_source_out"
RANGE_QUANTILES = (0.1, 0.9)
RANGE_MIN_ROWS = 15
VENDORS = ("nvidia", "amd")
POOLING = (
    f"a group (engine, vendor stack) with fewer than {RANGE_MIN_ROWS} held-out runs takes its "
    "engine's runs on every vendor stack (pooled: engine), one still short takes every run "
    "(pooled: all)"
)
Signed = dict[str, float]


def quantile(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile of ``values``, linear between order statistics (numpy's default)."""
    v = sorted(values)
    pos = q * (len(v) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


def signed_errors(c: Case, f: Factors) -> Signed:
    """log(predicted / measured) of each metric the row measured."""
    s = predict(c, f)
    out: Signed = {}
    for metric, pred, meas in (
        ("ttft", s.ttft_ms, c.ttft_ms),
        ("tpot", s.tpot_ms, c.tpot_ms),
        ("tps_per_gpu", s.output_tokens_per_s_per_gpu, c.tps_per_gpu),
    ):
        if meas:
            out[metric] = math.log(pred / meas)
    return out


def _band(engine: str, vendor: str, held: Sequence[tuple[Case, Signed]]) -> dict[str, Any]:
    own = [e for c, e in held if c.engine == engine and vendor_of(c) == vendor]
    pooled, errs = "own", own
    if len(errs) < RANGE_MIN_ROWS:
        pooled, errs = "engine", [e for c, e in held if c.engine == engine]
    if len(errs) < RANGE_MIN_ROWS:
        pooled, errs = "all", [e for _, e in held]
    band: dict[str, Any] = {"engine": engine, "vendor": vendor, "rows": len(errs)}
    band["pooled"] = pooled
    for metric in ("ttft", "tpot", "tps_per_gpu"):
        values = [e[metric] for e in errs if metric in e]
        lo, hi = (round(quantile(values, q), 3) for q in RANGE_QUANTILES)
        band[metric] = {"low": lo, "high": hi}
    return band


def ranges(rows: Sequence[Case], base: Factors, record: dict[str, Any]) -> dict[str, Any]:
    """The ranges section: each held-out row of ``record`` (the leave-one-source-out check)
    predicted with the factors its refit recorded, its signed errors' quantiles per engine and
    vendor stack."""
    refits: dict[str, dict[str, float]] = record["factors"]
    key = LEAVE_OUT[RANGE_CHECK]
    held = [
        (c, signed_errors(c, with_values(base, refits[key(c)]))) for c in rows if key(c) in refits
    ]
    return {
        "quantiles": list(RANGE_QUANTILES),
        "min_rows": RANGE_MIN_ROWS,
        "check": RANGE_CHECK,
        "pooling": POOLING,
        "command": COMMAND,
        "date": date.today().isoformat(),
        "bands": [_band(e, v, held) for e in FITTED_ENGINES for v in VENDORS],
    }


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
            values.update({f"{stack.key}.{c}": COST_PRIORS[c].value for c in STACK_COSTS})
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


def write_ranges(section: dict[str, Any]) -> None:
    """Only the ranges section (``--ranges-only``: from the recorded refits, no refit)."""
    doc = yaml.safe_load(PERF_YAML.read_text(encoding="utf-8"))
    doc["ranges"] = section
    _dump(doc)


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
    source, each derived stack at its like's costs × its scales."""
    out = factors.model_dump()
    for name in GLOBAL:
        unit = getattr(factors, name).unit
        out[name] = _written(name, value_of(factors, name), unit, rows, name in names)
    fitted = {split_name(n)[0] for n in names}
    for i, stack in enumerate(factors.stacks):
        if stack.like is not None and stack.key not in fitted:
            continue
        for cost in STACK_COSTS:
            name = f"{stack.key}.{cost}"
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


def main(argv: list[str] | None = None) -> int:
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
        help="rewrite only the derived stacks (their like's costs x their scales), no refit",
    )
    ap.add_argument(
        "--ranges-only",
        action="store_true",
        help="rewrite only the ranges, from the refits the last fit recorded (no refit)",
    )
    args = ap.parse_args(argv)
    rows = fit_rows()
    if args.derive_only:
        doc = yaml.safe_load(PERF_YAML.read_text(encoding="utf-8"))
        derived = derive(perf_facts().factors).model_dump()
        doc["factors"]["stacks"] = [
            new if new["like"] else old
            for new, old in zip(derived["stacks"], doc["factors"]["stacks"], strict=True)
        ]
        if not args.dry_run:
            _dump(doc)
        return 0
    if args.ranges_only:
        recorded = yaml.safe_load(PERF_YAML.read_text(encoding="utf-8"))["fit"][RANGE_CHECK]
        fresh = ranges(rows, prior_factors(), recorded)
        print(yaml.safe_dump(fresh, sort_keys=False, width=100))
        if not args.dry_run:
            write_ranges(fresh)
        return 0
    held = {k: float(v) for k, v in (item.split("=", 1) for item in args.fix)}
    base = with_values(prior_factors(), held)
    names = [n for n in fit_names(rows) if n not in held]
    print(f"fitting {len(names)} factors on {len(rows)} rows", file=sys.stderr, flush=True)
    fitted = fit(rows, base, args.iters, names)
    fitted = with_values(base, {n: _sig(value_of(fitted, n)) for n in names})  # as written
    print(f"loss {loss(rows, fitted, names):.4f}", file=sys.stderr)
    report: dict[str, Any] = {
        "rows": len(rows),
        "row_ids": sorted(c.id for c in rows),
        "command": COMMAND
        + (f" --iters {args.iters}" if args.iters != ITERS else "")
        + "".join(f" --fix {k}={v:g}" for k, v in held.items()),
        "loss": (
            f"mean |log(pred / measured)|: TPOT + {TTFT_WEIGHT} x TTFT, + {SCALE} x "
            "sum(z^2) / 2 / terms (z: log(value / prior) / sigma)"
        ),
        "in_sample": scores(rows, fitted),
    }
    if not args.no_leave_out:
        # each refit starts from the priors, as the main fit did: nothing of the held-out rows
        for name in args.leave_out or list(LEAVE_OUT):
            report[name] = leave_out(rows, base, LEAVE_OUT[name], args.iters, names, args.jobs)
    section = ranges(rows, base, report[RANGE_CHECK]) if RANGE_CHECK in report else None
    for name in names:
        print(f"{name:44} {prior_of(name).value:>12.4g} -> {value_of(fitted, name):.4g}")
    print(yaml.safe_dump({**report, "ranges": section}, sort_keys=False, width=100))
    if not args.dry_run:
        write(fitted, names, report, section)
        print(f"wrote {PERF_YAML}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
