"""The speeds' ranges (data/perf.yaml ``ranges``): the model's signed errors on the runs of each
source left out of its fit, their 10th and 90th percentiles per engine and vendor stack
(``engine.perf.ranges`` reads them), written by tools/fit_perf.py."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from datetime import date
from typing import Any

import numpy as np

from engine.perf.factors import Factors
from engine.perf.refit import with_values
from tools.perf_rows import Case, vendor_of
from tools.perf_trace import METRICS, Rows

RANGE_CHECK = "leave_one_source_out"
RANGE_QUANTILES = (0.1, 0.9)
RANGE_MIN_ROWS = 15
ENGINES = ("vllm", "sglang")
VENDORS = ("nvidia", "amd")
POOLING = (
    f"a group (engine, vendor stack) with fewer than {RANGE_MIN_ROWS} held-out runs measuring "
    "each metric takes its engine's runs on every vendor stack (pooled: engine), one still short "
    "takes every run (pooled: all)"
)
Signed = dict[str, float]


def quantile(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile of ``values``, linear between order statistics (numpy's default)."""
    v = sorted(values)
    pos = q * (len(v) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


def _band(engine: str, vendor: str, held: Sequence[tuple[Case, Signed]]) -> dict[str, Any]:
    def enough(errs: list[Signed]) -> bool:  # every metric measured on enough of them
        return all(sum(1 for e in errs if m in e) >= RANGE_MIN_ROWS for m in METRICS)

    own = [e for c, e in held if c.engine == engine and vendor_of(c) == vendor]
    pooled, errs = "own", own
    if not enough(errs):
        pooled, errs = "engine", [e for c, e in held if c.engine == engine]
    if not enough(errs):
        pooled, errs = "all", [e for _, e in held]
    band: dict[str, Any] = {"engine": engine, "vendor": vendor, "rows": len(errs)}
    band["pooled"] = pooled
    for metric in ("ttft", "tpot", "tps_per_gpu"):
        values = [e[metric] for e in errs if metric in e]
        lo, hi = (round(quantile(values, q), 3) for q in RANGE_QUANTILES)
        band[metric] = {"low": lo, "high": hi}
    return band


def signed_errors(rows: Rows, f: Factors) -> list[tuple[Case, Signed]]:
    """log(predicted / measured) of each metric each row measured."""
    pred = rows.predict(f)
    out = []
    for i, c in enumerate(rows.cases):
        found: Signed = {}
        for j, metric in enumerate(METRICS):
            meas = rows.measured[i, j]
            if not np.isnan(meas):
                found[metric] = math.log(float(pred[i, j]) / float(meas))
        out.append((c, found))
    return out


def ranges(
    rows: Rows,
    base: Factors,
    record: dict[str, Any],
    key: Callable[[Case], str],
    command: str,
) -> dict[str, Any]:
    """The ranges section: each held-out row of ``record`` (the leave-one-source-out check,
    grouped by ``key``) predicted with the factors its refit recorded, its signed errors'
    quantiles per engine and vendor stack."""
    refits: dict[str, dict[str, float]] = record["factors"]
    held: list[tuple[Case, Signed]] = []
    for g, values in refits.items():
        group = rows.subset([i for i, c in enumerate(rows.cases) if key(c) == g])
        held += signed_errors(group, with_values(base, values))
    return {
        "quantiles": list(RANGE_QUANTILES),
        "min_rows": RANGE_MIN_ROWS,
        "check": RANGE_CHECK,
        "pooling": POOLING,
        "command": command,
        "date": date.today().isoformat(),
        "bands": [_band(e, v, held) for e in ENGINES for v in VENDORS],
    }
