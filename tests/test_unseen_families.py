"""Families with no bundled config: the rules still follow vLLM's state-shape calculators
(mamba_utils.MambaStateShapeCalculator) and transformers' layer defaults."""

from __future__ import annotations

from typing import Any

from engine.diagnose import Options, diagnose
from engine.model.config import normalize


def kimi_linear_like() -> dict[str, Any]:
    kda = [i for i in range(1, 28) if i not in (4, 8, 12, 16, 20, 24, 27)]
    return {
        "architectures": ["KimiLinearForCausalLM"],
        "model_type": "kimi_linear",
        "hidden_size": 2304,
        "num_hidden_layers": 27,
        "num_attention_heads": 32,
        "num_key_value_heads": 32,
        "kv_lora_rank": 512,
        "qk_rope_head_dim": 64,
        "qk_nope_head_dim": 128,
        "v_head_dim": 128,
        "num_experts": 256,
        "num_experts_per_token": 8,
        "num_shared_experts": 1,
        "moe_intermediate_size": 1024,
        "first_k_dense_replace": 1,
        "intermediate_size": 9216,
        "vocab_size": 163840,
        "torch_dtype": "bfloat16",
        "linear_attn_config": {
            "kda_layers": kda,
            "full_attn_layers": [4, 8, 12, 16, 20, 24, 27],
            "head_dim": 128,
            "num_heads": 32,
            "short_conv_kernel_size": 4,
        },
    }


def test_kimi_linear_is_a_hybrid_of_mla_and_kda() -> None:
    d = diagnose(normalize(kimi_linear_like()), Options(kv_dtype="bf16"))
    assert d.family.attention_family == "HYBRID"
    assert d.family.linear_kind == "kda"
    assert d.kv.kv_bytes_per_token == 7 * (512 + 64) * 2
    conv = 3 * (3 * 32 * 128) * 2  # kda_state_shape conv: (K-1, 3·heads·head_dim), bf16
    recurrent = 32 * 128 * 128 * 4  # (heads, head_dim, head_dim), float32
    assert d.kv.state_bytes_per_request == 20 * (conv + recurrent)
    # MLA hybrids align the attention block to at least 128 tokens
    assert d.kv.hybrid is not None
    assert d.kv.hybrid.block_size == 128 * -(-(conv + recurrent) // (128 * 1152)) == 1920


def test_kimi_linear_state_splits_over_tp() -> None:
    d = diagnose(normalize(kimi_linear_like()), Options(kv_dtype="bf16", tp=4))
    assert d.kv.kv_bytes_per_token == 7 * 1152  # MLA latent replicated
    assert d.kv.state_bytes_per_request == 20 * (3 * 3 * 32 * 128 * 2 + 32 * 128 * 128 * 4) // 4


def test_lightning_attention_state_is_heads_x_d_x_d_in_model_dtype() -> None:
    cfg = {
        "architectures": ["MiniMaxText01ForCausalLM"],
        "model_type": "minimax_text_01",
        "hidden_size": 6144,
        "num_hidden_layers": 80,
        "num_attention_heads": 64,
        "num_key_value_heads": 8,
        "head_dim": 128,
        "attn_type_list": [0, 0, 0, 0, 0, 0, 0, 1] * 10,
        "num_local_experts": 32,
        "num_experts_per_tok": 2,
        "intermediate_size": 9216,
        "vocab_size": 200064,
    }
    d = diagnose(normalize(cfg), Options(kv_dtype="bf16"))
    assert d.family.attention_family == "HYBRID"
    assert d.kv.kv_bytes_per_token == 10 * 8 * 256 * 2
    assert d.kv.state_bytes_per_request == 70 * 64 * 128 * 128 * 2
    assert d.kv.hybrid is not None and d.kv.hybrid.block_size == 512


def test_gemma2_without_layer_types_alternates_sliding_and_global() -> None:
    cfg = {
        "architectures": ["Gemma2ForCausalLM"],
        "model_type": "gemma2",
        "hidden_size": 3584,
        "num_hidden_layers": 42,
        "num_attention_heads": 16,
        "num_key_value_heads": 8,
        "head_dim": 256,
        "sliding_window": 4096,
        "intermediate_size": 14336,
        "vocab_size": 256000,
        "hidden_activation": "gelu_pytorch_tanh",
    }
    d = diagnose(normalize(cfg), Options(kv_dtype="bf16", context=32_768))
    kinds = [layer.mixer for layer in d.architecture.layers]
    assert kinds[:4] == ["sliding", "full", "sliding", "full"]
    per_layer = 8 * 256 * 2 * 2
    assert d.kv.kv_bytes_per_token == 42 * per_layer
    assert d.kv_bytes_per_request == 21 * per_layer * 32_768 + 21 * per_layer * 4096


def test_mistral_style_window_on_every_layer_without_pattern() -> None:
    cfg = {
        "architectures": ["MistralForCausalLM"],
        "model_type": "mistral",
        "hidden_size": 4096,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "sliding_window": 4096,
    }
    d = diagnose(normalize(cfg), Options(kv_dtype="bf16", context=100_000))
    assert all(layer.mixer == "sliding" for layer in d.architecture.layers)
    assert d.kv_bytes_per_request == 32 * 8 * 128 * 2 * 2 * 4096
