"""Step 6, Measure: the torch micro-kernels, on CPU, assert their numbers (never their timings).

Dims come from bundled configs (presets are catalog models). Expected values are the reference
text's and vLLM's own: DeepSeek-V3.2 bf16 = 61 x (1,152 + 132) = 78,324 B/token; Llama-3.1-8B
= 131,072 B/token; Qwen3-Next's GDN layer state is 1,097,728 B and vLLM raises its attention
block to 544 tokens; EPLB takes a ~7x hot expert to a balanced placement; IndexShare over 61
layers with a share of 4 calls the indexer 16 times.
"""

from __future__ import annotations

import json
import math
import time

import pytest

from engine.errors import InputError
from engine.measure.kernels import (
    CHECK_NAMES,
    CheckResult,
    dims_from_json,
    preset_dims,
    run_all,
    runner,
)
from engine.measure.kernels import __main__ as kernels_cli
from engine.measure.kernels.dims import Sizes
from engine.present.measure_words import check_dict, check_note

Rows = dict[str, CheckResult]


@pytest.fixture(scope="module")
def default_run() -> tuple[Rows, list[tuple[int, int, str]], float]:
    calls: list[tuple[int, int, str]] = []
    start = time.perf_counter()
    rows = run_all("cpu", preset_dims(), lambda i, n, name: calls.append((i, n, name)))
    elapsed = time.perf_counter() - start
    return {r.name: r for r in rows}, calls, elapsed


@pytest.fixture(scope="module")
def rows(default_run: tuple[Rows, list[tuple[int, int, str]], float]) -> Rows:
    return default_run[0]


@pytest.fixture(scope="module")
def llama_rows() -> Rows:
    """The GQA side: Llama-3.1-8B's 8 KV heads of 128 (an MLA model caches no per-head K/V)."""
    checks = ["paged_kv_layout", "decode_bandwidth", "kv_cat_vs_prealloc"]
    return {r.name: r for r in run_all("cpu", preset_dims("llama-3.1-8b"), only=checks)}


@pytest.fixture(scope="module")
def qwen_next_rows() -> Rows:
    """The hybrid side: Qwen3-Next's 12 attention + 36 Gated DeltaNet layers."""
    checks = ["paged_kv_layout", "prefix_caching"]
    return {r.name: r for r in run_all("cpu", preset_dims("qwen3-next-80b"), only=checks)}


def test_all_seven_checks_run_on_cpu_well_under_a_minute(
    default_run: tuple[Rows, list[tuple[int, int, str]], float],
) -> None:
    rows, calls, elapsed = default_run
    assert elapsed < 60
    assert [c[2] for c in calls] == [*CHECK_NAMES, "done"]
    assert calls[0] == (0, 7, "paged_kv_layout") and calls[-1] == (7, 7, "done")
    assert {r.check for r in rows.values()} == set(CHECK_NAMES)
    failed = [f"{r.name}: {check_note(r)}" for r in rows.values() if not r.passed]
    assert not failed


def test_rows_have_the_public_keys(rows: Rows) -> None:
    row = check_dict(rows["paged_bytes_per_token"])
    assert {"name", "passed", "measured", "expected", "unit"} <= set(row)
    json.dumps([check_dict(r) for r in rows.values()], allow_nan=False)


# 1. Paged KV layout ---------------------------------------------------------------------------


def test_paged_pools_allocate_exactly_the_engines_groups(rows: Rows) -> None:
    # 4,096 tokens = 64 blocks of 64; 61 layers x 64 x 64 x 1,152 B (latent 512 + 64, bf16).
    mla = rows["paged_mla_bytes"]
    assert mla.measured == mla.expected == 61 * 64 * 64 * 1152
    idx = rows["paged_indexer_bytes"]
    assert idx.measured == idx.expected == 61 * 64 * 64 * 132  # fp8 key 128 + fp32 scale / 128
    per_token = rows["paged_bytes_per_token"]
    assert per_token.measured == per_token.expected == 78_324  # DeepSeek-V3.2 bf16


def test_qwen3_next_hybrid_block_is_544_tokens(qwen_next_rows: Rows) -> None:
    rows = qwen_next_rows
    assert check_note(rows["paged_full_bytes"]).startswith("12 layers")
    # 24,576 B/token in 544-token blocks: 4,096 tokens take 8 blocks = 4,352 tokens of pages.
    per_token = rows["paged_bytes_per_token"]
    assert per_token.expected == 24_576 and per_token.passed
    assert per_token.measured == 24_576 * 8 * 544 / 4096
    assert rows["gdn_state_bytes_per_layer"].measured == 1_097_728
    assert rows["gdn_state_bytes_per_layer"].passed
    assert rows["hybrid_block_matches_engine"].measured == 544
    assert rows["hybrid_block_matches_engine"].passed
    assert rows["hybrid_attention_block_tokens"].measured == 544
    assert rows["hybrid_state_page_padding"].measured == pytest.approx(544 * 2048 / 1_097_728 - 1)


def test_llama_gqa_pool_is_131072_bytes_per_token(llama_rows: Rows) -> None:
    assert llama_rows["paged_bytes_per_token"].measured == 131_072


# 2. MLA ---------------------------------------------------------------------------------------


def test_mla_absorption_equals_naive_decompression(rows: Rows) -> None:
    assert rows["mla_absorbed_matches_naive"].measured <= 1e-4


def test_mla_naive_touches_33x_the_bytes_at_cpu_dims(rows: Rows) -> None:
    # CPU dims: 16 heads, latent 64 + rope 16, nope 32, v 32:
    # 1 + 2 x 16 x (32 + 16 + 32) / (64 + 16) = 33.
    ratio = rows["mla_bytes_naive_over_absorbed"]
    assert ratio.measured == ratio.expected == 33


def test_mla_speedup_is_reported_with_its_gpu_target(rows: Rows) -> None:
    speedup = rows["mla_absorbed_speedup"]
    assert speedup.expected == 3.0 and speedup.measured > 0
    assert "GPU target" in check_note(speedup)


# 3. Decode bandwidth ---------------------------------------------------------------------------


def test_decode_reads_exactly_the_kv_bytes(rows: Rows, llama_rows: Rows) -> None:
    sizes = Sizes.cpu()
    gqa = llama_rows["gqa_decode_kv_bytes"]
    # CPU dims: 4 KV heads x 64, fp32: requests x tokens x (K+V) x heads x dim x 4 B.
    assert gqa.measured == sizes.concurrency * sizes.context * 2 * 4 * 64 * 4
    mla = rows["mla_decode_kv_bytes"]
    assert mla.measured == sizes.concurrency * sizes.context * (64 + 16) * 4
    assert "gqa_decode_kv_bytes" not in rows  # an MLA model caches no per-head K/V
    for name in ("copy_bandwidth_gbps", "mla_decode_gbps"):
        assert rows[name].measured > 0
    assert llama_rows["gqa_decode_gbps"].measured > 0
    step, roofline = rows["decode_step_ms_at_concurrency"], rows["decode_step_roofline_ms"]
    assert step.measured > 0 and roofline.measured > 0


def test_catalog_bandwidth_is_reported_against_the_copy() -> None:
    dims = preset_dims("llama-3.1-8b")
    rows = run_all("cpu", dims, only=["decode_bandwidth"], catalog_gbps=4800)
    copy = next(r for r in rows if r.name == "copy_bandwidth_gbps")
    assert copy.expected == 4800 and "of the catalog" in check_note(copy)


# 4. DSA -----------------------------------------------------------------------------------------


def test_dsa_sparse_attention_equals_dense_masked_to_top_k(rows: Rows) -> None:
    assert rows["dsa_sparse_matches_masked_dense"].measured <= 1e-5


def test_dsa_attention_reads_k_while_the_indexer_reads_n(rows: Rows) -> None:
    assert rows["dsa_sparse_bytes_flat_in_n"].measured == 1.0
    assert rows["dsa_indexer_bytes_linear_in_n"].measured == 8192 / 512


def test_dsa_indexer_dominates_at_one_million_tokens(rows: Rows) -> None:
    # top-2048 MLA: 2 x 2048 x 128 heads x (2 x 512 + 64) FLOPs; indexer 2 x 64 x 128 per token.
    assert rows["dsa_indexer_crossover_tokens"].measured == 34_816
    assert rows["dsa_indexer_share_of_flops_1m"].measured > 0.95
    assert (
        rows["dsa_flops_dense_over_dsa_1048576"].measured
        > rows["dsa_flops_dense_over_dsa_8192"].measured
    )


def test_indexshare_cuts_indexer_calls_by_the_share_factor(rows: Rows) -> None:
    assert rows["indexshare_indexer_calls"].measured == 16  # ceil(61 / 4)
    assert rows["indexshare_call_reduction"].measured == pytest.approx(61 / 16)
    assert rows["indexshare_attention_flops_reduction_1m"].measured > 3


# 5. Prefix caching -----------------------------------------------------------------------------


def test_attention_prefix_kv_is_bit_identical(rows: Rows) -> None:
    assert rows["attention_prefix_kv_bit_identical"].measured == 1.0


def test_gdn_chunked_state_is_close_but_not_bit_identical(qwen_next_rows: Rows) -> None:
    assert qwen_next_rows["gdn_state_bit_identical"].measured == 0.0
    assert 0 < qwen_next_rows["gdn_state_max_rel_diff"].measured <= 1e-4


def test_a_model_without_gated_deltanet_skips_the_gdn_rows(rows: Rows) -> None:
    assert rows["gdn_skipped"].passed and "gdn_state_bit_identical" not in rows


# 6. MoE routing ----------------------------------------------------------------------------------


def test_eplb_reduces_the_gpu_imbalance(rows: Rows) -> None:
    hot = rows["moe_expert_max_over_mean"].measured
    assert 5 < hot < 10  # the playbook's hottest expert: 7.2x the mean
    before = rows["moe_gpu_max_over_mean_before"].measured
    after = rows["moe_gpu_max_over_mean_after_eplb"].measured
    assert after < before and after < 1.1
    assert rows["moe_hottest_slot_over_mean_after_eplb"].measured < hot
    assert rows["moe_tokens_conserved"].measured == Sizes.cpu().moe_tokens * 8
    assert rows["moe_redundant_weight_overhead"].measured == 32 / 256


# 7. torch.cat vs preallocated --------------------------------------------------------------------


def test_cat_copies_quadratic_bytes_prealloc_linear(llama_rows: Rows) -> None:
    rows = llama_rows
    n, row = Sizes.cpu().cat_steps, 2 * 4 * 64 * 4  # CPU dims: K+V, 4 heads x 64, fp32
    assert rows["kvcat_naive_bytes_copied"].measured == row * n * (n + 1) // 2
    assert rows["kvcat_prealloc_bytes_copied"].measured == row * n
    assert rows["kvcat_naive_growth_2n_over_n"].measured == pytest.approx(
        2 * n * (2 * n + 1) / (n * (n + 1))
    )
    assert rows["kvcat_contents_equal"].measured == 1.0


def test_mla_cat_row_is_one_latent(rows: Rows) -> None:
    n, row = Sizes.cpu().cat_steps, (64 + 16) * 4  # CPU dims: latent 64 + RoPE 16, fp32
    assert rows["kvcat_prealloc_bytes_copied"].measured == row * n


# Runner, dims and CLI ----------------------------------------------------------------------------


def test_dense_model_skips_mla_dsa_and_moe() -> None:
    names = {
        r.name
        for r in run_all(
            "cpu",
            preset_dims("llama-3.1-70b"),
            only=["mla_absorption", "dsa_indexer", "moe_routing"],
        )
    }
    assert names == {"mla_skipped", "dsa_skipped", "moe_skipped"}


def test_a_check_that_raises_becomes_one_failed_row(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(ctx: object) -> list[CheckResult]:
        raise RuntimeError("out of memory")

    monkeypatch.setattr(runner, "CHECKS", (("broken", broken),))
    (row,) = run_all("cpu", preset_dims("llama-3.1-8b"))
    assert row.name == "broken_error" and not row.passed and "out of memory" in check_note(row)


def test_model_dims_json_overrides_a_preset() -> None:
    dims = dims_from_json('{"preset": "llama-3.1-70b", "num_layers": 40}')
    assert dims.num_layers == 40 and dims.num_heads == 64 and dims.kv_lora_rank == 0
    assert dims.kv is None  # the engine's sizing describes the 80-layer config, not these dims


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ('{"num_layers": -1}', "model-dims.num_layers"),
        ('{"num_heads": 128, "num_kv_heads": 7}', "model-dims.num_kv_heads"),
        ('{"unknown_field": 1}', "model-dims.unknown_field"),
        ('{"preset": "gpt-9"}', "model-dims.preset"),
        ('{"num_layers": "61"}', "model-dims.num_layers"),
        ('{"num_layers": 10000000}', "model-dims.num_layers"),
        ("[1, 2]", "model-dims"),
        ("{not json", "model-dims"),
    ],
)
def test_bad_model_dims_name_the_field(text: str, field: str) -> None:
    with pytest.raises(InputError) as err:
        dims_from_json(text)
    assert err.value.field == field


def test_bad_device_and_check_names() -> None:
    with pytest.raises(InputError, match="device"):
        run_all("tpu")
    with pytest.raises(InputError, match="only"):
        run_all("cpu", only=["nope"])


def test_cli_json(capsys: pytest.CaptureFixture[str]) -> None:
    code = kernels_cli.main(["--json", "--preset", "llama-3.1-8b", "--only", "kv_cat_vs_prealloc"])
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    assert all({"name", "passed", "measured", "expected", "unit"} <= set(r) for r in data)
    assert {r["name"] for r in data} >= {"kvcat_naive_bytes_copied", "kvcat_prealloc_bytes_copied"}


def test_cli_model_dims(capsys: pytest.CaptureFixture[str]) -> None:
    code = kernels_cli.main(
        ["--model-dims", '{"preset": "qwen3-next-80b"}', "--only", "paged_kv_layout"]
    )
    assert code == 0
    assert "hybrid_attention_block_tokens" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv",
    [["--device", "tpu"], ["--model-dims", "{"], ["--concurrency", "many"], ["--only", "x"]],
)
def test_cli_bad_input_is_one_line_exit_2(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert kernels_cli.main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and len(captured.err.strip().splitlines()) == 1
    assert captured.err.startswith("error: ")


def test_results_are_finite_numbers(rows: Rows) -> None:
    assert all(math.isfinite(r.measured) for r in rows.values())
