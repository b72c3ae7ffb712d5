"""The reference text's worked examples (../shared/seeds/004, 000), as tests."""

from __future__ import annotations

from typing import Any

import pytest

from engine.diagnose import GIB, Options, diagnose
from engine.launch.layout import Split, users_at
from engine.model.config import normalize
from engine.model.loader import load_model


def dense_27b(kv_heads: int) -> dict[str, Any]:
    return {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": 4096,
        "num_hidden_layers": 48,
        "num_attention_heads": 32,
        "num_key_value_heads": kv_heads,
        "head_dim": 128,
        "intermediate_size": 16384,
        "vocab_size": 128256,
    }


def test_mha_27b_fp8_is_393216_bytes_per_token() -> None:
    d = diagnose(normalize(dense_27b(32)), Options(kv_dtype="fp8"))
    assert d.family.attention_family == "MHA"
    assert d.kv.kv_bytes_per_token == 2 * 48 * 32 * 128 * 1 == 393_216


def test_gqa8_27b_fp8_is_96_kib_per_token_and_3_gib_per_32k_user() -> None:
    d = diagnose(normalize(dense_27b(8)), Options(kv_dtype="fp8", context=32_768))
    assert d.family.attention_family == "GQA"
    assert d.kv.kv_bytes_per_token == 2 * 48 * 8 * 128 == 98_304 == 96 * 1024
    assert d.kv_bytes_per_request == 3 * GIB


def test_gqa8_27b_fits_35_users_on_one_h200_and_79_at_tp2() -> None:
    # The text: 141 GB H200, 27 GB of weights, 114 GB left, 3 GiB per 32K-token user.
    cfg = normalize(dense_27b(8))
    tp1 = diagnose(cfg, Options(kv_dtype="fp8", context=32_768))
    tp2 = diagnose(cfg, Options(kv_dtype="fp8", context=32_768, tp=2))
    assert tp2.kv_bytes_per_request * 2 == tp1.kv_bytes_per_request
    # the layout search's own formula: free bytes per GPU / bytes per request per GPU
    one = users_at(tp1.kv, 141 * 10**9 - 27 * 10**9, 32_768, Split(1), 1, 1.0)[1]
    two = users_at(tp2.kv, 141 * 10**9 - 27 * 10**9 // 2, 32_768, Split(2), 1, 1.0)[1]
    assert (one, two) == (35, 79)


def test_mla_512_64_is_56_9x_smaller_than_mha_128x128_not_32x() -> None:
    # 000: "32x" compression. Per layer and token: MHA 2 x 128 heads x 128 = 32,768 values;
    # MLA 512 + 64 = 576 values. 32,768 / 576 = 56.9, so the text's 32x is wrong.
    mha = diagnose(
        normalize(dense_27b(32) | {"num_attention_heads": 128, "num_key_value_heads": 128})
    )
    mla = diagnose(load_model("deepseek-ai/DeepSeek-V3").config)
    per_layer_mha = mha.kv.kv_bytes_per_token / 48
    per_layer_mla = mla.kv.kv_bytes_per_token / 61
    assert per_layer_mha / per_layer_mla == pytest.approx(56.89, abs=0.01)


def test_dsa_61_layers_at_2_20_tokens_text_says_83_9_gib_vllm_allocates_76_5() -> None:
    # The text's bf16 estimate counts 512 + 64 + 128 bf16 values per layer and token.
    text_estimate = 61 * (512 + 64 + 128) * 2 * 2**20 / GIB
    assert text_estimate == pytest.approx(83.875)
    d = diagnose(
        load_model("deepseek-ai/DeepSeek-V3.2").config, Options(kv_dtype="bf16", context=2**20)
    )
    # vLLM keeps the indexer key in fp8 + an fp32 scale per 128 (132 B), the latent in bf16.
    assert d.kv.kv_bytes_per_token == 61 * (1152 + 132) == 78_324
    assert d.kv_bytes_per_request / GIB == pytest.approx(76.49, abs=0.01)


def test_deepseek_v4_pro_at_2_20_tokens_bf16_is_9_62_gib_8_7x_below_v32_estimate() -> None:
    d = diagnose(
        load_model("deepseek-ai/DeepSeek-V4-Pro").config, Options(kv_dtype="bf16", context=2**20)
    )
    ratios = d.config.compress_ratios or []
    n4 = ratios[:61].count(4)
    n128 = ratios[:61].count(128)
    assert (n4, n128) == (30, 31)
    want = (
        n4 * (2**20 // 4) * (512 + 128) * 2  # ratio-4 entries + indexer keys
        + n128 * (2**20 // 128) * 512 * 2  # ratio-128 entries
        + 61 * 128 * 512 * 2  # 128-token sliding window of raw entries
    )
    assert d.kv_bytes_per_request == want
    assert d.kv_bytes_per_request / GIB == pytest.approx(9.62, abs=0.005)
    assert 83.875 / (d.kv_bytes_per_request / GIB) == pytest.approx(8.7, abs=0.05)
    assert d.family.attention_family == "DSA"
