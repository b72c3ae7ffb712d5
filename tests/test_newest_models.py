"""The seven newest bundled architectures (data/models/, from shared/configs/newest/): their
weights and KV cache as vLLM 0.33.0's model code builds them, each checked against a hand
calculation from the config's fields (and the published total where one exists, with its
source). No vLLM corpus row exists for them (tests/fixtures/SOURCES.md)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from engine.diagnose import Diagnosis, Options, diagnose
from engine.model.loader import MODELS_DIR, load_catalog
from engine.model.weights import WeightReport

NEWEST = {
    "nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16",
    "moonshotai/Kimi-K3",
    "MiniMaxAI/MiniMax-M3",
    "stepfun-ai/Step-3.7-Flash",
    "XiaomiMiMo/MiMo-V2-Flash",
    "moonshotai/Kimi-K2.5",
    "Qwen/Qwen3-Coder-480B-A35B-Instruct",
}


def raw(name: str) -> dict[str, Any]:
    out: dict[str, Any] = json.loads((MODELS_DIR / f"{name.replace('/', '__')}.json").read_text())
    return out


def run(name: str, kv_dtype: str = "bf16", tp: int = 1) -> Diagnosis:
    return diagnose(load_catalog(name).config, Options(kv_dtype=kv_dtype, tp=tp))


def mtp_params(w: WeightReport) -> int:
    return sum(b.count for b in w.blocks if b.mtp)


def test_all_seven_are_bundled_with_a_sources_row() -> None:
    rows = (MODELS_DIR / "SOURCES.md").read_text()
    for name in NEWEST:
        stem = name.replace("/", "__")
        assert (MODELS_DIR / f"{stem}.json").is_file(), name
        assert f"| {stem}.json | {name} |" in rows, name


# --- NVIDIA-Nemotron-3-Ultra: latent MoE -------------------------------------------------------


def test_nemotron3_ultra_experts_run_at_the_latent_width() -> None:
    """vLLM nemotron_h.py NemotronHMoE: with moe_latent_size set, FusedMoE is built with
    hidden_size = moe_latent_size (relu2: up + down, no gate), between fc1_latent_proj
    (hidden -> latent) and fc2_latent_proj (latent -> hidden), both ReplicatedLinear; the
    shared expert (NemotronHMLP) stays at the hidden width."""
    c = raw("nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16")
    h, latent, inter = c["hidden_size"], c["moe_latent_size"], c["moe_intermediate_size"]
    assert (h, latent, inter, c["n_routed_experts"]) == (8192, 2048, 5120, 512)
    moe_layers = c["layers_block_type"].count("moe")
    w = run("nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16").weights
    routed = next(b.count for b in w.blocks if b.name == "routed experts")
    assert routed == moe_layers * 512 * 2 * latent * inter == 48 * 10_737_418_240
    latent_proj = next(b for b in w.blocks if b.name == "latent MoE projections")
    assert latent_proj.count == moe_layers * 2 * h * latent
    assert latent_proj.role == "replicated"
    shared = next(b.count for b in w.blocks if b.name == "shared experts")
    assert shared == moe_layers * 2 * h * c["moe_shared_expert_intermediate_size"]


def test_nemotron3_ultra_total_matches_the_published_561b_and_the_550b_main_model() -> None:
    # huggingface.co/nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16: 561B parameters (the
    # safetensors, MTP layers included); the model card's name: 550B total, 55B active
    w = run("nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16").weights
    assert w.params_total / 561e9 == pytest.approx(1, abs=0.01)
    assert (w.params_total - mtp_params(w)) / 550e9 == pytest.approx(1, abs=0.01)
    assert w.params_active / 55e9 == pytest.approx(1, abs=0.03)


def test_nemotron3_ultra_kv_is_12_attention_layers_and_48_mamba2_states() -> None:
    c = raw("nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16")
    blocks = c["layers_block_type"]
    assert (blocks.count("attention"), blocks.count("mamba")) == (12, 48)
    d = run("nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16")
    assert d.kv.kv_bytes_per_token == 12 * 2 * (128 + 128) * 2 == 12_288
    # mamba2_state_shape: conv (K-1, heads*head_dim + 2*n_groups*state) in bf16, ssm
    # (heads, head_dim, state) in mamba_ssm_cache_dtype float32
    conv = (4 - 1) * (256 * 64 + 2 * 8 * 128) * 2
    ssm = 256 * 64 * 128 * 4
    assert d.kv.state_bytes_per_request == 48 * (conv + ssm) == 407_961_600


# --- Kimi-K3: latent MoE, SiTU-GLU, gated MLA + KDA --------------------------------------------


def test_kimi_k3_experts_are_gated_and_run_at_routed_expert_hidden_size() -> None:
    """The released checkpoint (and SGLang's kimi_k3.py): routed_expert_down_proj [3584, 7168],
    routed_expert_norm [3584], routed_expert_up_proj [7168, 3584]; each expert's w1/w2/w3 at the
    3584 latent (SiTU-GLU: gate and up); two shared experts at the hidden width."""
    t = raw("moonshotai/Kimi-K3")["text_config"]
    h, latent, inter = t["hidden_size"], t["routed_expert_hidden_size"], t["moe_intermediate_size"]
    moe_layers = t["num_hidden_layers"] - t["first_k_dense_replace"]
    w = run("moonshotai/Kimi-K3").weights
    routed = next(b.count for b in w.blocks if b.name == "routed experts")
    assert routed == moe_layers * 896 * 3 * latent * inter == 92 * 29_595_009_024
    shared = next(b.count for b in w.blocks if b.name == "shared experts")
    assert shared == moe_layers * 2 * 3 * h * inter
    latent_proj = next(b.count for b in w.blocks if b.name == "latent MoE projections")
    assert latent_proj == moe_layers * 2 * h * latent


def test_kimi_k3_total_matches_the_published_2_8_trillion() -> None:
    # huggingface.co/moonshotai/Kimi-K3 model page: 2.8T parameters; Moonshot's release:
    # "2.8 trillion total parameters", 16 of 896 experts per token (~104B activated)
    w = run("moonshotai/Kimi-K3").weights
    assert w.params_total / 2.8e12 == pytest.approx(1, abs=0.01)
    assert w.params_active / 104e9 == pytest.approx(1, abs=0.03)


def test_kimi_k3_kv_is_24_mla_layers_and_69_kda_states() -> None:
    d = run("moonshotai/Kimi-K3")
    assert d.family.attention_family == "HYBRID" and d.family.linear_kind == "kda"
    assert d.kv.kv_bytes_per_token == 24 * (512 + 64) * 2 == 27_648
    conv = (4 - 1) * 3 * 96 * 128 * 2  # kda_state_shape conv over q, k, v in bf16
    recurrent = 96 * 128 * 128 * 4  # float32
    assert d.kv.state_bytes_per_request == 69 * (conv + recurrent) == 449_372_160


# --- MiniMax-M3: block-sparse attention with an index-key side cache ---------------------------


def test_minimax_m3_sparse_layers_keep_full_kv_plus_one_bf16_index_key() -> None:
    """vLLM 0.33.0 vllm/models/minimax_m3: layers with sparse_attention_freq != 0 run
    MiniMaxM3SparseAttention (FullAttentionSpec of 4 KV heads x (128 + 128)) and a
    MiniMaxM3IndexerCache (MLAAttentionSpec, one head of sparse_index_dim 128, dtype
    resolve_indexer_kv_dtype("bf16")): 256 B per token whatever --kv-cache-dtype, not split
    over TP."""
    sparse = raw("MiniMaxAI/MiniMax-M3")["sparse_attention_config"]
    n_sparse = sum(1 for f in sparse["sparse_attention_freq"] if f)
    assert n_sparse == 57 and sparse["sparse_index_dim"] == 128
    gqa = 60 * 4 * (128 + 128)
    d = run("MiniMaxAI/MiniMax-M3")
    assert d.kv.kv_bytes_per_token == gqa * 2 + n_sparse * 128 * 2 == 137_472
    assert run("MiniMaxAI/MiniMax-M3", "fp8").kv.kv_bytes_per_token == gqa + 57 * 256 == 76_032
    tp4 = run("MiniMaxAI/MiniMax-M3", tp=4).kv
    assert tp4.kv_bytes_per_token == gqa * 2 // 4 + 57 * 256
    assert sum(lay.mixer == "msa" for lay in d.architecture.layers) == 57


def test_minimax_m3_experts_are_swigluoai_and_dense_layers_use_dense_intermediate_size() -> None:
    """vLLM MiniMaxM3MoE: FusedMoE(intermediate_size=config.intermediate_size, swigluoai: gate
    and up), a shared MiniMaxM3MLP of intermediate_size x n_shared_experts; the leading dense
    layers run MiniMaxM3MLP(config.dense_intermediate_size)."""
    c = raw("MiniMaxAI/MiniMax-M3")
    h = c["hidden_size"]
    w = run("MiniMaxAI/MiniMax-M3").weights
    routed = next(b.count for b in w.blocks if b.name == "routed experts")
    assert routed == 57 * 128 * 3 * h * c["intermediate_size"]
    dense = next(b.count for b in w.blocks if b.name == "dense FFN")
    assert dense == 3 * 3 * h * c["dense_intermediate_size"] == 679_477_248


def test_minimax_m3_main_model_matches_the_published_427b() -> None:
    # huggingface.co/MiniMaxAI/MiniMax-M3: 427B parameters (also "~428B parameters and ~23B
    # activated", inference.readthedocs.io MiniMax-M3). As with DeepSeek-V3's 671B, the figure
    # is the main model: the MTP layer the config declares (num_nextn_predict_layers 1) adds a
    # sparse-attention MoE block of 7.4B that vLLM loads only as the draft model
    w = run("MiniMaxAI/MiniMax-M3").weights
    assert (w.params_total - mtp_params(w)) / 427e9 == pytest.approx(1, abs=0.01)
    assert w.params_active / 23e9 == pytest.approx(1, abs=0.15)


# --- Step-3.7-Flash -----------------------------------------------------------------------------


def test_step37_flash_mtp_blocks_are_dense_and_the_total_matches_198b() -> None:
    """vLLM step3p5.py: a layer is MoE only when its index is in moe_layers_enum (default
    range(1, num_hidden_layers)); step3p5_mtp.py builds the 3 MTP blocks at indices 45-47, so
    they run the dense Step3p5MLP(intermediate_size 11264), not 288 experts."""
    c = raw("stepfun-ai/Step-3.7-Flash")
    w = run("stepfun-ai/Step-3.7-Flash").weights
    assert not any(b.mtp and b.expert for b in w.blocks)
    mtp_ffn = next(b.count for b in w.blocks if b.mtp and b.role == "dense_ffn")
    assert mtp_ffn == c["num_nextn_predict_layers"] * 3 * c["hidden_size"] * c["intermediate_size"]
    routed = next(b.count for b in w.blocks if b.name == "routed experts")
    assert routed == (45 - 3) * 288 * 3 * 4096 * 1280
    # the model card figure quoted in issue 22: 198 B total parameters
    assert w.params_total / 198e9 == pytest.approx(1, abs=0.01)


def test_step37_flash_kv_is_12_full_and_33_sliding_layers() -> None:
    d = run("stepfun-ai/Step-3.7-Flash")
    assert d.kv.kv_bytes_per_token == 45 * 8 * (128 + 128) * 2 == 184_320
    assert d.kv.growing_bytes_per_token == 12 * 4096
    sliding = next(g for g in d.kv.groups if g.kind == "sliding")
    assert sliding.num_layers == 33 and sliding.spec.window == 512


# --- MiMo-V2-Flash: sliding layers with their own shapes ---------------------------------------


def test_mimo_v2_flash_kv_is_the_sum_vllm_model_code_builds() -> None:
    """vLLM mimo_v2_flash.py MiMoV2FlashDecoderLayer: hybrid_layer_pattern[i] == 1 builds
    MiMoV2Attention(num_kv_heads=swa_num_key_value_heads 8, head_dim=swa_head_dim 192,
    v_head_dim=swa_v_head_dim 128, sliding_window_size 128); 0 builds 4 KV heads x (192 K +
    128 V). Attention(..., head_size_v=v_head_dim) -> FullAttentionSpec / SlidingWindowSpec of
    num_kv_heads x (head_size + head_size_v) x 2 B.

    The 147,456 B/token quoted in issue 22 is 48 layers x 4 KV heads x (192 + 192) x 2 B: what
    shared/engine-gt/vllm_kv_truth.py's replicated layer reading gives (every layer from
    ModelConfig.get_head_size() and get_num_kv_heads(), K and V the same size, the swa_* fields
    unread), the same gap that tool has on Gemma 4 (tests/fixtures/SOURCES.md). vLLM's model
    code reads the per-layer fields, so the figure here stays the model code's."""
    c = raw("XiaomiMiMo/MiMo-V2-Flash")
    pattern = c["hybrid_layer_pattern"]
    full, swa = pattern.count(0), pattern.count(1)
    assert (full, swa) == (9, 39)
    d = run("XiaomiMiMo/MiMo-V2-Flash")
    want = full * 4 * (192 + 128) * 2 + swa * 8 * (192 + 128) * 2
    assert d.kv.kv_bytes_per_token == want == 222_720
    assert 48 * 4 * (192 + 192) * 2 == 147_456 != want  # the truth tool's one-shape reading


def test_mimo_v2_flash_total_matches_the_published_309b() -> None:
    # lm-sys blog 2025-12-15 (SGLang day-0 support): 309B total, 15B activated
    w = run("XiaomiMiMo/MiMo-V2-Flash").weights
    assert w.params_total / 309e9 == pytest.approx(1, abs=0.01)


# --- Kimi-K2.5 and Qwen3-Coder: families the engine already knew -------------------------------


def test_kimi_k25_is_61_mla_layers_and_its_moonvit_tower_is_counted() -> None:
    d = run("moonshotai/Kimi-K2.5")
    assert d.family.attention_family == "MLA" and d.family.multimodal
    assert d.kv.kv_bytes_per_token == 61 * (512 + 64) * 2 == 70_272
    vision = next(b.count for b in d.weights.blocks if b.vision)
    assert 0.3e9 < vision < 0.6e9  # MoonViT: 27 blocks of 1152 (vt_* fields)


def test_qwen3_coder_480b_kv_and_total() -> None:
    d = run("Qwen/Qwen3-Coder-480B-A35B-Instruct")
    assert d.kv.kv_bytes_per_token == 62 * 8 * (128 + 128) * 2 == 253_952
    # huggingface.co/Qwen/Qwen3-Coder-480B-A35B-Instruct: 480B total, 35B activated
    assert d.weights.params_total / 480e9 == pytest.approx(1, abs=0.01)
    assert d.weights.params_active / 35e9 == pytest.approx(1, abs=0.03)
