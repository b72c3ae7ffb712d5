"""How sure a speed is: each figure's range is the figure over exp() of the model's held-out
errors' quantiles (data/perf.yaml ranges, per engine and vendor stack), and two speeds whose
ranges overlap are a tie."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from engine.engines.memory import Split
from engine.perf import estimate, speeds_overlap
from engine.perf.factors import perf_facts
from engine.perf.ranges import ErrorBand, Quantiles
from tests.test_perf_estimate import inputs
from tools import fit_perf, perf_ranges


def _band(low: float, high: float) -> ErrorBand:
    q = Quantiles(low=low, high=high)
    return ErrorBand(
        engine="vllm", vendor="nvidia", rows=40, pooled="own", ttft=q, tpot=q, tps_per_gpu=q
    )


def test_a_model_that_runs_fast_puts_the_measurement_above_its_figure() -> None:
    # errors log(pred / measured) between -0.1 and +0.3: measured = pred / exp(error)
    low, high = _band(-0.1, 0.3).around("tpot", 20.0)
    assert low == pytest.approx(20 / math.exp(0.3))  # 14.8 ms
    assert high == pytest.approx(20 / math.exp(-0.1))  # 22.1 ms


def test_a_range_always_holds_its_own_figure() -> None:
    # every held-out error positive (the model ran fast on every run): the quantiles alone
    # would put the measurement at 14.8 to 18.1 ms, below the 20 ms figure shown beside it
    low, high = _band(0.1, 0.3).around("tpot", 20.0)
    assert low == pytest.approx(20 / math.exp(0.3))
    assert high == 20.0
    low, high = _band(-0.4, -0.2).around("ttft", 100.0)
    assert (low, high) == (100.0, pytest.approx(100 * math.exp(0.4)))


def test_the_quantile_is_linear_between_order_statistics() -> None:
    assert perf_ranges.quantile([0.0, 1.0, 2.0, 3.0, 4.0], 0.1) == pytest.approx(0.4)
    assert perf_ranges.quantile([3.0, 1.0], 0.5) == pytest.approx(2.0)


def test_a_vendor_with_too_few_held_out_runs_takes_its_engines_runs() -> None:
    # the held-out runs are the recorded fit's rows (each left out with its source)
    ranges = perf_facts().ranges
    rows = fit_perf.recorded_rows()
    for band in ranges.bands:
        own = sum(
            1 for c in rows if c.engine == band.engine and fit_perf.vendor_of(c) == band.vendor
        )
        assert (band.pooled == "own") == (own >= ranges.min_rows), band
        assert band.rows >= min(ranges.min_rows, len(rows))


def test_every_speed_carries_its_range_from_its_engine_and_vendor() -> None:
    s = estimate(
        inputs("meta-llama/Meta-Llama-3.1-8B", "H100", "sglang"), Split(1), 1, 8, 1024, 256
    )
    band = perf_facts().ranges.band("sglang", "nvidia")
    assert s.band == band
    assert s.tpot_ms_range == pytest.approx(
        (s.tpot_ms / math.exp(band.tpot.high), s.tpot_ms / math.exp(band.tpot.low))
    )
    lo, hi = s.output_tokens_per_s_per_gpu_range
    assert lo == pytest.approx(s.output_tokens_per_s_per_gpu / math.exp(band.tps_per_gpu.high))
    assert hi == pytest.approx(s.output_tokens_per_s_per_gpu / math.exp(band.tps_per_gpu.low))


def test_speeds_whose_ranges_overlap_are_a_tie() -> None:
    s = estimate(inputs("meta-llama/Meta-Llama-3.1-8B", "H100", "vllm"), Split(1), 1, 8, 1024, 256)
    band = _band(-0.1, 0.1)  # each range spans +-10 %
    a = replace(s, band=band, tpot_ms=10.0)
    assert speeds_overlap(a, replace(a, tpot_ms=11.5), "tpot")  # 9.0-11.1 and 10.4-12.7
    assert not speeds_overlap(a, replace(a, tpot_ms=13.0), "tpot")  # 11.8-14.4
    assert speeds_overlap(a, replace(a, tpot_ms=13.0), "ttft")  # the same TTFT
