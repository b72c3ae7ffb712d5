"""data/perf/added.jsonl: more published, measured serving runs, each in measured.jsonl's schema
(plus ``launch_flags``), each quoting its source, none repeating a measured.jsonl run, and every
figure one its quote prints (see data/perf/README.md, "Added runs")."""

from __future__ import annotations

import json
import math
import re
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict, ValidationError

from engine.rules import DATA_DIR

ADDED = DATA_DIR / "perf" / "added.jsonl"
MEASURED = DATA_DIR / "perf" / "measured.jsonl"

Num = int | float | None
# the measured figures, each copied from the row's quote (ms, tokens/s)
FIGURES = (
    "output_tps_total", "output_tps_per_gpu", "total_tps", "total_tps_per_gpu", "input_tps_per_gpu",
    "tpot_mean_ms", "tpot_median_ms", "tpot_p99_ms", "itl_mean_ms", "itl_median_ms", "itl_p99_ms",
    "ttft_mean_ms", "ttft_median_ms", "ttft_p99_ms", "per_user_tps", "e2el_mean_ms",
)  # fmt: skip


class Row(BaseModel):
    """One row of measured.jsonl's schema: every key present, each of its type."""

    model_config = ConfigDict(extra="forbid", strict=True)

    id: str
    source: str
    source_ref: str
    source_date: str | None
    trust: str
    model: str
    weight_precision: str | None
    kv_cache_precision: str | None
    gpu: str
    gpu_count: int | None
    nodes: int | str | None
    engine: str | None
    engine_version: str | None
    tp: int | None
    dp: int | None
    ep: int | None
    pp: int | None
    dp_attention: bool | None
    disaggregated: bool | None
    prefill_layout: str | None
    decode_layout: str | None
    spec_decoding: str | None
    isl: int | None
    osl: int | None
    concurrency: int | float | str | None
    request_rate: str | None
    num_prompts: int | None
    dataset: str | None
    output_tps_total: Num
    output_tps_per_gpu: Num
    total_tps: Num
    total_tps_per_gpu: Num
    input_tps_per_gpu: Num
    tpot_mean_ms: Num
    tpot_median_ms: Num
    tpot_p99_ms: Num
    itl_mean_ms: Num
    itl_median_ms: Num
    itl_p99_ms: Num
    ttft_mean_ms: Num
    ttft_median_ms: Num
    ttft_p99_ms: Num
    per_user_tps: Num
    e2el_mean_ms: Num
    units_note: str
    completeness: str
    missing_conditions: str
    notes: str | None
    launch_flags: str | None  # the one key added.jsonl adds
    quote: str


def _read(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


@cache
def added() -> tuple[dict[str, Any], ...]:
    return tuple(_read(ADDED))


@cache
def measured() -> tuple[dict[str, Any], ...]:
    return tuple(_read(MEASURED))


def _close(a: Any, b: Any, tol: float) -> bool:
    if not isinstance(a, int | float) or not isinstance(b, int | float) or not b:
        return False
    return abs(a - b) <= tol * abs(b)


def same_run(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """One run: the same lengths and concurrency, and the same TPOT and TTFT (mean or median)."""
    if (a["isl"], a["osl"], a["concurrency"]) != (b["isl"], b["osl"], b["concurrency"]):
        return False
    return _one_of(a, b, "tpot") and _one_of(a, b, "ttft")


def _one_of(a: dict[str, Any], b: dict[str, Any], metric: str) -> bool:
    stats = (f"{metric}_mean_ms", f"{metric}_median_ms")
    return any(_close(a[x], b[y], 2e-4) for x in stats for y in stats)


NUMBER = re.compile(r"-?\d[\d,]*\.?\d*(?:[eE][-+]?\d+)?")


def quoted_numbers(quote: str) -> list[float]:
    found = (n.replace(",", "") for n in NUMBER.findall(quote))
    return [float(n) for n in found if n.strip(".-")]


def printed(value: float, numbers: list[float]) -> bool:
    """The figure is one the quote prints: as printed, or in seconds where the source keeps s."""
    return any(
        math.isclose(value, n, rel_tol=1e-9) or math.isclose(value, n * 1e3, rel_tol=1e-9)
        for n in numbers
    )


def test_the_schema_is_measured_jsonls_keys_plus_launch_flags_and_fits_every_measured_row() -> None:
    keys = list(measured()[0])
    assert list(Row.model_fields) == [*keys[:-1], "launch_flags", keys[-1]]
    for row in measured():
        Row.model_validate({**row, "launch_flags": None})
    with pytest.raises(ValidationError):  # a condition of another type is refused
        Row.model_validate({**measured()[0], "launch_flags": None, "tp": "8"})


def test_every_added_row_has_every_key_each_of_its_type() -> None:
    assert len(added()) >= 40
    for row in added():
        Row.model_validate(row)


def test_ids_are_unique_and_none_is_a_measured_rows() -> None:
    ids = [r["id"] for r in added()]
    assert len(ids) == len(set(ids))
    assert not set(ids) & {r["id"] for r in measured()}


def test_no_added_row_repeats_a_measured_run_or_another_added_one() -> None:
    rows = added()
    for m in measured():
        assert not [r["id"] for r in rows if same_run(r, m)], m["id"]
    quotes = [r["quote"] for r in rows]
    assert len(quotes) == len(set(quotes))
    for i, a in enumerate(rows):
        assert not [b["id"] for b in rows[i + 1 :] if same_run(a, b)], a["id"]


def test_every_row_quotes_its_source_and_says_where_to_find_it() -> None:
    for r in added():
        assert len(r["quote"].strip()) >= 20, r["id"]
        assert re.search(r"github|https?://|#\d+", r["source_ref"]), r["id"]
        assert r["trust"] and r["source"], r["id"]


def test_every_measured_figure_is_one_its_quote_prints() -> None:
    for r in added():
        numbers = quoted_numbers(r["quote"])
        for field in FIGURES:
            if r[field] is not None:
                assert printed(r[field], numbers), (r["id"], field, r[field])


def test_lengths_concurrency_and_layout_sizes_are_positive_where_given() -> None:
    for r in added():
        for field in ("isl", "osl", "gpu_count", "tp", "dp", "ep", "pp", "num_prompts"):
            assert r[field] is None or r[field] > 0, (r["id"], field)
        if isinstance(r["concurrency"], int | float):
            assert r["concurrency"] > 0, r["id"]
        for field in FIGURES:
            assert r[field] is None or r[field] > 0, (r["id"], field)


def test_a_layouts_gpus_are_tp_times_dp_times_pp_and_dp_attention_has_ranks() -> None:
    # added.jsonl's convention: tp is the attention tensor-parallel size within a DP rank
    for r in added():
        if None not in (r["gpu_count"], r["tp"], r["dp"], r["pp"]) and not r["disaggregated"]:
            assert r["gpu_count"] == r["tp"] * r["dp"] * r["pp"], r["id"]
        if r["dp_attention"]:
            assert (r["dp"] or 1) > 1, r["id"]


PAIRS = (("output_tps_total", "output_tps_per_gpu"), ("total_tps", "total_tps_per_gpu"))


def test_per_gpu_throughput_is_the_total_over_the_gpus_where_both_are_printed() -> None:
    checked = 0
    for r in added():
        gpus = r["gpu_count"]
        for total, per_gpu in PAIRS:
            if gpus and r[total] is not None and r[per_gpu] is not None:
                assert r[per_gpu] == pytest.approx(r[total] / gpus, rel=0.01), (r["id"], per_gpu)
                checked += 1
    # each InferenceX row's output tokens/s per GPU is its concurrency's tokens over its E2E time
    for r in added():
        if r["source"].startswith("InferenceX") and r["output_tps_per_gpu"] and r["e2el_mean_ms"]:
            # lengths drawn in [0.8, 1] x OSL: 0.9 x OSL on average
            implied = r["concurrency"] * 0.9 * r["osl"] / (r["e2el_mean_ms"] / 1e3) / r["gpu_count"]
            assert 0.75 < r["output_tps_per_gpu"] / implied < 1.25, r["id"]
            checked += 1
    assert checked > 0


CONDITIONS = ("weight_precision", "gpu", "gpu_count", "engine", "tp", "isl", "osl", "dataset")


def test_a_complete_row_states_its_conditions_and_a_latency() -> None:
    complete = [r for r in added() if r["completeness"] == "full"]
    assert complete
    for r in complete:
        for field in CONDITIONS:
            assert r[field] is not None, (r["id"], field)
        assert isinstance(r["concurrency"], int), r["id"]
        assert r["disaggregated"] is False and str(r["spec_decoding"]).startswith("none"), r["id"]
        assert r["tpot_mean_ms"] or r["tpot_median_ms"], r["id"]
        assert r["ttft_mean_ms"] or r["ttft_median_ms"], r["id"]


def test_the_duplicate_check_finds_a_run_copied_from_measured_jsonl() -> None:
    # the check the data is held to can fail: a measured row under another id is a repeat
    row = next(r for r in measured() if r["tpot_mean_ms"] and r["ttft_mean_ms"] and r["isl"])
    copy = {**row, "id": "copy"}
    assert same_run(copy, row)
    slower = {k: row[k] * 1.01 if row[k] else row[k] for k in ("tpot_mean_ms", "tpot_median_ms")}
    assert not same_run({**copy, **slower}, row)
    assert printed(12.5, quoted_numbers("Mean TPOT (ms): 12.50")) and printed(12.5, [0.0125])
    assert not printed(12.6, quoted_numbers("Mean TPOT (ms): 12.50"))
