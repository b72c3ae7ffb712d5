"""Step 2 page: real numbers, and each slider moves the numbers it should."""

from __future__ import annotations

from apptest_util import assert_clean, metric_starting, open_app, state, texts

from engine.scenario import from_query
from engine.study import study

LLAMA_1GPU = {"model": "meta-llama/Meta-Llama-3.1-8B", "gpus": "1", "tp": "1"}


def test_deepseek_v3_bf16_is_70272_bytes_per_token_replicated_on_every_rank() -> None:
    at = open_app("kv_cache")
    assert metric_starting(at, "KV per token (one GPU at TP 8)") == "70,272 B"
    assert metric_starting(at, "KV per token, all 8 TP ranks") == "562,176 B"
    assert metric_starting(at, "KV per request at 32K") == "2.14 GiB"
    assert metric_starting(at, "Users that fit at 32K") == f"{study(state(at)).fit.users:,}" == "19"
    formulas = [c.value for c in at.code]
    assert any(
        "61 layers × [(512 latent + 64 RoPE) × 2 B (bfloat16) = 1,152 B/token" in f
        for f in formulas
    )
    assert len(at.get("plotly_chart")) == 3


def test_llama_3_1_8b_bf16_is_131072_and_fp8_halves_it() -> None:
    at = open_app("kv_cache", LLAMA_1GPU)
    assert metric_starting(at, "KV per token (one GPU)") == "131,072 B"
    at.selectbox(key="kv.dtype").set_value("fp8").run()
    assert_clean(at)
    assert metric_starting(at, "KV per token (one GPU)") == "65,536 B"
    assert at.query_params["kv"] == "fp8"


def test_the_context_slider_moves_per_request_bytes_and_users() -> None:
    at = open_app("kv_cache")
    at.select_slider(key="kv.context").set_value(131_072).run()
    assert_clean(at)
    assert metric_starting(at, "KV per request at 128K") == "8.58 GiB"
    st = study(state(at))
    assert metric_starting(at, "Users that fit at 128K") == f"{st.fit.users:,}"
    assert metric_starting(at, "KV per token (one GPU") == "70,272 B"  # per token does not move
    assert at.number_input(key="w.context").value == 131_072  # the sidebar follows
    assert at.query_params["ctx"] == "131072"


def test_the_tp_slider_splits_gqa_heads_but_not_the_mla_latent() -> None:
    at = open_app("kv_cache", {**LLAMA_1GPU, "gpus": "8"})
    at.select_slider(key="kv.tp").set_value(2).run()
    assert_clean(at)
    assert metric_starting(at, "KV per token (one GPU at TP 2)") == "65,536 B"
    assert metric_starting(at, "KV per token, all 2 TP ranks") == "131,072 B"
    at = open_app("kv_cache")
    at.select_slider(key="kv.tp").set_value(4).run()
    assert metric_starting(at, "KV per token (one GPU at TP 4)") == "70,272 B"


def test_the_users_slider_reaches_the_scenario_and_the_url() -> None:
    at = open_app("kv_cache")
    at.select_slider(key="kv.users").set_value(512).run()
    assert_clean(at)
    assert state(at).users == 512 and at.query_params["users"] == "512"
    assert study(state(at)).layout.dp == 8  # enough users for DP-attention


def test_memory_fraction_and_expert_parallel_move_kv_space() -> None:
    at = open_app("kv_cache")
    space = metric_starting(at, "KV space per GPU")
    at.select_slider(key="kv.mem").set_value(0.8).run()
    assert metric_starting(at, "KV space per GPU") != space
    assert state(at).memory_fraction == 0.8
    at.selectbox(key="kv.ep").set_value(False).run()
    assert_clean(at)
    assert state(at).ep is False and not study(state(at)).layout.ep


def test_sglang_numbers_are_shown_beside_vllm_where_they_differ() -> None:
    at = open_app("kv_cache", {"model": "Qwen/Qwen3-Next-80B-A3B-Thinking", "tp": "4", "gpus": "4"})
    assert "SGLang sizes this model differently" in texts(at)
    table = at.dataframe[-1].value
    differing = table[table["differs"] == "≠"]["metric"].tolist()
    assert "Constant state per request" in differing


def test_an_impossible_choice_shows_an_error_not_a_traceback() -> None:
    at = open_app(
        "kv_cache", {"model": "Qwen/Qwen3-Next-80B-A3B-Thinking", "gpus": "64", "tp": "64"}
    )
    assert any("tp" in e.value for e in at.error)
    assert at.select_slider(key="kv.tp").value == 64  # the controls stay, to fix it


def test_a_kv_dtype_the_model_cannot_use_is_an_error_naming_it_with_no_stale_numbers() -> None:
    at = open_app("kv_cache", {"kv": "fp8_ds_mla"})  # a DSA-only layout; DeepSeek-V3 has no indexer
    # the error names the field and the layout, in the reader's words
    assert any("kv_dtype" in e.value and "fp8_ds_mla" in e.value for e in at.error)
    assert not at.metric
    assert from_query({"kv": "fp8_ds_mla"}).scenario.kv_dtype == "fp8_ds_mla"


def test_a_dsa_model_offers_its_packed_layout() -> None:
    at = open_app("kv_cache", {"model": "deepseek-ai/DeepSeek-V3.2"})
    assert "fp8_ds_mla" in at.selectbox(key="kv.dtype").options
    at.selectbox(key="kv.dtype").set_value("fp8_ds_mla").run()
    assert_clean(at)
    assert metric_starting(at, "KV per token (one GPU") == f"{61 * (656 + 132):,} B"


def test_a_model_that_fits_nowhere_says_why_its_users_chart_is_empty() -> None:
    at = open_app(
        "kv_cache",
        {"model": "moonshotai/Kimi-K2-Instruct", "gpu": "H100", "gpus": "1", "users": "16"},
    )
    assert_clean(at)
    assert len(at.get("plotly_chart")) == 2  # the users chart is a message instead
    assert any("No users fit at any context" in i.value for i in at.info)
