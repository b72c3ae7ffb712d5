"""The accuracy bench (python -m tools.bench_perf) on the measured rows: it runs, reports every
source, and the fitted model stays inside the issue's targets (median |error| <= 15 % on TPOT
and on tokens/s per GPU, <= 35 % on TTFT) over all usable rows."""

from __future__ import annotations

import statistics

import pytest

from tools import bench_perf
from tools.perf_rows import cases, errors, load_rows, predict


def test_the_bench_prints_every_source_and_the_skipped_rows(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert bench_perf.main([]) == 0
    out = capsys.readouterr().out
    assert "all rows" in out and "skipped" in out
    assert "NVIDIA aiconfigurator silicon_sample.csv" in out
    assert "no bundled config for MiniMaxAI/MiniMax-M2.5" in out


def test_median_errors_meet_the_targets() -> None:
    used, _ = cases(load_rows())
    tpot, ttft, tps = [], [], []
    for c in used:
        e = errors(c, predict(c))
        tpot += [e.tpot] if e.tpot is not None else []
        ttft += [e.ttft] if e.ttft is not None else []
        tps += [e.tps] if e.tps is not None else []
    assert statistics.median(tpot) <= 0.15
    assert statistics.median(tps) <= 0.15
    assert statistics.median(ttft) <= 0.35
