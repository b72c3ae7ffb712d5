"""The speed model against measured serving runs: median and p90 |error| of TPOT, TTFT and
output tokens/s per GPU, overall and per source, on every row of data/perf/measured.jsonl whose
conditions are complete (see tools/perf_rows.py for what "complete" means and how a row maps to
a bundled config). Targets: median <= 15 % on TPOT and on tokens/s per GPU, <= 35 % on TTFT.

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

from tools.perf_rows import MEASURED, Case, cases, errors, load_rows, median_p90, predict

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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.bench_perf", description=__doc__)
    ap.add_argument("--rows", action="store_true", help="print every row")
    ap.add_argument("--file", type=Path, default=MEASURED, help="measured rows (JSON lines)")
    args = ap.parse_args(argv)
    rows = load_rows(args.file)
    used, skipped = cases(rows)
    print(f"\nspeed model vs measured runs ({args.file.name}): {len(rows)} rows, {len(used)} used")
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
    derived = sum(1 for c in used if c.tps_derived)
    print(
        f"tokens/s per GPU: {len(used) - derived} rows state it, {derived} derived from the row's "
        "own TTFT and TPOT (concurrency x OSL / (TTFT + (OSL - 1) x TPOT) / GPUs)"
    )
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
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
