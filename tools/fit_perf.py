"""Fit the speed model's global factors on the measured rows and write them to data/perf.yaml.

    python -m tools.fit_perf              # fit, check by leaving out, write data/perf.yaml
    python -m tools.fit_perf --dry-run    # fit and print, write nothing
    python -m tools.fit_perf --no-leave-out

The rows are ``data/perf/measured.jsonl`` (a copy of shared/perf/measured.jsonl) whose conditions
are complete (``tools.perf_rows``), run by vLLM or SGLang (TensorRT-LLM rows are benched, not
fitted: another engine). The loss is the mean |log(predicted / measured)| of TPOT plus half that
of TTFT (TTFT is the noisier figure: queueing the model only approximates); an L1 loss, so rows
the model cannot describe (waiting for KV space at 512 users) pull the fit no more than any
other row. The factors are fitted in log space by Nelder-Mead from the current values, within
physical bounds (a fraction of a peak is at most 1; the bus efficiency of NVLS / in-switch
reductions may pass 1, the ring's 2(n − 1)/n being the reference). Afterwards the fit is checked
by leaving each model out, and each GPU: refitted without its rows, then scored on them alone.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable, Sequence
from datetime import date

import yaml

from engine.perf.factors import Factor, Factors, perf_facts
from engine.rules import DATA_DIR
from tools.perf_rows import Case, cases, config_for, load_rows, median_p90, predict

PERF_YAML = DATA_DIR / "perf.yaml"
FITTED_ENGINES = ("vllm", "sglang")
TTFT_WEIGHT = 0.5

# name -> (lower, upper) bounds
BOUNDS: dict[str, tuple[float, float]] = {
    "hbm_fraction": (0.3, 1.0),
    "tensor_fraction": (0.1, 1.0),
    "layer_seconds": (1e-7, 2e-4),
    "moe_layer_seconds": (1e-7, 5e-4),
    "prefill_layer_seconds": (1e-6, 5e-3),
    "step_seconds": (1e-5, 0.02),
    "request_step_seconds": (1e-8, 2e-4),
    "ttft_seconds_vllm": (1e-4, 0.3),
    "ttft_seconds_sglang": (1e-4, 0.3),
    "burst_share": (0.0, 1.0),
    "collective_latency_seconds": (1e-6, 1e-4),
}
FIT = tuple(BOUNDS)

# Where every fit starts (the main one and each leave-out refit), so a rerun does not depend on
# the values the last run wrote: AIC's empirical constants where it has one, round guesses else.
PRIOR: dict[str, float] = {
    "hbm_fraction": 0.8,  # AIC systems/*.yaml mem_bw_empirical_scaling_factor
    "tensor_fraction": 0.6,
    "layer_seconds": 3e-5,
    "moe_layer_seconds": 2e-5,
    "prefill_layer_seconds": 8e-4,  # AIC vllm_backend._prefill_dispatch_overhead_ms
    "step_seconds": 2e-3,
    "request_step_seconds": 2e-5,
    "ttft_seconds_vllm": 0.02,
    "ttft_seconds_sglang": 0.1,
    "burst_share": 0.3,
    "collective_latency_seconds": 1e-5,  # AIC systems/*.yaml p2p_latency
}


def with_values(base: Factors, values: dict[str, float]) -> Factors:
    update = {
        name: Factor(value=v, unit=getattr(base, name).unit, fitted=True, source="trial")
        for name, v in values.items()
    }
    return base.model_copy(update=update)


def _clip(name: str, v: float) -> float:
    lo, hi = BOUNDS[name]
    return min(max(v, lo), hi)


def loss(rows: Sequence[Case], factors: Factors) -> float:
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
    return total / max(n, 1)


def nelder_mead(
    fn: Callable[[list[float]], float], x0: list[float], step: float, iters: int
) -> list[float]:
    """Minimise ``fn`` from ``x0`` (a plain Nelder-Mead: reflect, expand, contract, shrink)."""
    n = len(x0)
    simplex = [list(x0)] + [
        [x + (step if i == j else 0.0) for j, x in enumerate(x0)] for i in range(n)
    ]
    scores = [fn(p) for p in simplex]
    for _ in range(iters):
        order = sorted(range(n + 1), key=lambda i: scores[i])
        simplex = [simplex[i] for i in order]
        scores = [scores[i] for i in order]
        centroid = [sum(p[j] for p in simplex[:-1]) / n for j in range(n)]
        worst = simplex[-1]
        reflect = [c + (c - w) for c, w in zip(centroid, worst, strict=True)]
        fr = fn(reflect)
        if fr < scores[0]:
            expand = [c + 2 * (c - w) for c, w in zip(centroid, worst, strict=True)]
            fe = fn(expand)
            simplex[-1], scores[-1] = (expand, fe) if fe < fr else (reflect, fr)
        elif fr < scores[-2]:
            simplex[-1], scores[-1] = reflect, fr
        else:
            contract = [c + 0.5 * (w - c) for c, w in zip(centroid, worst, strict=True)]
            fc = fn(contract)
            if fc < scores[-1]:
                simplex[-1], scores[-1] = contract, fc
            else:
                best = simplex[0]
                simplex = [best] + [
                    [b + 0.5 * (x - b) for b, x in zip(best, p, strict=True)] for p in simplex[1:]
                ]
                scores = [scores[0]] + [fn(p) for p in simplex[1:]]
        if max(scores) - min(scores) < 1e-6:
            break
    return simplex[min(range(n + 1), key=lambda i: scores[i])]


TIED = {"ttft_seconds_sglang": "ttft_seconds_vllm"}


def fit(
    rows: Sequence[Case],
    base: Factors,
    iters: int,
    names: Sequence[str] = FIT,
    tie: bool = False,
) -> Factors:
    """Factors minimising ``loss`` on ``rows``; the search runs on log(value) (burst_share on
    log(value + 0.01), so it may reach 0)."""

    def decode(x: list[float]) -> dict[str, float]:
        out = {}
        for name, v in zip(names, x, strict=True):
            raw = math.exp(v) - (0.01 if name == "burst_share" else 0.0)
            out[name] = _clip(name, raw)
        if tie:
            out.update({a: out[b] for a, b in TIED.items() if b in out})
        return out

    def start(name: str) -> float:
        v = getattr(base, name).value
        return math.log(v + 0.01) if name == "burst_share" else math.log(max(v, 1e-9))

    if tie:
        names = [n for n in names if n not in TIED]
    x = [start(name) for name in names]
    for step in (0.5, 0.2):  # a restart from the best point with a fresh simplex
        x = nelder_mead(lambda v: loss(rows, with_values(base, decode(v))), x, step, iters // 2)
    return with_values(base, decode(x))


def scores(rows: Sequence[Case], factors: Factors) -> dict[str, dict[str, float]]:
    errs: dict[str, list[float]] = {"tpot": [], "ttft": [], "tps_per_gpu": []}
    for c in rows:
        s = predict(c, factors)
        if c.tpot_ms:
            errs["tpot"].append(abs(s.tpot_ms - c.tpot_ms) / c.tpot_ms)
        if c.ttft_ms:
            errs["ttft"].append(abs(s.ttft_ms - c.ttft_ms) / c.ttft_ms)
        if c.tps_per_gpu:
            errs["tps_per_gpu"].append(
                abs(s.output_tokens_per_s_per_gpu - c.tps_per_gpu) / c.tps_per_gpu
            )
    out = {}
    for k, v in errs.items():
        med, p90, n = median_p90(v)
        out[k] = {"median": round(med, 3), "p90": round(p90, 3), "rows": n}
    return out


def leave_out(
    rows: Sequence[Case],
    base: Factors,
    key: Callable[[Case], str],
    iters: int,
    names: Sequence[str] = FIT,
    tie: bool = False,
) -> dict[str, object]:
    """Refit without each group, score the group with that fit; pooled errors over all groups."""
    groups = sorted({key(c) for c in rows})
    held: list[tuple[Case, Factors]] = []
    for g in groups:
        train = [c for c in rows if key(c) != g]
        test = [c for c in rows if key(c) == g]
        if not train or not test:
            continue
        fitted = fit(train, base, iters, names, tie)
        held += [(c, fitted) for c in test]
        print(f"  left out {g}: {len(test)} rows", file=sys.stderr, flush=True)
    errs: dict[str, list[float]] = {"tpot": [], "ttft": [], "tps_per_gpu": []}
    for c, f in held:
        s = predict(c, f)
        if c.tpot_ms:
            errs["tpot"].append(abs(s.tpot_ms - c.tpot_ms) / c.tpot_ms)
        if c.ttft_ms:
            errs["ttft"].append(abs(s.ttft_ms - c.ttft_ms) / c.ttft_ms)
        if c.tps_per_gpu:
            errs["tps_per_gpu"].append(
                abs(s.output_tokens_per_s_per_gpu - c.tps_per_gpu) / c.tps_per_gpu
            )
    result: dict[str, object] = {"groups": groups}
    for k, v in errs.items():
        med, p90, n = median_p90(v)
        result[k] = {"median": round(med, 3), "p90": round(p90, 3), "rows": n}
    return result


def family(c: Case) -> str:
    """Rows of one architecture at one size share a group (DeepSeek-R1 and -V3 are one model to
    a speed model: the same config but for its name)."""
    cfg = config_for(c.config, c.precision)
    return f"{cfg.architecture} h{cfg.hidden_size} L{cfg.num_hidden_layers}"


def fit_rows() -> list[Case]:
    used, _ = cases(load_rows())
    return [c for c in used if c.engine in FITTED_ENGINES]


def _sig(v: float) -> float:
    return float(f"{v:.3g}")


def write(factors: Factors, report: dict[str, object]) -> None:
    doc = yaml.safe_load(PERF_YAML.read_text(encoding="utf-8"))
    header = PERF_YAML.read_text(encoding="utf-8").split("\nfactors:")[0]
    source = (
        f"fitted by tools/fit_perf.py on data/perf/measured.jsonl (= shared/perf/measured.jsonl), "
        f"{report['rows']} vLLM / SGLang rows, {date.today().isoformat()}"
    )
    for name in FIT:
        doc["factors"][name] = {
            "value": _sig(getattr(factors, name).value),
            "unit": getattr(factors, name).unit,
            "fitted": True,
            "source": source,
        }
    doc["fit"] = report
    body = yaml.safe_dump(
        {k: doc[k] for k in ("factors", "speculative", "fit")},
        sort_keys=False,
        allow_unicode=True,
        width=100,
    )
    PERF_YAML.write_text(header + "\n" + body, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.fit_perf", description=__doc__)
    ap.add_argument("--dry-run", action="store_true", help="print, do not write data/perf.yaml")
    ap.add_argument("--no-leave-out", action="store_true", help="skip the leave-out checks")
    ap.add_argument("--iters", type=int, default=1500, help="Nelder-Mead iterations")
    ap.add_argument("--fix", action="append", default=[], help="NAME=VALUE: hold a factor")
    ap.add_argument("--only-model-out", action="store_true", help="skip the GPU leave-out")
    ap.add_argument("--tie-engines", action="store_true", help="one TTFT cost for both engines")
    args = ap.parse_args(argv)
    rows = fit_rows()
    held = {k: float(v) for k, v in (item.split("=", 1) for item in args.fix)}
    base = with_values(perf_facts().factors, {**PRIOR, **held})
    names = [n for n in FIT if n not in held]
    print(f"fitting {len(names)} factors on {len(rows)} rows", file=sys.stderr, flush=True)
    fitted = fit(rows, base, args.iters, names, args.tie_engines)
    print(f"loss {loss(rows, fitted):.4f}", file=sys.stderr)
    report: dict[str, object] = {
        "rows": len(rows),
        "loss": "mean |log(pred / measured)|: TPOT + 0.5 x TTFT",
        "in_sample": scores(rows, fitted),
    }
    if not args.no_leave_out:
        # each refit starts from the prior, as the main fit did: nothing of the held-out rows
        report["leave_one_model_out"] = leave_out(
            rows, base, family, args.iters, names, args.tie_engines
        )
        if not args.only_model_out:
            report["leave_one_gpu_out"] = leave_out(rows, base, lambda c: c.gpu, args.iters, names)
    for name in FIT:
        print(f"{name:28} {getattr(base, name).value:>12.4g} -> {getattr(fitted, name).value:.4g}")
    report["factors_start"] = {n: PRIOR[n] for n in names}
    print(yaml.safe_dump(report, sort_keys=False))
    if not args.dry_run:
        write(fitted, report)
        print(f"wrote {PERF_YAML}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
