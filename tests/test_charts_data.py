"""engine/charts_data.py: the numbers and series the pages draw."""

from __future__ import annotations

import pytest

from engine.diagnose import Options, diagnose
from engine.model.loader import load_catalog
from engine.present import charts_data as C
from engine.study import Study
from tests.study_util import run
from tools.lang_check import HANGUL


def dsv3(**kw: object) -> Study:
    args: dict[str, object] = {"tp": 8, "dp": 1, "gpus_per_node": 8, "users": 16, **kw}
    return run("deepseek-ai/DeepSeek-V3", **args)


def test_units_say_which_gigabyte() -> None:
    assert C.gib(2**30) == "1.00 GiB"
    assert C.gb(10**9) == "1.0 GB"
    assert C.size(141 * 10**9) == "131.32 GiB (141.0 GB)"
    assert C.tokens(32_768) == "32K" and C.tokens(1 << 20) == "1M" and C.tokens(1000) == "1,000"


def test_headline_numbers_carry_their_formulas() -> None:
    shown = C.kv_headline(dsv3())
    assert shown[0].value == "70,272 B"
    assert (
        "61 layers × [(512 latent + 64 RoPE) × 2 B (bfloat16) = 1,152 B/token" in shown[0].formula
    )
    assert shown[1].raw == 8 * 70_272
    assert shown[2].raw == 70_272 * 32_768


def test_the_stacked_series_add_up_to_bytes_per_request() -> None:
    d = diagnose(load_catalog("google/gemma-3-27b-it").config, Options(tp=1))
    grid = C.context_grid(131_072)
    series = C.kv_vs_context(d.kv, grid)
    assert len(series) == len(d.kv.groups)
    for i, ctx in enumerate(grid):
        assert sum(s.y[i] for s in series) == pytest.approx(d.kv.bytes_per_request(ctx))


def test_hybrid_state_is_constant_in_the_stack() -> None:
    d = diagnose(load_catalog("Qwen/Qwen3-Next-80B-A3B-Thinking").config, Options(tp=1))
    state = next(s for s in C.kv_vs_context(d.kv, (1024, 65_536)) if s.name.endswith("state"))
    assert state.y[0] == state.y[1] == d.kv.state_bytes_per_request


def test_users_vs_context_has_one_line_per_stored_dtype_and_falls_with_context() -> None:
    d = dsv3()
    dtypes = C.kv_dtype_options(d.config, "sm_90", "vllm")
    assert dtypes[:2] == ("auto", "bf16") and "fp8_ds_mla" not in dtypes
    series = C.users_vs_context(d, dtypes, (8192, 32_768, 131_072))
    assert [s.name for s in series] == [
        "auto / bf16 / fp16 (2 B/element)",
        "fp8 / fp8_e4m3 / fp8_e5m2 (1 B/element)",
    ]
    # the chart's point at the Study's context is the Study's own users
    assert series[0].y[1] == d.fit.users == 19
    assert all(s.y[0] >= s.y[1] >= s.y[2] for s in series)


def test_memory_breakdown_adds_up_to_the_gpu() -> None:
    d = dsv3()
    b = C.memory_breakdown(d)
    assert sum(s.bytes for s in b.segments) == d.fit.memory_per_gpu
    assert b.fits and b.users_served_per_instance == 16


def test_memory_breakdown_says_when_weights_do_not_fit() -> None:
    d = dsv3(tp=1, dp=1, gpus_per_node=1)
    assert not C.memory_breakdown(d).fits


def test_layer_strip_labels_dsa_and_moe() -> None:
    d = diagnose(load_catalog("deepseek-ai/DeepSeek-V3.2").config)
    strip = C.layer_strip(d.architecture)
    assert set(strip.mixers) == {"DSA (MLA + indexer)"}
    assert strip.counts(strip.ffns) == {"dense FFN": 3, "MoE": 58}


def test_engine_comparison_marks_the_rows_that_differ() -> None:
    d = run("Qwen/Qwen3-Next-80B-A3B-Thinking", tp=4, gpus_per_node=8)
    rows = {r.metric: r for r in C.engine_comparison(d)}
    assert rows["Constant state per request"].differs
    assert not rows["KV per token (one GPU)"].differs


def test_slider_options_include_the_current_value() -> None:
    assert 5000 in C.context_options(163_840, 5000)
    assert C.context_options(163_840, 5000)[-1] == 163_840
    assert C.parallel_options(8, 3) == (1, 2, 3, 4, 8)
    assert 40 in C.users_options(40)


def test_catalog_rows_cover_every_bundled_model() -> None:
    rows = C.catalog_rows()
    llama = next(r for r in rows if r.name == "meta-llama/Meta-Llama-3.1-8B")
    assert llama.kv_bytes_per_token == 131_072
    assert all(r.note == "" for r in rows)
    falcon = next(r for r in rows if r.name == "tiiuae/falcon-7b-instruct")
    assert falcon.max_context == 2048


def test_a_model_that_does_not_fit_shows_its_overflow_and_an_empty_chart_says_why() -> None:
    from engine.present.charts_data import memory_breakdown, nothing_fits, users_vs_context
    from engine.scenario import make_scenario
    from engine.study import study

    st = study(
        make_scenario(model="moonshotai/Kimi-K2-Instruct", gpu="H100", gpus_per_node=1, users=16)
    )
    b = memory_breakdown(st)
    weights = next(s for s in b.segments if s.bytes == st.fit.weights_per_gpu)
    assert weights.bytes > st.fit.usable_per_gpu  # not clipped to the usable memory
    assert b.total >= weights.bytes and b.overflow > 13
    assert nothing_fits(users_vs_context(st, ("auto",), (1024, 8192, 32768)))


def test_the_kv_stack_names_its_layer_groups_in_the_readers_language() -> None:
    d = diagnose(load_catalog("Qwen/Qwen3-Next-80B-A3B-Thinking").config, Options(tp=1))
    en = [s.name for s in C.kv_vs_context(d.kv, (1024,))]
    ko = [s.name for s in C.kv_vs_context(d.kv, (1024,), "ko")]
    assert any("state" in name for name in en)
    assert all(HANGUL.search(name) for name in ko), ko
