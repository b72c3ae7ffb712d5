"""Step 6, Measure: back-calculating KV bytes per token from engine logs and /metrics.

The log and metrics text below is written in the exact formats the engines print; each
fixture says where its line comes from. The numbers inside them are produced the way the
engines produce them (helpers below mirror the arithmetic), for three families:

* GQA    Llama-3.1-8B      32 layers x 8 KV heads x 128 x (K+V) x bf16 = 131,072 B/token (TP1)
* MLA    DeepSeek-V3       61 layers x (512 + 64) x bf16 = 70,272 B/token, replicated per TP rank
* hybrid Qwen3-Next-80B    12 full layers x 2 KV heads x 256 x (K+V) x bf16 = 24,576 B/token
                           + 36 GDN layers x 1,097,728 B = 39,518,208 B state per sequence
(../shared/engine-gt/vllm-kv-notes.md §8; vLLM 0.33.0's own numbers.)
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from engine.decision import Decision
from engine.diagnose import Options, diagnose
from engine.errors import InputError
from engine.measure.backcalc import (
    NOTE_STATE,
    BackcalcResult,
    EngineReading,
    backcalculate,
    family_kind,
    parse_engine_text,
    sizing_notes,
)
from engine.model.loader import load_model
from engine.text.words import say


def cli_main(argv: list[str], predict: Any) -> int:
    """``python -m engine backcalc`` with a stand-in prediction (a leading ``backcalc`` is
    accepted)."""
    from engine.cli import main

    args = argv[1:] if argv[:1] == ["backcalc"] else argv
    return main(["backcalc", *args], backcalc_predict=predict)


GIB = 1024**3

LLAMA_8B_BF16 = 131_072
DSV3_BF16 = 70_272
QWEN3_NEXT_ATTN_BF16 = 24_576
QWEN3_NEXT_STATE_BF16 = 39_518_208


# ---------------------------------------------------------------------------------------------
# How the engines turn pool bytes into the numbers they print
# ---------------------------------------------------------------------------------------------


def format_gib(nbytes: int) -> str:
    # vllm/utils/mem_utils.py format_gib: round(bytes / GiB, 2); SGLang prints f"{x / GB:.2f}"
    # with GB = 1024**3 (python/sglang/srt/mem_cache/memory_pool.py).
    return f"{nbytes / GIB:.2f}"


def vllm_pool(
    available: int,
    page_per_layer: int,
    layers_per_group: int,
    blocks_per_request: int,
    max_model_len: int,
) -> tuple[int, float]:
    """vllm/v1/core/kv_cache_utils.py: get_num_blocks, get_max_concurrency_for_kv_cache_config,
    and capacity tokens = int(max_concurrency * max_model_len)."""
    num_blocks = available // page_per_layer // layers_per_group
    concurrency = num_blocks / blocks_per_request
    return int(concurrency * max_model_len), concurrency


def vllm_log(
    available: int, tokens: int, max_model_len: int, concurrency: float, extra: str = ""
) -> str:
    # Line prefixes as vLLM's engine-core process prints them. Sources:
    #   'non-default args'           vllm/entrypoints/utils.py log_non_default_args
    #   'Available KV cache memory'  vllm/v1/worker/gpu_worker.py (logger.info_once)
    #   'GPU KV cache size' and 'Maximum concurrency'  vllm/v1/core/kv_cache_utils.py
    return (
        "(APIServer pid=1) INFO 08-21 10:00:01 [utils.py:253] non-default args: "
        f"{{'model_tag': 'm', 'max_model_len': {max_model_len}, "
        "'gpu_memory_utilization': 0.85}\n"
        "(EngineCore_DP0 pid=187) INFO 08-21 10:01:10 [gpu_model_runner.py:2653] Model loading "
        "took 14.99 GiB and 21.3 seconds\n"
        f"{extra}"
        "(EngineCore_DP0 pid=187) INFO 08-21 10:01:40 [gpu_worker.py:298] Available KV cache "
        f"memory: {format_gib(available)} GiB\n"
        "(EngineCore_DP0 pid=187) INFO 08-21 10:01:41 [kv_cache_utils.py:1087] GPU KV cache "
        f"size: {tokens:,} tokens\n"
        "(EngineCore_DP0 pid=187) INFO 08-21 10:01:41 [kv_cache_utils.py:1091] Maximum "
        f"concurrency for {max_model_len:,} tokens per request: {concurrency:.2f}x\n"
        "(APIServer pid=1) INFO 08-21 10:02:30 [api_server.py:1818] Starting vLLM API server 0 "
        "on http://0.0.0.0:8000\n"
    )


def sglang_mha_line(
    tokens: int, layers: int, kv_heads: int, head_dim: int, dtype_bytes: int, page_size: int = 1
) -> str:
    # MHATokenToKVPool: k_buffer/v_buffer per layer are (size + page_size, head_num, head_dim);
    # logs f"KV Cache is allocated. #tokens: {size}, K size: {k/GB:.2f} GB, V size: ..."
    # (python/sglang/srt/mem_cache/memory_pool.py).
    half = (tokens + page_size) * layers * kv_heads * head_dim * dtype_bytes
    return (
        f"[2026-08-21 10:01:41 TP0] KV Cache is allocated. #tokens: {tokens}, "
        f"K size: {format_gib(half)} GB, V size: {format_gib(half)} GB\n"
    )


def sglang_mla_line(
    tokens: int, layers: int, cell_elements: int, dtype_bytes: int, page_size: int = 1
) -> str:
    # MLATokenToKVPool: kv_buffer per layer is (size + page_size, 1, kv_lora_rank + rope);
    # logs f"KV Cache is allocated. #tokens: {size}, KV size: {kv_size / GB:.2f} GB".
    total = (tokens + page_size) * layers * cell_elements * dtype_bytes
    return (
        f"[2026-08-21 10:01:41 TP0] KV Cache is allocated. #tokens: {tokens}, "
        f"KV size: {format_gib(total)} GB\n"
    )


def sglang_log(pool_line: str, max_total: int, tp: int, extra: str = "") -> str:
    # 'Load weight end.' model_runner.py; 'max_total_num_tokens=...' managers/scheduler.py;
    # 'server_args=ServerArgs(...)' the launch dump (server_args.py).
    return (
        "[2026-08-21 10:00:01] server_args=ServerArgs(model_path='m', tp_size="
        f"{tp}, mem_fraction_static=0.85, kv_cache_dtype='auto', context_length=8192, "
        "enable_metrics=True)\n"
        "[2026-08-21 10:01:30 TP0] Load weight end. type=X, dtype=torch.bfloat16, "
        "avail mem=62.10 GB, mem usage=15.06 GB.\n"
        f"{extra}"
        f"{pool_line}"
        "[2026-08-21 10:01:42 TP0] Memory pool end. avail mem=8.31 GB\n"
        f"[2026-08-21 10:01:50 TP0] max_total_num_tokens={max_total}, "
        "chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=2048, "
        "context_len=8192, available_gpu_mem=8.31 GB\n"
        "[2026-08-21 10:02:10] The server is fired up and ready to roll!\n"
    )


# ---------------------------------------------------------------------------------------------
# GQA: Llama-3.1-8B, TP1, bf16
# ---------------------------------------------------------------------------------------------

LLAMA_AVAILABLE = int(49.87 * GIB) + 1_234_567  # what the worker measured; the log rounds
LLAMA_TOKENS, LLAMA_CONC = vllm_pool(
    LLAMA_AVAILABLE,
    page_per_layer=16 * 4096,
    layers_per_group=32,
    blocks_per_request=8192 // 16,
    max_model_len=8192,
)

# vllm:cache_config_info labels = CacheConfig.metrics_info() + engine
# (vllm/v1/metrics/loggers.py _log_info_cache_config; vllm/config/cache.py fields).
LLAMA_VLLM_METRICS = f"""\
# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig
# TYPE vllm:cache_config_info gauge
vllm:cache_config_info{{block_size="16",cache_dtype="auto",calculate_kv_scales="False",\
enable_prefix_caching="True",engine="0",gpu_memory_utilization="0.85",\
kv_cache_max_concurrency="{LLAMA_CONC}",kv_cache_memory_bytes="None",\
kv_cache_size_tokens="{LLAMA_TOKENS}",mamba_cache_dtype="auto",num_cpu_blocks="None",\
num_gpu_blocks="{LLAMA_TOKENS // 16}",prefix_caching_hash_algo="sha256",sliding_window="None"}} 1.0
# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{{engine="0",model_name="meta-llama/Llama-3.1-8B"}} 0.0123
# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{{engine="0",model_name="meta-llama/Llama-3.1-8B"}} 3.0
"""


def test_vllm_gqa_llama_8b_log_gives_131072_bytes_per_token() -> None:
    reading = parse_engine_text(vllm_log(LLAMA_AVAILABLE, LLAMA_TOKENS, 8192, LLAMA_CONC), None)
    assert reading.engine == "vllm"
    assert reading.tokens_capacity == LLAMA_TOKENS
    assert reading.kv_bytes_available == round(49.87 * GIB)
    assert reading.max_model_len == 8192
    assert reading.memory_fraction == 0.85
    result = backcalculate(reading, LLAMA_8B_BF16, tp=1, family="gqa")
    assert result.bytes_per_token_measured == pytest.approx(LLAMA_8B_BF16, rel=1e-3)
    assert result.ratio == pytest.approx(1.0, abs=1e-3)
    assert "Agrees" in result.explanation


def test_vllm_metrics_alone_give_capacity_and_usage_but_not_bytes() -> None:
    reading = parse_engine_text(None, LLAMA_VLLM_METRICS)
    assert reading.engine == "vllm"
    assert reading.tokens_capacity == LLAMA_TOKENS  # kv_cache_size_tokens label
    assert reading.num_gpu_blocks == LLAMA_TOKENS // 16
    assert reading.block_size == 16
    assert reading.cache_dtype == "auto"
    assert reading.usage_ratio == pytest.approx(0.0123)
    assert reading.kv_bytes_available is None  # kv_cache_memory_bytes="None": not user-capped
    with pytest.raises(InputError) as err:
        backcalculate(reading, LLAMA_8B_BF16, tp=1, family="gqa")
    assert err.value.field == "log"
    assert "Available KV cache memory" in err.value.expected


def test_vllm_log_and_metrics_merge() -> None:
    reading = parse_engine_text(
        vllm_log(LLAMA_AVAILABLE, LLAMA_TOKENS, 8192, LLAMA_CONC), LLAMA_VLLM_METRICS
    )
    assert reading.block_size == 16 and reading.usage_ratio == pytest.approx(0.0123)
    assert backcalculate(reading, LLAMA_8B_BF16, 1, "gqa").ratio == pytest.approx(1, abs=1e-3)


def test_older_vllm_metrics_without_size_tokens_fall_back_to_blocks_times_block_size() -> None:
    metrics = (
        'vllm:cache_config_info{block_size="16",cache_dtype="fp8",engine="0",'
        'gpu_memory_utilization="0.9",num_gpu_blocks="27000"} 1.0\n'
        'vllm:gpu_cache_usage_perc{engine="0"} 0.5\n'
    )
    reading = parse_engine_text("", metrics)
    assert reading.tokens_capacity == 27000 * 16
    assert reading.usage_ratio == 0.5
    assert any("not group-aware" in say(e) for e in reading.evidence)


def test_vllm_merged_capacity_line_of_newer_releases() -> None:
    # Newer vLLM prints one line: "GPU KV cache size: %s tokens, Maximum concurrency for %s
    # tokens per request: %.2fx" (kv_cache_utils.py update_kv_cache_capacity).
    log = (
        "INFO 08-21 10:01:40 [gpu_worker.py:298] Available KV cache memory: 4.27 GiB\n"
        "INFO 08-21 10:01:41 [kv_cache_utils.py:1087] GPU KV cache size: 34,952 tokens, "
        "Maximum concurrency for 8,192 tokens per request: 4.27x\n"
    )
    reading = parse_engine_text(log, None)
    assert reading.tokens_capacity == 34_952
    assert reading.max_model_len == 8192
    assert reading.max_concurrency == pytest.approx(4.27)


def test_sglang_gqa_llama_8b_k_and_v_sizes_give_131072_bytes_per_token() -> None:
    tokens = 370_000
    log = sglang_log(sglang_mha_line(tokens, 32, 8, 128, 2), tokens, tp=1)
    reading = parse_engine_text(log, None)
    assert reading.engine == "sglang"
    assert reading.tokens_capacity == tokens
    assert reading.memory_fraction == 0.85
    result = backcalculate(reading, LLAMA_8B_BF16, tp=1, family="gqa")
    assert result.ratio == pytest.approx(1.0, abs=2e-3)


def test_sglang_metrics_give_capacity_usage_and_used_tokens() -> None:
    # python/sglang/srt/metrics/collector.py gauges (server started with --enable-metrics).
    metrics = """\
# HELP sglang:token_usage The token usage.
# TYPE sglang:token_usage gauge
sglang:token_usage{model_name="meta-llama/Llama-3.1-8B"} 0.25
# HELP sglang:num_used_tokens The number of used tokens.
# TYPE sglang:num_used_tokens gauge
sglang:num_used_tokens{model_name="meta-llama/Llama-3.1-8B"} 92500.0
sglang:num_running_reqs{model_name="meta-llama/Llama-3.1-8B"} 12.0
"""
    reading = parse_engine_text(None, metrics)
    assert reading.engine == "sglang"
    assert reading.tokens_capacity == 370_000  # num_used_tokens / token_usage
    assert reading.used_tokens == 92_500
    with_capacity = metrics + 'sglang:max_total_num_tokens{model_name="m"} 371000.0\n'
    assert parse_engine_text(None, with_capacity).tokens_capacity == 371_000


# ---------------------------------------------------------------------------------------------
# MLA: DeepSeek-V3, TP8, bf16 KV. The latent is replicated on every rank, so the per-rank
# bytes are the full 70,272 B/token and a naive "divide by TP" estimate is 8x off.
# ---------------------------------------------------------------------------------------------

DSV3_AVAILABLE = int(38.5 * GIB) + 3_000_000
DSV3_TOKENS, DSV3_CONC = vllm_pool(
    DSV3_AVAILABLE,
    page_per_layer=64 * 1152,
    layers_per_group=61,
    blocks_per_request=8192 // 64,
    max_model_len=8192,
)


def test_vllm_mla_deepseek_v3_tp8_is_70272_bytes_per_rank() -> None:
    reading = parse_engine_text(vllm_log(DSV3_AVAILABLE, DSV3_TOKENS, 8192, DSV3_CONC), None)
    result = backcalculate(reading, DSV3_BF16, tp=8, family="mla")
    assert result.bytes_per_token_measured == pytest.approx(DSV3_BF16, rel=1e-3)
    assert result.ratio == pytest.approx(1.0, abs=2e-3)
    assert "replicated on every one of the 8 TP ranks" in result.explanation


def test_vllm_mla_naive_divide_by_tp_is_8x_off_and_says_why() -> None:
    reading = parse_engine_text(vllm_log(DSV3_AVAILABLE, DSV3_TOKENS, 8192, DSV3_CONC), None)
    result = backcalculate(reading, DSV3_BF16 / 8, tp=8, family="mla")
    assert result.ratio == pytest.approx(8.0, rel=2e-3)
    assert "Off by the TP size (8)" in result.explanation
    assert "replicated on every TP rank" in result.explanation


def test_sglang_mla_deepseek_v3_tp8_kv_size_line() -> None:
    tokens = 520_000
    log = sglang_log(sglang_mla_line(tokens, 61, 576, 2), tokens, tp=8)
    reading = parse_engine_text(log, None)
    assert reading.tp_size == 8
    naive = backcalculate(reading, DSV3_BF16 / 8, tp=8, family="mla")
    assert naive.ratio == pytest.approx(8.0, rel=3e-3)
    assert "--enable-dp-attention" in naive.explanation
    assert backcalculate(reading, DSV3_BF16, 8, "mla").ratio == pytest.approx(1.0, abs=3e-3)


def test_sglang_dsa_bf16_on_hopper_against_an_fp8_prediction_is_a_dtype_mismatch() -> None:
    # DeepSeek-V3.2 on H200: SGLang auto-picks bfloat16 KV (sglang-auto-notes.md); the
    # "Using KV cache dtype" line is model_runner.py's.
    tokens = 400_000
    log = sglang_log(
        sglang_mla_line(tokens, 61, 576, 2),
        tokens,
        tp=8,
        extra="[2026-08-21 10:01:40 TP0] Using KV cache dtype: torch.bfloat16\n",
    )
    reading = parse_engine_text(log, None)
    assert reading.cache_dtype == "bfloat16"
    result = backcalculate(reading, 61 * 576, tp=8, family="dsa")
    assert result.ratio == pytest.approx(2.0, rel=3e-3)
    assert "dtype mismatch" in result.explanation
    assert "bfloat16 on Hopper" in result.explanation


def test_vllm_dsa_fp8_stored_as_fp8_ds_mla_is_named() -> None:
    # DeepSeek-V3.2, --kv-cache-dtype fp8 on Hopper: FLASHMLA_SPARSE stores fp8_ds_mla, 656 B per
    # layer + 132 B indexer = 48,068 B/token, not the plain fp8 61 x (576 + 132) = 43,188
    # (vllm-kv-notes.md §3).
    available = int(30.0 * GIB)
    tokens, conc = vllm_pool(
        available,
        page_per_layer=64 * (656 + 132),
        layers_per_group=61,
        blocks_per_request=8192 // 64,
        max_model_len=8192,
    )
    reading = parse_engine_text(vllm_log(available, tokens, 8192, conc), None)
    result = backcalculate(reading, 43_188, tp=8, family="dsa")
    assert result.bytes_per_token_measured == pytest.approx(48_068, rel=1e-3)
    assert "fp8_ds_mla" in result.explanation


def test_vllm_gqa_heads_replicated_beyond_their_count_at_high_tp() -> None:
    # Llama-3.1-8B at TP16: 8 KV heads cannot split 16 ways, each rank keeps 1 head:
    # 32 x 1 x 128 x 2 x 2 = 16,384 B/token per rank, twice a naive 131,072 / 16.
    available = int(60.0 * GIB)
    tokens, conc = vllm_pool(
        available,
        page_per_layer=16 * 512,
        layers_per_group=32,
        blocks_per_request=8192 // 16,
        max_model_len=8192,
    )
    reading = parse_engine_text(vllm_log(available, tokens, 8192, conc), None)
    result = backcalculate(reading, 131_072 / 16, tp=16, family="gqa")
    assert result.ratio == pytest.approx(2.0, rel=1e-3)
    assert "num_kv_heads < TP" in result.explanation


def test_unexplained_ratio_lists_what_to_check() -> None:
    reading = parse_engine_text(vllm_log(LLAMA_AVAILABLE, LLAMA_TOKENS, 8192, LLAMA_CONC), None)
    result = backcalculate(reading, LLAMA_8B_BF16 / 1.37, tp=1, family="gqa")
    assert "Unexplained" in result.explanation


# ---------------------------------------------------------------------------------------------
# Hybrid: Qwen3-Next-80B-A3B, TP1, bf16. vLLM raises the attention block to 544 tokens so an
# attention page (544 x 2,048 B) covers one GDN layer's 1,097,728 B state (padded +1.5%), and
# counts capacity as max concurrency x max_model_len: 12 full + 36 GDN layers form 4 groups
# of 12; a request at 8,192 tokens needs cdiv(8192, 544) = 16 attention blocks + 3 state
# blocks (prefix caching off: 1 page per GDN group).
# ---------------------------------------------------------------------------------------------

QWEN_AVAILABLE = int(40.0 * GIB) + 2_000_000
QWEN_PAGE = 544 * 2048
QWEN_TOKENS, QWEN_CONC = vllm_pool(
    QWEN_AVAILABLE,
    page_per_layer=QWEN_PAGE,
    layers_per_group=12,
    blocks_per_request=16 + 3,
    max_model_len=8192,
)
# vllm/platforms/interface.py _align_hybrid_block_size logs both lines.
QWEN_HYBRID_LINES = (
    "(EngineCore_DP0 pid=187) INFO 08-21 10:00:50 [interface.py:606] Setting attention block "
    "size to 544 tokens to ensure that attention page size is >= mamba page size.\n"
    "(EngineCore_DP0 pid=187) INFO 08-21 10:00:50 [interface.py:636] Padding mamba page size "
    "by 1.49% to ensure that mamba page size and attention page size are exactly equal.\n"
)


def test_vllm_hybrid_qwen3_next_measures_more_than_attention_kv_and_explains_it() -> None:
    log = vllm_log(QWEN_AVAILABLE, QWEN_TOKENS, 8192, QWEN_CONC, extra=QWEN_HYBRID_LINES)
    reading = parse_engine_text(log, None)
    assert reading.hybrid_block_size == 544
    result = backcalculate(
        reading,
        QWEN3_NEXT_ATTN_BF16,
        tp=1,
        family="hybrid",
        state_bytes_per_sequence=QWEN3_NEXT_STATE_BF16,
    )
    # 12 x 1,114,112 B per block x 19 blocks / 8,192 tokens = 31,008 B/token.
    assert result.bytes_per_token_measured == pytest.approx(12 * QWEN_PAGE * 19 / 8192, rel=1e-3)
    assert result.ratio == pytest.approx(31_008 / 24_576, rel=1e-3)
    assert "block rounding" in result.explanation
    assert "8,704" in result.explanation  # 16 blocks x 544 tokens
    assert "recurrent state" in result.explanation
    # The state part: 3 GDN groups x 12 layers x one padded 1,114,112 B page = 1.015x the state.
    assert "1.01x" in result.explanation or "1.02x" in result.explanation


def test_sglang_hybrid_qwen3_next_kv_pool_holds_only_the_12_attention_layers() -> None:
    tokens = 1_200_000
    # 36 GDN layers: conv (3, 8192) bf16 + SSM (32, 128, 128) in float32, SGLang's default.
    slots = 200
    conv = slots * 36 * 3 * 8192 * 2
    ssm = slots * 36 * 32 * 128 * 128 * 4
    mamba = (
        f"[2026-08-21 10:01:41 TP0] Mamba Cache is allocated. max_mamba_cache_size: {slots}, "
        f"conv_state size: {format_gib(conv)}GB, ssm_state size: {format_gib(ssm)}GB\n"
    )
    log = sglang_log(sglang_mha_line(tokens, 12, 2, 256, 2), tokens, tp=1, extra=mamba)
    reading = parse_engine_text(log, None)
    assert reading.state_slots == 200
    result = backcalculate(reading, QWEN3_NEXT_ATTN_BF16, tp=1, family="hybrid")
    assert result.ratio == pytest.approx(1.0, abs=5e-3)
    assert "own Mamba pool" in result.explanation
    assert "float32" in result.explanation


def test_context_parallel_multiplier_is_undone_per_rank() -> None:
    log = vllm_log(DSV3_AVAILABLE, DSV3_TOKENS * 2, 8192, DSV3_CONC * 2).replace(
        "Available KV",
        "Multiplying the GPU KV cache size by the cp_world_size 2 (pcp_world_size 1 * "
        "dcp_world_size 2).\nAvailable KV",
    )
    reading = parse_engine_text(log, None)
    assert reading.context_parallel_size == 2
    result = backcalculate(reading, DSV3_BF16, tp=8, family="mla")
    assert result.ratio == pytest.approx(1.0, abs=2e-3)


def test_memory_fraction_different_from_the_plan_is_named() -> None:
    reading = parse_engine_text(vllm_log(LLAMA_AVAILABLE, LLAMA_TOKENS, 8192, LLAMA_CONC), None)
    result = backcalculate(reading, LLAMA_8B_BF16, 1, "gqa", planned_memory_fraction=0.92)
    assert "gpu_memory_utilization=0.85, not the planned 0.92" in result.explanation


def test_notes_from_the_sizing_step_are_appended_in_the_readers_language() -> None:
    reading = parse_engine_text(vllm_log(DSV3_AVAILABLE, DSV3_TOKENS, 8192, DSV3_CONC), None)
    kv = diagnose(load_model("deepseek-ai/DeepSeek-V3").config, Options(tp=8)).kv
    notes = sizing_notes(kv)
    assert [n.code for n in notes] == [g.formula().code for g in kv.groups]
    result = backcalculate(reading, DSV3_BF16, 8, "mla", notes=notes)
    assert result.explanation.endswith(say(notes[-1]))
    assert result.explain("ko").endswith(say(notes[-1], "ko"))
    assert say(notes[-1], "ko") != say(notes[-1])


def test_family_names_are_matched_loosely() -> None:
    assert family_kind("MLA") == "mla" and family_kind("dsa") == "mla"
    assert family_kind("hybrid_linear") == "hybrid" and family_kind("gdn") == "hybrid"
    assert family_kind("gqa") == "dense" and family_kind("???") == "other"


def test_result_json_keeps_the_seven_keys_and_adds_the_findings_codes() -> None:
    reading = parse_engine_text(vllm_log(LLAMA_AVAILABLE, LLAMA_TOKENS, 8192, LLAMA_CONC), None)
    data = json.loads(backcalculate(reading, LLAMA_8B_BF16, 1, "gqa").to_json())
    assert list(data) == [
        "engine",
        "tokens_capacity",
        "kv_bytes_available",
        "bytes_per_token_measured",
        "bytes_per_token_predicted",
        "ratio",
        "explanation",
        "explanation_codes",
    ]
    # the explanation is the findings' English sentences, each finding a code with its values
    codes = data["explanation_codes"]
    assert [c["code"] for c in codes][:2] == ["measure.compared", "measure.agrees"]
    assert data["explanation"] == " ".join(c["text"] for c in codes)
    assert codes[0]["params"]["ratio"] == pytest.approx(data["ratio"], abs=1e-3)


# ---------------------------------------------------------------------------------------------
# Bad input: garbage, empty, truncated
# ---------------------------------------------------------------------------------------------


def test_empty_input_names_log() -> None:
    with pytest.raises(InputError) as err:
        parse_engine_text("", None)
    assert err.value.field == "log"
    with pytest.raises(InputError):
        parse_engine_text(None, None)


@pytest.mark.parametrize(
    "garbage",
    [
        "hello world",
        "\x00\x01\x02 binary",
        "Traceback (most recent call last):\n  boom",
        '{"json": "not a log"}',
    ],
)
def test_garbage_log_says_which_line_was_expected(garbage: str) -> None:
    with pytest.raises(InputError) as err:
        parse_engine_text(garbage, None)
    assert err.value.field == "log"
    assert "GPU KV cache size: N tokens" in err.value.expected
    assert "KV Cache is allocated" in err.value.expected
    assert "\n" not in str(err.value)


def test_log_cut_before_the_capacity_line_is_truncated() -> None:
    full = vllm_log(LLAMA_AVAILABLE, LLAMA_TOKENS, 8192, LLAMA_CONC)
    cut = full[: full.index("GPU KV cache size")]
    with pytest.raises(InputError) as err:
        parse_engine_text(cut, None)
    assert err.value.field == "log"
    assert "GPU KV cache size: N tokens" in err.value.expected
    assert "truncated" in err.value.expected


def test_log_cut_inside_the_capacity_line_is_truncated() -> None:
    full = vllm_log(LLAMA_AVAILABLE, LLAMA_TOKENS, 8192, LLAMA_CONC)
    cut = full[: full.index("GPU KV cache size") + len("GPU KV cache size: 1,")]
    with pytest.raises(InputError) as err:
        parse_engine_text(cut, None)
    assert "cut off" in err.value.expected


def test_sglang_line_cut_before_v_size_is_truncated() -> None:
    line = sglang_mha_line(370_000, 32, 8, 128, 2)
    cut = line[: line.index(", V size")] + "\n"
    with pytest.raises(InputError) as err:
        parse_engine_text(cut, None)
    assert err.value.field == "log"
    assert "K size: a GB, V size: b GB" in err.value.expected


def test_sglang_log_without_pool_lines_is_truncated() -> None:
    full = sglang_log(sglang_mha_line(370_000, 32, 8, 128, 2), 370_000, tp=1)
    cut = full[: full.index("KV Cache is allocated")]
    with pytest.raises(InputError) as err:
        parse_engine_text(cut + "KV Cache", None)
    assert err.value.field == "log"


def test_garbage_metrics_name_metrics() -> None:
    with pytest.raises(InputError) as err:
        parse_engine_text(None, "<html>502 Bad Gateway</html>")
    assert err.value.field == "metrics"
    assert "vllm:" in err.value.expected and "sglang:" in err.value.expected


def test_metrics_cut_mid_sample_is_truncated() -> None:
    cut = LLAMA_VLLM_METRICS[: LLAMA_VLLM_METRICS.index("kv_cache_memory_bytes")]
    with pytest.raises(InputError) as err:
        parse_engine_text(None, cut)
    assert err.value.field == "metrics"
    assert "cut off" in err.value.expected


def test_metrics_from_the_other_engine_are_refused() -> None:
    with pytest.raises(InputError) as err:
        parse_engine_text(
            vllm_log(LLAMA_AVAILABLE, LLAMA_TOKENS, 8192, LLAMA_CONC),
            "sglang:token_usage 0.1\n",
        )
    assert err.value.field == "metrics"


def test_bad_prediction_and_tp_are_refused() -> None:
    reading = EngineReading("vllm", 1000, 10**9)
    with pytest.raises(InputError, match="predicted_bytes_per_token"):
        backcalculate(reading, 0.0, 1, "gqa")
    with pytest.raises(InputError, match="tp"):
        backcalculate(reading, 1.0, 0, "gqa")
    assert math.isclose(backcalculate(reading, 10**6, 1, "gqa").ratio, 1.0)


# ---------------------------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------------------------


def _predict(source: str, tp: int) -> tuple[float, str, list[Decision]]:
    if source != "deepseek-ai/DeepSeek-V3":
        raise InputError("source", f"a known model; got {source!r}")
    return float(DSV3_BF16), "mla", [NOTE_STATE(bytes=1)]


def test_cli_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "server.log"
    log.write_text(vllm_log(DSV3_AVAILABLE, DSV3_TOKENS, 8192, DSV3_CONC))
    code = cli_main(
        ["backcalc", "deepseek-ai/DeepSeek-V3", "--log", str(log), "--tp", "8", "--json"],
        _predict,
    )
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    assert data["engine"] == "vllm"
    assert data["tokens_capacity"] == DSV3_TOKENS
    assert data["ratio"] == pytest.approx(1.0, abs=2e-3)


def test_cli_text_with_metrics(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "server.log"
    log.write_text(vllm_log(LLAMA_AVAILABLE, LLAMA_TOKENS, 8192, LLAMA_CONC))
    metrics = tmp_path / "metrics.txt"
    metrics.write_text(LLAMA_VLLM_METRICS)

    def predict(source: str, tp: int) -> tuple[float, str, list[Decision]]:
        return float(LLAMA_8B_BF16), "gqa", []

    assert cli_main(["m", "--log", str(log), "--metrics", str(metrics)], predict) == 0
    out = capsys.readouterr().out
    assert "ratio" in out and "Agrees" in out


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (["deepseek-ai/DeepSeek-V3", "--log", "/nonexistent/server.log"], "log"),
        (["deepseek-ai/DeepSeek-V3", "--log", "GARBAGE"], "log"),
        (["deepseek-ai/DeepSeek-V3", "--log", "LOG", "--tp", "eight"], "--tp"),
        (["deepseek-ai/DeepSeek-V3"], "arguments"),
        (["other/model", "--log", "LOG"], "source"),
    ],
)
def test_cli_bad_input_is_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], field: str
) -> None:
    (tmp_path / "garbage.log").write_text("nothing useful here\n")
    (tmp_path / "ok.log").write_text(vllm_log(DSV3_AVAILABLE, DSV3_TOKENS, 8192, DSV3_CONC))
    args = [
        str(tmp_path / "garbage.log")
        if a == "GARBAGE"
        else str(tmp_path / "ok.log")
        if a == "LOG"
        else a
        for a in args
    ]
    assert cli_main(args, _predict) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"error: {field}")
    assert "Traceback" not in captured.err


def test_result_is_a_frozen_dataclass() -> None:
    reading = EngineReading("sglang", 1000, 10**9)
    result = backcalculate(reading, 10**6, 1, "gqa")
    assert isinstance(result, BackcalcResult)
    with pytest.raises(AttributeError):
        result.ratio = 2.0  # type: ignore[misc]
