"""Parameter counts from config fields, checked against published totals, and checkpoint
bytes per quantization format."""

from __future__ import annotations

import json

import pytest

from engine.model.architecture import build_architecture
from engine.model.config import normalize
from engine.model.loader import MODELS_DIR, load_model
from engine.model.weights import weight_report


def report(name: str):  # type: ignore[no-untyped-def]
    cfg = load_model(name).config
    return weight_report(cfg, build_architecture(cfg))


def test_llama_31_8b_parameter_count_is_exact() -> None:
    h, inter, vocab, layers, kv = 4096, 14336, 128256, 32, 8 * 128
    per_layer = (2 * h * h + 2 * h * kv) + 3 * h * inter + 2 * h
    want = 2 * vocab * h + layers * per_layer + h
    assert want == 8_030_261_248
    r = report("meta-llama/Meta-Llama-3.1-8B")
    assert r.params_total == want == r.params_active
    assert r.weight_bytes == 2 * want  # bf16 checkpoint


@pytest.mark.parametrize(
    ("name", "total_b", "active_b"),
    [
        # published totals / active parameters (model cards), in billions
        ("mistralai/Mixtral-8x7B-v0.1", 46.7, 12.9),
        ("Qwen/Qwen3-235B-A22B", 235.0, 22.0),
        ("Qwen/Qwen3-30B-A3B", 30.5, 3.3),
        ("openai/gpt-oss-120b", 116.8, 5.1 + 0.58),  # card excludes the 0.58 B embedding
        ("openai/gpt-oss-20b", 20.9, 3.6 + 0.58),
        ("moonshotai/Kimi-K2-Instruct", 1026.0, 32.6),
        ("meta-llama/Llama-4-Scout-17B-16E-Instruct", 109.0, 17.0),
        ("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", 31.6, 3.6),
        ("deepseek-ai/DeepSeek-V4-Pro", 1600.0, 49.0),
    ],
)
def test_total_and_active_params_within_a_few_percent_of_published(
    name: str, total_b: float, active_b: float
) -> None:
    r = report(name)
    assert r.params_total / 1e9 == pytest.approx(total_b, rel=0.03)
    assert r.params_active / 1e9 == pytest.approx(active_b, rel=0.06)


def test_deepseek_v3_counts_671b_main_plus_mtp_and_fp8_block_bytes() -> None:
    r = report("deepseek-ai/DeepSeek-V3")
    mtp = sum(b.count for b in r.blocks if b.mtp)
    assert (r.params_total - mtp) / 1e9 == pytest.approx(671, rel=0.01)
    assert r.format == "fp8-block"
    # quantized linears: 1 byte + one fp32 scale per 128x128 block; embeddings/norms bf16
    assert r.weight_bytes / 1e9 == pytest.approx(685, rel=0.01)


def test_mxfp4_experts_are_4_25_bits() -> None:
    r = report("openai/gpt-oss-120b")
    experts = next(b.count for b in r.blocks if b.expert)
    assert r.expert_bytes == int(experts * 4.25 / 8)
    assert r.format == "mxfp4"


def test_awq_group_scales_are_counted() -> None:
    raw = json.loads((MODELS_DIR / "meta-llama__Meta-Llama-3.1-8B.json").read_text())
    raw["quantization_config"] = {"quant_method": "awq", "bits": 4, "group_size": 128}
    cfg = normalize(raw)
    r = weight_report(cfg, build_architecture(cfg))
    linear = sum(b.count for b in r.blocks if b.quantizable)
    other = r.params_total - linear
    assert r.weight_bytes == int((linear * (4 + 20 / 128) + other * 16) / 8)


# Published totals: the parameter count of each checkpoint's safetensors as the Hugging Face
# model page states it (exact where the page gives every digit, else the rounded total).
PUBLISHED_TOTALS = [
    ("meta-llama/Meta-Llama-3.1-8B", 8_030_261_248),
    ("meta-llama/Meta-Llama-3.1-70B", 70_553_706_496),
    ("meta-llama/Llama-3.3-70B-Instruct", 70_553_706_496),
    ("meta-llama/Llama-2-7b-hf", 6_738_415_616),
    ("meta-llama/Llama-2-70b-hf", 68_976_648_192),
    ("meta-llama/Llama-4-Scout-17B-16E-Instruct", 109_000_000_000),
    ("mistralai/Mistral-7B-v0.1", 7_241_732_096),
    ("mistralai/Mixtral-8x7B-v0.1", 46_702_792_704),
    ("Qwen/Qwen3-8B", 8_190_735_360),
    ("Qwen/Qwen3-32B", 32_762_123_264),
    ("Qwen/Qwen3-30B-A3B", 30_532_122_624),
    ("Qwen/Qwen3-235B-A22B", 235_093_634_560),
    ("Qwen/Qwen2.5-72B", 72_706_203_648),
    ("Qwen/Qwen2.5-VL-7B-Instruct", 8_292_166_656),
    ("Qwen/Qwen3-VL-32B-Instruct", 33_400_000_000),
    ("Qwen/Qwen3-Next-80B-A3B-Thinking", 81_300_000_000),
    ("google/gemma-3-27b-it", 27_432_406_640),
    ("openai/gpt-oss-120b", 116_829_156_672),
    ("openai/gpt-oss-20b", 20_914_757_184),
    ("deepseek-ai/DeepSeek-V3", 685_000_000_000),
    ("deepseek-ai/DeepSeek-V2-Lite", 15_706_484_224),
    ("moonshotai/Kimi-K2-Instruct", 1_026_408_232_448),
    ("models123/Jamba-v0.1", 51_570_323_456),
    ("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", 31_600_000_000),
    ("zai-org/GLM-4.7", 358_000_000_000),
]


@pytest.mark.parametrize(("name", "published"), PUBLISHED_TOTALS)
def test_total_parameters_within_half_a_percent_of_the_published_total(
    name: str, published: int
) -> None:
    assert report(name).params_total / published == pytest.approx(1, abs=0.005)


# model.safetensors.index.json metadata.total_size as published with the checkpoint
INDEX_SIZES = [
    ("meta-llama/Meta-Llama-3.1-8B", 16_060_522_496, 0.0),  # BF16: 2 bytes per parameter
    ("deepseek-ai/DeepSeek-V3", 688_586_727_753, 0.0005),  # FP8 128x128 blocks + MTP module
]


@pytest.mark.parametrize(("name", "total_size", "tolerance"), INDEX_SIZES)
def test_checkpoint_bytes_match_the_recorded_index_size(
    name: str, total_size: int, tolerance: float
) -> None:
    assert report(name).checkpoint_bytes / total_size == pytest.approx(1, abs=tolerance)


def test_nvfp4_modelopt_weights_are_4_5_bits_with_excluded_modules_in_bf16() -> None:
    raw = json.loads((MODELS_DIR / "meta-llama__Meta-Llama-3.1-8B.json").read_text())
    raw["quantization_config"] = {
        "quant_method": "modelopt",
        "producer": {"name": "modelopt"},
        "quantization": {
            "quant_algo": "NVFP4",
            "group_size": 16,
            "exclude_modules": ["lm_head", "model.layers.*.self_attn*"],
        },
    }
    cfg = normalize(raw)
    r = weight_report(cfg, build_architecture(cfg))
    assert r.weight_dtype == "nvfp4"
    attn = sum(b.count for b in r.blocks if b.role == "attention")
    mlp = sum(b.count for b in r.blocks if b.role == "dense_ffn")
    other = r.params_total - attn - mlp
    assert r.weight_bytes == int((mlp * 4.5 + (attn + other) * 16) / 8)


def test_mixed_precision_per_module_algorithms_give_per_role_bits() -> None:
    raw = json.loads((MODELS_DIR / "Qwen__Qwen3-30B-A3B.json").read_text())
    layers = {}
    for i in range(48):
        layers[f"model.layers.{i}.mlp.experts.0.down_proj"] = {"quant_algo": "NVFP4"}
        layers[f"model.layers.{i}.self_attn.q_proj"] = {"quant_algo": "FP8"}
    raw["quantization_config"] = {
        "quant_method": "modelopt",
        "quant_algo": "MIXED_PRECISION",
        "quantized_layers": layers,
    }
    cfg = normalize(raw)
    r = weight_report(cfg, build_architecture(cfg))
    assert r.weight_dtype == "nvfp4"
    experts = sum(b.count for b in r.blocks if b.expert)
    attn = sum(b.count for b in r.blocks if b.role == "attention")
    assert r.expert_bytes == int(experts * 4.5 / 8)
    assert r.bytes_of(["attention"]) == int(attn * 8 / 8)
