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
