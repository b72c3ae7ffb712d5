"""engine/learn.py: attention designs at one model's dimensions, intensity, MLA absorption."""

from __future__ import annotations

from engine.model.loader import load_catalog
from engine.present.learn import attention_variants, intensity, kv_growth, mla_absorption


def by_name(model: str) -> dict[str, int]:
    return {v.name: v.kv_bytes_per_token for v in attention_variants(load_catalog(model).config)}


def test_llama_8b_dimensions_as_six_designs() -> None:
    kv = by_name("meta-llama/Meta-Llama-3.1-8B")
    assert kv["MHA"] == 32 * 32 * 128 * 2 * 2 == 524_288
    assert kv["GQA"] == 131_072  # the model's own 8 KV heads
    assert kv["MQA"] == 32 * 128 * 2 * 2
    assert kv["MLA"] == 32 * 576 * 2  # DeepSeek-V3's latent at 32 layers
    assert kv["DSA"] == 32 * (576 * 2 + 132)  # plus the fp8 indexer key and its scale
    assert kv["Hybrid (GDN 3:1)"] == 8 * 8 * 128 * 2 * 2  # 8 of 32 layers keep KV


def test_deepseek_v3_mla_variant_is_the_model_itself() -> None:
    assert by_name("deepseek-ai/DeepSeek-V3")["MLA"] == 70_272


def test_hybrid_state_is_constant_and_kv_grows_for_the_rest() -> None:
    variants = attention_variants(load_catalog("meta-llama/Meta-Llama-3.1-8B").config)
    growth = {s.name: s for s in kv_growth(variants, (1024, 2048))}
    hybrid = next(v for v in variants if v.name.startswith("Hybrid"))
    assert hybrid.state_bytes_per_request > 0
    assert (
        growth["Hybrid (GDN 3:1)"].y[1] - growth["Hybrid (GDN 3:1)"].y[0]
        == 1024 * hybrid.kv_bytes_per_token
    )
    assert growth["MHA"].y[1] == 2 * growth["MHA"].y[0]


def test_decode_is_below_the_ridge_and_long_prefill_above() -> None:
    cfg = load_catalog("meta-llama/Meta-Llama-3.1-8B").config
    i = intensity(cfg, 989e12, 4.8e12, 4096)
    assert round(i.ridge) == 206
    assert i.decode[0].intensity < 2
    assert i.prefill[-1].intensity > i.ridge
    assert all(a.intensity < b.intensity for a, b in zip(i.prefill, i.prefill[1:], strict=False))


def test_mla_absorption_uses_the_model_dims_or_says_it_does_not() -> None:
    own, steps = mla_absorption(load_catalog("deepseek-ai/DeepSeek-V3").config)
    assert own and len(steps) == 6
    assert "(512 + 64) × 2 B = 1,152 B" in steps[0].formula
    own, _ = mla_absorption(load_catalog("meta-llama/Meta-Llama-3.1-8B").config)
    assert not own
