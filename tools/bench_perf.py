"""The speed model against measured serving runs: median and p90 |error| of TPOT, TTFT and
output tokens/s per GPU, overall and per source, on every row of data/perf/measured.jsonl whose
conditions are complete (see tools/perf_rows.py for what "complete" means and how a row maps to
a bundled config), each run once. Targets: median <= 15 % on TPOT and on tokens/s per GPU,
<= 35 % on TTFT. Rows of an engine the app does not plan (TensorRT-LLM) are in "all rows", run
through the vLLM adapter but prefilled the way that engine runs a prefill (data/perf.yaml
engines), never fitted; the vLLM and SGLang rows are also scored alone. Then the out-of-sample
checks tools/fit_perf.py recorded in data/perf.yaml (each architecture, GPU and source left out
of the fit and scored alone), and throughput
checked on its own: the runs that send every prompt at once and state the output tokens/s of
the whole run (tools.perf_rows.Burst), where the rows above only derive it from TTFT and TPOT.

    python -m tools.bench_perf [--rows] [--file measured.jsonl]

``--rows`` prints every row's measured and predicted figures; ``--file`` checks another file of
the same shape (other measured runs).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import Counter
from pathlib import Path

import yaml

from engine.rules import DATA_DIR
from tools.fit_perf import FITTED_ENGINES
from tools.perf_rows import (
    Burst,
    Case,
    bursts,
    cases,
    errors,
    load_rows,
    median_p90,
    predict,
    predict_burst,
    row_files,
)

TARGETS = {"tpot": 0.15, "ttft": 0.35, "tps_per_gpu": 0.15}
METRICS = ("tpot", "ttft", "tps_per_gpu")


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


def table(used: list[Case]) -> list[tuple[str, dict[str, list[float]]]]:
    groups: list[tuple[str, list[Case]]] = [("all rows", used)]
    for source in sorted({c.source for c in used}):
        groups.append((source, [c for c in used if c.source == source]))
    for engine in sorted({c.engine for c in used}):
        groups.append((f"engine: {engine}", [c for c in used if c.engine == engine]))
    return [(name, _errors(rows)) for name, rows in groups]


LOADS = ((1, 8, "1-8"), (9, 64, "9-64"), (65, 10**9, ">64"))


def ttft_bias(used: list[Case]) -> list[tuple[str, list[str]]]:
    """The median of predicted / measured TTFT - 1 (its sign: over or under) per engine, by
    concurrency: where the TTFT error comes from."""
    out = []
    for engine in sorted({c.engine for c in used}):
        cells = []
        for lo, hi, _ in LOADS:
            ratios = [
                predict(c).ttft_ms / c.ttft_ms - 1
                for c in used
                if c.engine == engine and lo <= c.concurrency <= hi and c.ttft_ms
            ]
            cells.append(f"{statistics.median(ratios):+7.0%} {len(ratios):>3}" if ratios else "-")
        out.append((engine, cells))
    return out


PERF_YAML = DATA_DIR / "perf.yaml"
OUT_OF_SAMPLE = ("leave_one_model_out", "leave_one_gpu_out", "leave_one_source_out")


def out_of_sample() -> dict[str, dict[str, float]]:
    """The medians tools/fit_perf.py recorded for each leave-out check (data/perf.yaml fit)."""
    doc = yaml.safe_load(PERF_YAML.read_text(encoding="utf-8"))
    record = doc.get("fit") or {}
    return {
        name: {m: float(record[name][m]["median"]) for m in METRICS}
        for name in OUT_OF_SAMPLE
        if name in record
    }


def burst_errors(runs: list[Burst]) -> list[tuple[Burst, float, float]]:
    """(run, predicted output tok/s, |error|) for every burst whose weights fit."""
    out = []
    for b in runs:
        p = predict_burst(b)
        if p is not None:
            out.append((b, p, abs(p - b.output_tps) / b.output_tps))
    return out


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
    names = {"tpot": "TPOT", "ttft": "TTFT", "tps_per_gpu": "tok/s/GPU"}
    top = "".join(f"  {names[m]:^17}" for m in METRICS)
    sub = "".join(f"  {'median':>6} {'p90':>6} {'n':>3}" for _ in METRICS)
    print(f"\n{'|error|':<58}{top}\n{'':<58}{sub}")
    for name, errs in table(used):
        print(f"{name[:57]:<58}" + "".join(f"  {_cell(errs[m])}" for m in METRICS))
    overall = dict(table(used)[:1])["all rows"]
    verdict = []
    for m in METRICS:
        med = statistics.median(overall[m]) if overall[m] else float("nan")
        ok = "ok" if med <= TARGETS[m] else "MISSED"
        verdict.append(f"{m} median {med:.1%} (target <= {TARGETS[m]:.0%}) {ok}")
    print("\n" + "; ".join(verdict))
    other = [c for c in used if c.engine not in FITTED_ENGINES]
    if other:
        fitted = table([c for c in used if c.engine in FITTED_ENGINES])[0][1]
        cells = "; ".join(
            f"{names[m]} {statistics.median(fitted[m]):.1%}" for m in METRICS if fitted[m]
        )
        kinds = ", ".join(sorted({c.engine for c in other}))
        print(
            f"{len(other)} rows of another engine ({kinds}): run through the vLLM adapter (its "
            "chunk budget, step and request costs) but prefilled the way that engine runs a "
            "prefill (data/perf.yaml engines; TensorRT-LLM: eagerly, its default), and never "
            "fitted: the factors are fitted on the vLLM and SGLang rows only. The vLLM and SGLang "
            f"rows alone ({len(used) - len(other)}): {cells}"
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
    oos = out_of_sample()
    if args.file is None and oos:
        print("\nout of sample (data/perf.yaml fit, by tools/fit_perf.py): median |error|")
        for name, medians in oos.items():
            cells = "; ".join(
                f"{names[m]} {medians[m]:.1%} ({'ok' if medians[m] <= TARGETS[m] else 'MISSED'})"
                for m in METRICS
            )
            print(f"  {name.replace('_', ' ')}: {cells}")
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
    start = time.perf_counter()
    for c in used:
        predict(c)
    per = (time.perf_counter() - start) / max(len(used), 1) * 1e3
    print(f"estimate(): {per:.3f} ms per row (warm)")
    if args.rows:
        print()
        for c in used:
            s = predict(c)
            print(
                f"{c.id:<14} {c.model[:30]:<30} {c.gpu:<9} {c.engine:<7} TP{c.tp:<2} "
                f"{'EP ' if c.ep else '   '}c{c.concurrency:<4} {c.isl}/{c.osl:<5} "
                f"TPOT {c.tpot_ms or 0:8.2f} / {s.tpot_ms:8.2f}  "
                f"TTFT {c.ttft_ms or 0:9.1f} / {s.ttft_ms:9.1f}  "
                f"tok/s/GPU {c.tps_per_gpu or 0:8.1f} / {s.output_tokens_per_s_per_gpu:8.1f}"
            )
        for b, p, _ in runs:
            print(
                f"{b.id:<14} {b.config[:30]:<30} {b.gpu:<9} {b.engine:<7} TP{b.tp:<2} "
                f"burst {b.prompts:<5} {b.isl}/{b.osl:<5} output tok/s {b.output_tps:9.1f} / "
                f"{p:9.1f}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
