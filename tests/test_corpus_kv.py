"""Every bundled config: family and per-token KV bytes (bf16, fp8) derived here from the
textbook formula and the config's own fields, and checked against vLLM 0.33.0's figure."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pytest

from engine.diagnose import Options, diagnose
from engine.model.loader import MODELS_DIR, load_model
from engine.text.words import say

FIXTURES = Path(__file__).parent / "fixtures"
VLLM = json.loads((FIXTURES / "vllm-0.33.0-corpus-expected.json").read_text())
# the bundled configs vLLM's own accounting was run on; the newest architectures have no
# corpus row and are checked by hand calculations in tests/test_newest_models.py
CONFIGS = sorted(p for p in MODELS_DIR.glob("*.json") if p.stem in VLLM)
# vLLM's model code (gemma4.py) sizes Gemma 4's global layers with global_head_dim and
# num_global_key_value_heads; the truth tool used one head size (see fixtures/SOURCES.md).
TOOL_GAP = {"google__gemma-4-26B-A4B"}


def _text(raw: dict[str, Any]) -> dict[str, Any]:
    t = raw.get("text_config") or {}
    return {**raw, **t}


def family_from_sources(stem: str) -> str:
    """The family column of SOURCES.md, reduced to the verdict vocabulary."""
    rows = (MODELS_DIR / "SOURCES.md").read_text().splitlines()
    row = next(r for r in rows if r.startswith(f"| {stem}.json"))
    fam = row.split("|")[6].strip().lower()
    if "hybrid" in fam:
        return "HYBRID"
    if "dsa" in fam:
        return "DSA"
    if "mla" in fam:
        return "MLA"
    if fam.startswith("mha"):
        return "MHA"
    if fam.startswith("mqa"):
        return "MQA"
    return "GQA"


def expected_per_token(raw: dict[str, Any], dtype_bytes: int, fp8: bool) -> int:
    """Textbook per-token bytes from the fields, one TP rank."""
    c = _text(raw)
    n = c["num_hidden_layers"]
    if c.get("kv_lora_rank") and c.get("model_type", "").startswith(
        ("deepseek", "kimi", "glm_moe")
    ):
        latent = c["kv_lora_rank"] + c["qk_rope_head_dim"]
        per_layer = latent * dtype_bytes
        if c.get("index_topk"):
            if fp8:  # FlashMLA-sparse on Hopper packs fp8 latent + scales + bf16 RoPE
                per_layer = (
                    c["kv_lora_rank"] + c["kv_lora_rank"] // 128 * 4 + 2 * c["qk_rope_head_dim"]
                )
            ihd = c["index_head_dim"]
            per_layer += ihd + ihd // 128 * 4
        return n * per_layer
    heads = c["num_attention_heads"]
    kv = c.get("num_key_value_heads") or (1 if c.get("multi_query") else heads)
    hd = c.get("head_dim") or c.get("attention_head_dim") or c["hidden_size"] // heads
    kinds = layer_kinds(c)
    total = 0
    for k in kinds:
        if k == "attn":
            total += 2 * kv * hd * dtype_bytes
        elif k == "global":  # Gemma 4 full layers
            total += 2 * c["num_global_key_value_heads"] * c["global_head_dim"] * dtype_bytes
    return total


def layer_kinds(c: dict[str, Any]) -> list[str]:
    n = c["num_hidden_layers"]
    if "hybrid_override_pattern" in c:
        return ["attn" if ch == "*" else "other" for ch in c["hybrid_override_pattern"][:n]]
    if "attn_layer_period" in c:
        return [
            "attn" if i % c["attn_layer_period"] == c["attn_layer_offset"] else "other"
            for i in range(n)
        ]
    if "layer_types" in c:
        out = []
        for t in c["layer_types"][:n]:
            if t == "linear_attention":
                out.append("other")
            elif t == "full_attention" and c.get("global_head_dim"):
                out.append("global")
            else:
                out.append("attn")
        return out
    if "full_attention_interval" in c:
        f = c["full_attention_interval"]
        return ["attn" if (i + 1) % f == 0 else "other" for i in range(n)]
    return ["attn"] * n


def expected_state(raw: dict[str, Any]) -> int:
    """Constant per-request state of the linear layers (conv + SSM), vLLM dtypes."""
    c = _text(raw)
    n_lin = layer_kinds(c).count("other")
    if "hybrid_override_pattern" in c:
        n_lin = c["hybrid_override_pattern"].count("M")
        inter = c["mamba_num_heads"] * c["mamba_head_dim"]
        conv = (c["conv_kernel"] - 1) * (inter + 2 * c["n_groups"] * c["ssm_state_size"]) * 2
        ssm = c["mamba_num_heads"] * c["mamba_head_dim"] * c["ssm_state_size"] * 4  # float32
        return n_lin * (conv + ssm)
    if "attn_layer_period" in c:
        inter = c["mamba_expand"] * c["hidden_size"]
        conv = (c["mamba_d_conv"] - 1) * inter * 2
        ssm = inter * c["mamba_d_state"] * 2
        return n_lin * (conv + ssm)
    if "linear_num_value_heads" in c:
        nk, nv = c["linear_num_key_heads"], c["linear_num_value_heads"]
        hk, hv = c["linear_key_head_dim"], c["linear_value_head_dim"]
        conv = (c["linear_conv_kernel_dim"] - 1) * (2 * nk * hk + nv * hv) * 2
        ssm_bytes = 4 if c.get("mamba_ssm_dtype") == "float32" else 2
        return n_lin * (conv + nv * hv * hk * ssm_bytes)
    return 0


def _stem(p: Path) -> str:
    return p.stem


@pytest.mark.parametrize("path", CONFIGS, ids=_stem)
def test_family_matches_sources_md(path: Path) -> None:
    d = diagnose(load_model(str(path)).config)
    assert d.family.attention_family == family_from_sources(path.stem)
    assert d.family.attention_family == VLLM[path.stem]["family"]


@pytest.mark.parametrize("path", CONFIGS, ids=_stem)
@pytest.mark.parametrize(("kv_dtype", "nbytes"), [("bf16", 2), ("fp8", 1)])
def test_kv_bytes_per_token_equal_formula_and_vllm(path: Path, kv_dtype: str, nbytes: int) -> None:
    raw = json.loads(path.read_text())
    d = diagnose(load_model(str(path)).config, Options(kv_dtype=kv_dtype))
    if path.stem.startswith("deepseek-ai__DeepSeek-V4"):
        pytest.skip("compressed attention: covered by test_worked_examples (no vLLM row)")
    want = expected_per_token(raw, nbytes, fp8=nbytes == 1)
    assert d.kv.kv_bytes_per_token == want
    vllm_row = VLLM[path.stem][kv_dtype]
    if path.stem not in TOOL_GAP:
        assert d.kv.kv_bytes_per_token == vllm_row["kv"]
        assert d.kv.state_bytes_per_request == vllm_row["state"]
        assert d.kv.state_bytes_per_request_padded == vllm_row["state_padded"]
    assert d.kv.state_bytes_per_request == expected_state(raw)


def test_gemma4_global_layers_use_global_head_dim_and_kv_heads() -> None:
    d = diagnose(load_model("google/gemma-4-26B-A4B").config, Options(kv_dtype="bf16"))
    by_kind = {g.kind: g for g in d.kv.groups}
    assert by_kind["sliding"].num_layers == 25
    assert by_kind["sliding"].spec.bytes_per_token == 8 * (256 + 256) * 2
    assert by_kind["full"].num_layers == 5
    assert by_kind["full"].spec.bytes_per_token == 2 * (512 + 512) * 2
    assert d.kv.kv_bytes_per_token == 25 * 8192 + 5 * 4096 == 225_280


def test_hybrid_block_sizes_match_vllm_alignment() -> None:
    # vLLM corpus-truth block sizes: Qwen3-Next 544 (bf16) / 1072 (fp8); Jamba 80 / 160
    for name, want in [
        ("Qwen/Qwen3-Next-80B-A3B-Thinking", (544, 1072)),
        ("models123/Jamba-v0.1", (80, 160)),
        ("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", (2096, 4176)),
        ("Qwen/Qwen3.5-27B", (784, 1568)),
    ]:
        cfg = load_model(name).config
        got = tuple(diagnose(cfg, Options(kv_dtype=dt)).kv.block_size for dt in ("bf16", "fp8"))
        assert got == want, name


def test_sliding_layers_stop_growing_at_their_window() -> None:
    cfg = load_model("openai/gpt-oss-120b").config
    d = diagnose(cfg, Options(kv_dtype="bf16", context=131_072))
    full = 18 * 8 * 64 * 2 * 2
    assert d.kv_bytes_per_request == full * 131_072 + full * 128
    assert d.kv.growing_bytes_per_token == full


def test_chunked_local_layers_are_capped_at_the_chunk() -> None:
    cfg = load_model("meta-llama/Llama-4-Scout-17B-16E-Instruct").config
    d = diagnose(cfg, Options(kv_dtype="bf16", context=1_000_000))
    per_layer = 8 * 128 * 2 * 2
    assert d.family.chunked_local
    assert d.kv_bytes_per_request == 12 * per_layer * 1_000_000 + 36 * per_layer * 8192


@pytest.mark.parametrize(("tp", "want"), [(1, 131_072), (2, 65_536), (8, 16_384), (16, 16_384)])
def test_gqa_kv_heads_split_over_tp_and_replicate_past_kv_heads(tp: int, want: int) -> None:
    cfg = load_model("meta-llama/Meta-Llama-3.1-8B").config
    assert diagnose(cfg, Options(kv_dtype="bf16", tp=tp)).kv.kv_bytes_per_token == want


@pytest.mark.parametrize("tp", [1, 2, 4, 8])
def test_mla_latent_is_replicated_on_every_tp_rank(tp: int) -> None:
    cfg = load_model("deepseek-ai/DeepSeek-V3").config
    assert diagnose(cfg, Options(kv_dtype="bf16", tp=tp)).kv.kv_bytes_per_token == 61 * 1152


def test_dsa_fp8_layout_depends_on_the_gpu_generation() -> None:
    cfg = load_model("deepseek-ai/DeepSeek-V3.2").config
    hopper = diagnose(cfg, Options(kv_dtype="fp8", gpu_arch="sm_90"))
    blackwell = diagnose(cfg, Options(kv_dtype="fp8", gpu_arch="sm_100"))
    assert hopper.kv.kv_bytes_per_token == 61 * (656 + 132) == 48_068
    assert blackwell.kv.kv_bytes_per_token == 61 * (576 + 132) == 43_188
    assert hopper.kv_dtype.stored == "fp8_ds_mla"


def test_glm_dsa_auto_is_fp8_on_blackwell_in_vllm_but_bf16_on_hopper() -> None:
    cfg = load_model("zai-org/GLM-5").config
    assert diagnose(cfg, Options(gpu_arch="sm_90")).kv.kv_bytes_per_token == 78 * (1152 + 132)
    assert diagnose(cfg, Options(gpu_arch="sm_100")).kv.kv_bytes_per_token == 78 * (576 + 132)


def test_sglang_keeps_gdn_ssm_state_in_float32() -> None:
    cfg = load_model("Qwen/Qwen3-Next-80B-A3B-Thinking").config
    d = diagnose(cfg, Options(kv_dtype="bf16"))
    conv = 3 * 8192 * 2
    assert d.kv.state_bytes_per_request == 36 * (conv + 32 * 128 * 128 * 2)
    assert d.sglang.state_bytes_per_request == 36 * (conv + 32 * 128 * 128 * 4)
    assert d.sglang_differs()


def test_sglang_picks_fp8_for_dsa_on_blackwell() -> None:
    cfg = load_model("deepseek-ai/DeepSeek-V3.2").config
    d = diagnose(cfg, Options(gpu_arch="sm_100"))
    assert d.kv.kv_bytes_per_token == 78_324  # vLLM: DeepseekV32 auto stays bf16
    assert d.sglang.kv_bytes_per_token == 43_188  # SGLang: fp8_e4m3 on trtllm


def test_every_layer_group_formula_names_its_numbers() -> None:
    for path in CONFIGS:
        d = diagnose(load_model(str(path)).config)
        for g in d.kv.groups:
            text = say(g.formula())
            assert re.search(r"\d", text), path.stem
            assert f"{g.num_layers} layers" in text


def test_falcon_multi_query_has_one_kv_head() -> None:
    d = diagnose(load_model("tiiuae/falcon-7b-instruct").config, Options(kv_dtype="bf16"))
    assert d.family.attention_family == "MQA"
    assert d.kv.kv_bytes_per_token == 32 * 2 * 1 * (4544 // 71) * 2 == 8192


def test_qwen25_published_window_is_off_when_use_sliding_window_false() -> None:
    d = diagnose(load_model("Qwen/Qwen2.5-72B").config)
    assert not d.family.sliding_window
    assert any(e.field == "use_sliding_window" for e in d.family.evidence)


def test_state_bytes_are_the_same_at_every_context() -> None:
    cfg = load_model("nvidia/Nemotron-H-56B-Base-8K").config
    small = diagnose(cfg, Options(context=1)).kv
    assert (
        small.bytes_per_request(8192) - small.bytes_per_request(1)
        == small.kv_bytes_per_token * 8191
    )
    assert math.isclose(small.state_bytes_per_request / 1e6, 912.605184)


def test_dsa_on_sm120_stores_even_auto_as_fp8_ds_mla() -> None:
    # vLLM FLASHINFER_MLA_SPARSE_SM120 canonicalises auto/fp8/fp8_e4m3 to fp8_ds_mla
    cfg = load_model("deepseek-ai/DeepSeek-V3.2").config
    for dt in ("auto", "fp8"):
        d = diagnose(cfg, Options(kv_dtype=dt, gpu_arch="sm_120"))
        assert d.kv.kv_bytes_per_token == 61 * (656 + 132)
    assert diagnose(cfg, Options(kv_dtype="bf16", gpu_arch="sm_120")).kv_dtype.stored == "bfloat16"


def test_sglang_keeps_dsa_in_bf16_on_hopper_and_packs_fp8_as_656() -> None:
    cfg = load_model("deepseek-ai/DeepSeek-V3.2").config
    auto = diagnose(cfg, Options(gpu_arch="sm_90"))
    assert auto.sglang.kv_dtype.stored == "bfloat16"
    assert auto.sglang.kv_bytes_per_token == 61 * (1152 + 132)
    fp8 = diagnose(cfg, Options(kv_dtype="fp8", gpu_arch="sm_90"))
    assert fp8.sglang.kv_bytes_per_token == 61 * (656 + 132)


WILD = sorted((FIXTURES / "configs_wild").glob("*.json"))


@pytest.mark.parametrize("path", WILD, ids=_stem)
@pytest.mark.parametrize(("kv_dtype", "nbytes"), [("bf16", 2), ("fp8", 1)])
def test_wild_configs_sum_vllm_page_formula_layer_by_layer(
    path: Path, kv_dtype: str, nbytes: int
) -> None:
    """Per-layer shapes (block configs, swa_* fields, block lists): every attention layer
    adds num_kv_heads x (head_size + head_size_v) x dtype bytes (vLLM AttentionSpec), unless
    it reads another layer's cache (kv_sharing_target_layer_name: no spec of its own)."""
    d = diagnose(load_model(str(path)).config, Options(kv_dtype=kv_dtype))
    want = sum(
        lay.num_kv_heads * (lay.head_dim + lay.head_dim_v) * nbytes
        for lay in d.architecture.layers
        if lay.mixer in ("full", "sliding", "chunked") and not lay.kv_shared
    )
    assert d.kv.kv_bytes_per_token == want
    assert all(lay.num_kv_heads == 0 for lay in d.architecture.layers if lay.mixer == "none")
