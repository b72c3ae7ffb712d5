"""The speed model against measured serving runs: median and p90 |error| of TPOT, TTFT and
output tokens/s per GPU on every row of data/perf/*.jsonl whose conditions are complete (see
tools/perf_rows.py for what "complete" means, how a row maps to a bundled config and what its
launch flags and lengths tell the model), each run once; TTFT compared as the statistic the row
measured (the mean, or the median request's). Broken down by source, engine, vendor stack and
kernel path, engine release, model family and concurrency. Rows of an engine the app does not
plan (TensorRT-LLM) are in "all rows", run through the vLLM adapter but prefilled the way that
engine runs a prefill (data/perf.yaml engines), never fitted. Then the out-of-sample checks
tools/fit_perf.py recorded in data/perf.yaml (each architecture, GPU, source and vendor left out
of the fit and scored alone; issue 27's targets leaving each source out, every row and the AMD
rows alone), with the same breakdowns; whether layouts measured side by side are ordered as
measured (at the same load, and at any); and throughput checked on its own: the runs that send
every prompt at once and state the output tokens/s of the whole run (tools.perf_rows.Burst).

    python -m tools.bench_perf [--rows] [--file measured.jsonl]

``--rows`` prints every row's measured and predicted figures; ``--file`` checks another file of
the same shape (other measured runs).
"""

from __future__ import annotations

import argparse
import math
import statistics
import time
from collections import Counter
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from engine.perf.refit import with_values
from engine.rules import DATA_DIR
from engine.versions import loose_version_key
from tools import fit_perf
from tools.fit_perf import FITTED_ENGINES, source_group
from tools.perf_pairs import TIE, agreement, pairs
from tools.perf_rows import (
    OLDEST,
    Burst,
    Case,
    bursts,
    cases,
    errors,
    family_of,
    load_rows,
    median_p90,
    predict,
    predict_burst,
    predicted_ttft,
    row_files,
    stack_of,
    vendor_of,
)
from tools.perf_trace import METRICS, Rows

# issue 27's targets, leave-one-source-out: every row, and the AMD rows alone
TARGETS = {"tpot": 0.12, "ttft": 0.30, "tps_per_gpu": 0.12}
AMD_TARGETS = {"tpot": 0.20, "ttft": 0.40, "tps_per_gpu": 0.20}


def _cell(values: list[float]) -> str:
    med, p90, n = median_p90(values)
    if not n:
        return f"{'-':>17}"
    return f"{med:>6.1%} {p90:>6.1%} {n:>3}"


def _errors(rows: list[Case]) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {m: [] for m in METRICS}
    for c in rows:
        e = errors(c, predict(c))
        for m, v in (("tpot", e.tpot), ("ttft", e.ttft), ("tps_per_gpu", e.tps)):
            if v is not None:
                out[m].append(v)
    return out


LOADS = ((1, 8, "1-8"), (9, 64, "9-64"), (65, 10**9, ">64"))


def load_band(c: Case) -> str:
    return next(label for lo, hi, label in LOADS if lo <= c.concurrency <= hi)


def vendor_stack(c: Case) -> str:
    """The engine on its vendor's stack (CUDA on NVIDIA, ROCm on AMD)."""
    stack = "ROCm" if vendor_of(c) == "amd" else "CUDA"
    return f"{c.engine} on {stack}"


def kernel_stack(c: Case) -> str:
    """The stack and kernel path the row runs on (data/perf.yaml stacks)."""
    return stack_of(c)


def release(c: Case) -> str:
    """The engine and its release as the row states it (0.5.5.post3 -> 0.5.5)."""
    if c.engine_version == OLDEST:
        return f"{c.engine} (release not stated)"
    key = loose_version_key(c.engine_version)
    if key is None:
        return f"{c.engine} (release not stated)"
    return f"{c.engine} " + ".".join(str(n) for n in key[0])


BREAKDOWNS: tuple[tuple[str, Callable[[Case], str]], ...] = (
    ("source", lambda c: source_group(c)),
    ("engine", lambda c: c.engine),
    ("vendor stack", vendor_stack),
    ("kernels", kernel_stack),
    ("release", release),
    ("family", family_of),
    ("concurrency", load_band),
)


def table(used: list[Case]) -> list[tuple[str, dict[str, list[float]]]]:
    """Median and p90 |error| over every row, then by each breakdown."""
    groups: list[tuple[str, list[Case]]] = [("all rows", used)]
    for label, key in BREAKDOWNS:
        for value in sorted({key(c) for c in used}):
            groups.append((f"{label}: {value}", [c for c in used if key(c) == value]))
    return [(name, _errors(rows)) for name, rows in groups]


def ttft_bias(used: list[Case]) -> list[tuple[str, list[str]]]:
    """The median of predicted / measured TTFT - 1 (its sign: over or under) per engine, by
    concurrency: where the TTFT error comes from."""
    out = []
    for engine in sorted({c.engine for c in used}):
        cells = []
        for lo, hi, _ in LOADS:
            ratios = [
                predicted_ttft(c, predict(c)) / c.ttft_ms - 1
                for c in used
                if c.engine == engine and lo <= c.concurrency <= hi and c.ttft_ms
            ]
            cells.append(f"{statistics.median(ratios):+7.0%} {len(ratios):>3}" if ratios else "-")
        out.append((engine, cells))
    return out


PERF_YAML = DATA_DIR / "perf.yaml"
OUT_OF_SAMPLE = (
    "leave_one_model_out", "leave_one_gpu_out", "leave_one_source_out", "leave_one_vendor_out"
)  # fmt: skip


def out_of_sample() -> dict[str, dict[str, float]]:
    """The medians tools/fit_perf.py recorded for each leave-out check (data/perf.yaml fit)."""
    doc = yaml.safe_load(PERF_YAML.read_text(encoding="utf-8"))
    record = doc.get("fit") or {}
    return {
        name: {m: float(record[name][m].get("median", math.nan)) for m in METRICS}
        for name in OUT_OF_SAMPLE
        if name in record
    }


NAMES = {"tpot": "TPOT", "ttft": "TTFT", "tps_per_gpu": "tok/s/GPU"}


def burst_errors(runs: list[Burst]) -> list[tuple[Burst, float, float]]:
    """(run, predicted output tok/s, |error|) for every burst whose weights fit."""
    out = []
    for b in runs:
        p = predict_burst(b)
        if p is not None:
            out.append((b, p, abs(p - b.output_tps) / b.output_tps))
    return out


def _print_table(used: list[Case]) -> None:
    top = "".join(f"  {NAMES[m]:^17}" for m in METRICS)
    sub = "".join(f"  {'median':>6} {'p90':>6} {'n':>3}" for _ in METRICS)
    print(f"\n{'|error| in sample':<58}{top}\n{'':<58}{sub}")
    for name, errs in table(used):
        print(f"{name[:57]:<58}" + "".join(f"  {_cell(errs[m])}" for m in METRICS))
    other = [c for c in used if c.engine not in FITTED_ENGINES]
    if other:
        kinds = ", ".join(sorted({c.engine for c in other}))
        print(
            f"{len(other)} rows of another engine ({kinds}): run through the vLLM adapter (its "
            "chunk budget, step and request costs) but prefilled the way that engine runs a "
            "prefill (data/perf.yaml engines; TensorRT-LLM: eagerly, its default), and never "
            "fitted: the factors are fitted on the vLLM and SGLang rows only"
        )
    derived = sum(1 for c in used if c.tps_derived)
    print(
        f"tokens/s per GPU: {len(used) - derived} rows state it, {derived} derived from the row's "
        "own TTFT and TPOT (concurrency x OSL / (TTFT + (OSL - 1) x TPOT) / GPUs)"
    )
    print("\nTTFT predicted / measured - 1, median (n), by concurrency")
    print(f"{'':<10}" + "".join(f"{label:>13}" for _, _, label in LOADS))
    for engine, signs in ttft_bias(used):
        print(f"{engine:<10}" + "".join(f"{sign:>13}" for sign in signs))


def _verdict(errs: dict[str, list[float]], targets: dict[str, float]) -> str:
    cells = []
    for m in METRICS:
        if not errs[m]:
            cells.append(f"{NAMES[m]} - (no row)")
            continue
        med = statistics.median(errs[m])
        ok = "ok" if med <= targets[m] else "MISSED"
        cells.append(f"{NAMES[m]} {med:.1%} (target <= {targets[m]:.0%}) {ok}")
    return "; ".join(cells)


@cache
def _recorded() -> Rows:
    """The rows the recorded fit was made on, traced once."""
    return Rows.of(fit_perf.recorded_rows(), fit_perf.prior_factors())


def held_out(check: str) -> list[tuple[Case, dict[str, float]]]:
    """Each fitted row's |error| predicted by the refit that left its group out (the factors
    data/perf.yaml's fit recorded for ``check``; no refit)."""
    doc = yaml.safe_load(PERF_YAML.read_text(encoding="utf-8"))
    record = (doc.get("fit") or {}).get(check) or {}
    refits = record.get("factors") or {}
    key = fit_perf.LEAVE_OUT[check]
    base = fit_perf.prior_factors()
    rows = _recorded()
    out = []
    for g, values in refits.items():
        group = rows.subset([i for i, c in enumerate(rows.cases) if key(c) == g])
        pred = group.predict(with_values(base, values))
        for i, c in enumerate(group.cases):
            found = {}
            for j, m in enumerate(METRICS):
                meas = group.measured[i, j]
                if not math.isnan(meas):
                    found[m] = abs(float(pred[i, j]) - meas) / meas
            out.append((c, found))
    return out


def _by_metric(rows: list[tuple[Case, dict[str, float]]]) -> dict[str, list[float]]:
    return {m: [e[m] for _, e in rows if m in e] for m in METRICS}


def unseen(used: list[Case]) -> list[tuple[Case, dict[str, float]]]:
    """Each fitted engine's row the recorded fit never saw (not in ``fit.row_ids``), its |error|
    at data/perf.yaml's factors: out of sample for every factor fitted."""
    seen = {c.id for c in fit_perf.recorded_rows()}
    out = []
    for c in used:
        if c.engine in FITTED_ENGINES and c.id not in seen:
            e = errors(c, predict(c))
            found = {"tpot": e.tpot, "ttft": e.ttft, "tps_per_gpu": e.tps}
            out.append((c, {m: v for m, v in found.items() if v is not None}))
    return out


def _print_held(title: str, every: str, held: list[tuple[Case, dict[str, float]]]) -> None:
    """Rows predicted out of sample: the targets over ``every`` row and the AMD rows, and the
    errors by each breakdown."""
    print(f"\n{title}, {every} ({len(held)}): {_verdict(_by_metric(held), TARGETS)}")
    amd = [(c, e) for c, e in held if vendor_of(c) == "amd"]
    print(f"{title}, AMD rows ({len(amd)}): {_verdict(_by_metric(amd), AMD_TARGETS)}")
    for label, key in BREAKDOWNS:
        for value in sorted({key(c) for c, _ in held}):
            group = _by_metric([(c, e) for c, e in held if key(c) == value])
            cells = "  ".join(f"{NAMES[m]} {_cell(group[m])}" for m in METRICS)
            print(f"  {(label + ': ' + value)[:56]:<56} {cells}")


def _print_unseen(used: list[Case]) -> None:
    _print_held("rows the recorded fit never saw", "every fitted engine's", unseen(used))


def _print_check(check: str) -> None:
    """One recorded leave-out check: the targets over every row and the AMD rows, and the
    held-out errors by each breakdown."""
    held = held_out(check)
    if not held:
        print(f"\n{check.replace('_', ' ')}: not recorded")
        return
    _print_held(check.replace("_", " "), "every fitted row", held)


def _print_out_of_sample() -> None:
    oos = out_of_sample()
    print("\nout of sample (data/perf.yaml fit, by tools/fit_perf.py): median |error|")
    for name, medians in oos.items():
        cells = "; ".join(
            f"{NAMES[m]} {medians[m]:.1%}" if math.isfinite(medians[m]) else f"{NAMES[m]} -"
            for m in METRICS
        )
        print(f"  {name.replace('_', ' ')}: {cells}")
    for check in ("leave_one_source_out", "leave_one_vendor_out"):
        _print_check(check)


def _print_pairs(used: list[Case]) -> None:
    found = pairs(used, predict)
    share = agreement(found)
    same = [p for p in found if p.same_load]
    print(
        f"\nranked like the measurements: {len(found)} pairs of layouts of one model on one GPU, "
        f"engine and workload (measurements {TIE:.0%} or more apart)"
        + (f": ordered as measured on {share:.0%} (target >= 80 %)" if share is not None else "")
    )
    same_share = agreement(same)
    if same_share is not None:
        print(f"  at the same concurrency ({len(same)}): {same_share:.0%}")
    for p in found:
        if not p.agree:
            print(f"  misordered {p.metric}: {p.a.id} ({_lay(p.a)}) vs {p.b.id} ({_lay(p.b)})")


def _lay(c: Case) -> str:
    return (
        f"TP {c.tp}"
        + (f" DP {c.dp}" if c.dp > 1 else "")
        + (" EP" if c.ep else "")
        + (f" c{c.concurrency}")
    )


def _print_bursts(rows: list[dict[str, Any]]) -> list[tuple[Burst, float, float]]:
    runs = burst_errors(bursts(rows))
    if runs:
        b_med, b_p90, b_n = median_p90([e for _, _, e in runs])
        print(
            f"\noutput tokens/s measured on its own: {b_n} runs that send every prompt at once "
            f"(fixed ISL / OSL, no concurrency cap): median |error| {b_med:.1%}, p90 {b_p90:.1%}. "
            "Assumed: the engine runs as many as its KV pool and request cap hold (the layout "
            "search's count), each such wave sent at once, so the run's rate is the closed "
            "loop's at that many requests with one prompt per client"
        )
        for engine in sorted({b.engine for b, _, _ in runs}):
            e_med, e_p90, e_n = median_p90([e for b, _, e in runs if b.engine == engine])
            print(f"  engine: {engine:<8} median {e_med:.1%}  p90 {e_p90:.1%}  n {e_n}")
    return runs


def _print_rows(used: list[Case], runs: list[tuple[Burst, float, float]]) -> None:
    print()
    for c in used:
        s = predict(c)
        print(
            f"{c.id:<14} {c.model[:30]:<30} {c.gpu:<9} {c.engine:<7} TP{c.tp:<2} "
            f"{'EP ' if c.ep else '   '}c{c.concurrency:<4} {c.isl}/{c.osl:<5} "
            f"TPOT {c.tpot_ms or 0:8.2f} / {s.tpot_ms:8.2f}  "
            f"TTFT {c.ttft_ms or 0:9.1f} / {predicted_ttft(c, s):9.1f}  "
            f"tok/s/GPU {c.tps_per_gpu or 0:8.1f} / {s.output_tokens_per_s_per_gpu:8.1f}"
        )
    for b, p, _ in runs:
        print(
            f"{b.id:<14} {b.config[:30]:<30} {b.gpu:<9} {b.engine:<7} TP{b.tp:<2} "
            f"burst {b.prompts:<5} {b.isl}/{b.osl:<5} output tok/s {b.output_tps:9.1f} / "
            f"{p:9.1f}"
        )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.bench_perf", description=__doc__)
    ap.add_argument("--rows", action="store_true", help="print every row")
    ap.add_argument(
        "--file", type=Path, default=None, help="measured rows (JSON lines; default: data/perf/*)"
    )
    args = ap.parse_args(argv)
    rows = load_rows(args.file)
    used, skipped = cases(rows)
    where = args.file.name if args.file else ", ".join(f.name for f in row_files())
    print(f"\nspeed model vs measured runs ({where}): {len(rows)} rows, {len(used)} used")
    for why, n in Counter(s.why for s in skipped).most_common():
        print(f"  skipped {n:>3}: {why}")
    _print_table(used)
    if args.file is None:
        _print_out_of_sample()
        _print_unseen(used)
    _print_pairs(used)
    runs = _print_bursts(rows)
    start = time.perf_counter()
    for c in used:
        predict(c)
    per = (time.perf_counter() - start) / max(len(used), 1) * 1e3
    print(f"estimate(): {per:.3f} ms per row (warm)")
    if args.rows:
        _print_rows(used, runs)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
