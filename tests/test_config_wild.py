"""Config shapes found in the wild (fixtures written from the real configs, see
fixtures/configs_wild/SOURCES.md): per-layer lists, per-layer block configs, layer counts
implied by a block list, and configs of many megabytes. Each KV figure is checked against a
hand calculation from vLLM 0.33.0's model code, written out in the test."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from engine.diagnose import Options, diagnose
from engine.errors import InputError
from engine.model.config import MAX_CONFIG_BYTES, MAX_DEPTH, normalize
from engine.model.loader import MODELS_DIR, load_model, load_pasted, parse_json_bytes
from engine.text.words import say
from tools.nvfp4_config import nvfp4_config_bytes

WILD = Path(__file__).parent / "fixtures" / "configs_wild"
CORPUS = json.loads(
    (Path(__file__).parent / "fixtures" / "vllm-0.33.0-corpus-expected.json").read_text()
)


def _wild(name: str) -> dict[str, Any]:
    raw: dict[str, Any] = json.loads((WILD / name).read_text())
    return raw


# --- per-layer block configs (DeciLM / nemotron-nas) ------------------------------------------


def test_nemotron_super_block_configs_size_each_attention_layer_and_skip_no_ops() -> None:
    raw = _wild("nvidia__Llama-3_3-Nemotron-Super-49B-v1.json")
    cfg = normalize(raw)
    # vLLM nemotron_nas.py DeciLMDecoderLayer: no_op attention -> no self_attn, no cache;
    # otherwise num_kv_heads = num_attention_heads // n_heads_in_group; head size 8192 / 64.
    blocks = raw["block_configs"]
    attn = [b for b in blocks if not b["attention"]["no_op"]]
    assert len(blocks) == 80 and len(attn) == 49
    kv_heads = {64 // b["attention"]["n_heads_in_group"] for b in attn}
    assert kv_heads == {8}
    head = 8192 // 64
    for kv_dtype, nbytes in (("bf16", 2), ("fp8", 1)):
        d = diagnose(cfg, Options(kv_dtype=kv_dtype))
        want = len(attn) * 8 * (head + head) * nbytes
        assert d.kv.kv_bytes_per_token == want
        assert d.kv.state_bytes_per_request == 0
        assert [(g.kind, g.num_layers) for g in d.kv.groups] == [("full", 49)]
    assert diagnose(cfg, Options(kv_dtype="bf16")).kv.kv_bytes_per_token == 200_704
    # read as plain MHA over all 80 layers it was 13x this
    assert 80 * 64 * 256 * 2 // 200_704 == 13
    d = diagnose(cfg)
    assert d.family.attention_family == "GQA"
    assert any(e.field == "block_configs" for e in d.family.evidence)


def test_nemotron_super_ffn_widths_follow_ffn_mult_and_total_is_published() -> None:
    cfg = normalize(_wild("nvidia__Llama-3_3-Nemotron-Super-49B-v1.json"))
    assert cfg.block_configs is not None
    # vLLM _ffn_mult_to_intermediate_size: int(2 * mult * 8192 / 3) up to a multiple of 256
    widths = {round(b.ffn_intermediate) for b in cfg.block_configs}
    assert widths == {2816, 5632, 7168, 14336, 17920, 28672}
    d = diagnose(cfg)
    # Hugging Face model page: 49,867,145,216 parameters (BF16 safetensors)
    assert d.weights.params_total == 49_867_145_216


def test_block_config_with_a_bad_group_names_the_layer() -> None:
    raw = _wild("nvidia__Llama-3_3-Nemotron-Super-49B-v1.json")
    raw["block_configs"][3]["attention"]["n_heads_in_group"] = 7
    with pytest.raises(InputError) as err:
        normalize(raw)
    assert err.value.field == "block_configs[3].attention.n_heads_in_group"


# --- moe_layer_freq as a list, per-layer attention shapes (MiMo-V2-Flash) ----------------------


def test_mimo_v2_flash_list_moe_freq_and_swa_shapes_are_read_as_vllm_builds_them() -> None:
    raw = _wild("mimo_v2_flash.json")
    cfg = normalize(raw)  # was refused: "moe_layer_freq: an integer"
    pattern = raw["hybrid_layer_pattern"]
    full = pattern.count(0)
    swa = pattern.count(1)
    assert (full, swa) == (9, 39)
    # vLLM mimo_v2_flash.py: pattern 1 -> SWA layer with swa_num_key_value_heads (8) and
    # swa_head_dim + swa_v_head_dim (192 + 128); 0 -> full layer, 4 KV heads, 192 + 128.
    for kv_dtype, nbytes in (("bf16", 2), ("fp8", 1)):
        d = diagnose(cfg, Options(kv_dtype=kv_dtype))
        full_tok = full * 4 * (192 + 128) * nbytes
        swa_tok = swa * 8 * (192 + 128) * nbytes
        assert d.kv.kv_bytes_per_token == full_tok + swa_tok
        assert d.kv.growing_bytes_per_token == full_tok
        sliding = next(g for g in d.kv.groups if g.kind == "sliding")
        assert sliding.spec.window == raw["sliding_window_size"] == 128
    assert diagnose(cfg, Options(kv_dtype="bf16")).kv.kv_bytes_per_token == 222_720
    # is_moe_layer: moe_layer_freq[i] truthy -> MoE; layer 0 is the dense MLP
    arch = diagnose(cfg).architecture
    assert [lay.ffn for lay in arch.layers[:3]] == ["dense", "moe", "moe"]
    assert sum(lay.ffn == "moe" for lay in arch.layers) == 47


def test_mimo_v2_flash_total_and_active_match_the_published_309b_and_15b() -> None:
    d = diagnose(normalize(_wild("mimo_v2_flash.json")))
    assert d.weights.params_total / 1e9 == pytest.approx(309, rel=0.005)
    assert d.weights.params_active / 1e9 == pytest.approx(15, rel=0.05)


def test_moe_layer_freq_list_of_minimax_m3_shape_is_accepted() -> None:
    raw = json.loads((MODELS_DIR / "Qwen__Qwen3-30B-A3B.json").read_text())
    raw["moe_layer_freq"] = [0, 0, 0] + [1] * 45  # MiniMax-M3 spelling: first 3 dense
    arch = diagnose(normalize(raw)).architecture
    assert [lay.ffn for lay in arch.layers[:4]] == ["dense", "dense", "dense", "moe"]


def test_moe_layer_freq_list_shorter_than_the_layers_is_refused() -> None:
    raw = _wild("mimo_v2_flash.json")
    raw["moe_layer_freq"] = [0, 1]
    with pytest.raises(InputError) as err:
        normalize(raw)
    assert err.value.field == "moe_layer_freq"


# --- layers_block_type without num_hidden_layers (Nemotron-3 Super / Ultra spelling) ----------


def test_layers_block_type_implies_the_layer_count_and_sizes_like_the_pattern() -> None:
    raw = _wild("nemotron_h__layers_block_type.json")
    assert "num_hidden_layers" not in raw and "hybrid_override_pattern" not in raw
    cfg = normalize(raw)  # was refused: "num_hidden_layers ... missing"
    blocks = raw["layers_block_type"]
    assert cfg.num_hidden_layers == len(blocks) == 52
    n_attn, n_mamba = blocks.count("attention"), blocks.count("mamba")
    # vLLM nemotron_h.py: attention blocks 2 KV heads x (128 + 128); Mamba-2 state
    # conv (K-1) x (heads*head_dim + 2*n_groups*state) in bf16 + ssm heads x head_dim x state fp32
    conv = (raw["conv_kernel"] - 1) * (64 * 64 + 2 * 8 * 128) * 2
    ssm = 64 * 64 * 128 * 4
    truth = CORPUS["nvidia__NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"]
    for kv_dtype, nbytes in (("bf16", 2), ("fp8", 1)):
        d = diagnose(cfg, Options(kv_dtype=kv_dtype))
        assert d.kv.kv_bytes_per_token == n_attn * 2 * 256 * nbytes == truth[kv_dtype]["kv"]
        assert d.kv.state_bytes_per_request == n_mamba * (conv + ssm) == truth[kv_dtype]["state"]
        assert d.kv.state_bytes_per_request_padded == truth[kv_dtype]["state_padded"]
    assert say(cfg.defaults_applied["num_hidden_layers"].said()) == "len(layers_block_type)"


def test_layers_block_type_weights_equal_the_pattern_spelling() -> None:
    pattern = diagnose(load_model("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16").config)
    blocks = diagnose(normalize(_wild("nemotron_h__layers_block_type.json")))
    assert blocks.weights.params_total == pattern.weights.params_total
    assert blocks.weights.params_active == pattern.weights.params_active


def test_mtp_layers_block_type_counts_the_nemotron_mtp_blocks() -> None:
    raw = _wild("nemotron_h__layers_block_type.json")
    raw |= {"num_nextn_predict_layers": 1, "mtp_layers_block_type": ["attention", "moe"]}
    d = diagnose(normalize(raw))
    h = raw["hidden_size"]
    mtp = {b.role: b.count for b in d.weights.blocks if b.mtp}
    assert mtp["routed_experts"] == 128 * 2 * h * raw["moe_intermediate_size"]  # relu2: 2 mats
    assert mtp["attention"] == h * 128 * (32 + 2 + 2) + 32 * 128 * h
    assert (
        d.kv.kv_bytes_per_token
        == CORPUS["nvidia__NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"]["bf16"]["kv"]
    )  # MTP layers cache only when speculative decoding runs


# --- per-layer head counts and windows --------------------------------------------------------


def test_per_layer_kv_heads_and_windows_are_sized_layer_by_layer() -> None:
    raw = json.loads((MODELS_DIR / "meta-llama__Meta-Llama-3.1-8B.json").read_text())
    raw["num_key_value_heads"] = [8, 4] * 16
    raw["sliding_window"] = [None, 4096] * 16
    d = diagnose(normalize(raw), Options(kv_dtype="bf16", context=8192))
    # even layers: full, 8 KV heads; odd layers: 4096-token window, 4 KV heads
    assert d.kv.kv_bytes_per_token == 16 * 8 * 256 * 2 + 16 * 4 * 256 * 2
    assert d.kv.growing_bytes_per_token == 16 * 8 * 256 * 2
    assert d.kv_bytes_per_request == 16 * 8 * 256 * 2 * 8192 + 16 * 4 * 256 * 2 * 4096


# --- weights: defaults and structure ------------------------------------------------------------


def test_gemma3_absent_tie_word_embeddings_is_transformers_default_tied() -> None:
    cfg = load_model("google/gemma-3-27b-it").config
    assert "tie_word_embeddings" not in cfg.raw
    assert cfg.tie_word_embeddings
    assert say(cfg.defaults_applied["tie_word_embeddings"].said()).endswith("gemma3_text")
    d = diagnose(cfg)
    assert not any(b.role == "lm_head" for b in d.weights.blocks)
    # Hugging Face model page: 27,432,406,640 parameters
    assert d.weights.params_total / 27_432_406_640 == pytest.approx(1, abs=0.005)


def test_qwen3_next_counts_the_attention_output_gate_and_the_mtp_layer() -> None:
    cfg = load_model("Qwen/Qwen3-Next-80B-A3B-Thinking").config
    assert cfg.attn_output_gate and cfg.mtp_layers == 1
    gated = diagnose(cfg).weights
    ungated = diagnose(cfg.model_copy(update={"attn_output_gate": False, "mtp_layers": 0})).weights
    main = gated.params_total - sum(b.count for b in gated.blocks if b.mtp)
    # vLLM qwen3_next.py: qkv_proj has total_num_heads * 2 query heads (query + gate) on the
    # 12 full-attention layers: 12 x 2048 x 16 x 256 more parameters
    assert main - ungated.params_total == 12 * 2048 * 16 * 256 == 100_663_296
    mtp = {b.role: b.count for b in gated.blocks if b.mtp}
    assert mtp["routed_experts"] == 512 * 3 * 2048 * 512  # routed, not dense
    assert mtp["replicated"] == 2 * 2048 * 2048  # fc: 2h -> h


def test_deepseek_mtp_routed_experts_are_experts_and_its_copies_are_not_loaded() -> None:
    w = diagnose(load_model("deepseek-ai/DeepSeek-V3").config).weights
    mtp_experts = w.bytes_of(["routed_experts"], mtp=True)
    assert mtp_experts == sum(
        n for b, n in zip(w.blocks, w.block_bytes, strict=True) if b.mtp and b.expert
    )
    assert mtp_experts > 0
    copies = [b for b in w.blocks if b.mtp and not b.loaded]
    assert {b.role for b in copies} == {"embedding", "lm_head"}
    assert w.bytes_of(["embedding", "lm_head"], mtp=True) == 0
    assert w.checkpoint_bytes - w.weight_bytes == sum(
        n for b, n in zip(w.blocks, w.block_bytes, strict=True) if not b.loaded
    )


# --- big and hostile configs ------------------------------------------------------------------


def test_a_3_mb_quantized_config_loads_fast_and_keeps_a_summary() -> None:
    data = nvfp4_config_bytes()
    assert len(data) > 3_000_000
    t0 = time.thread_time()  # CPU seconds: bounded work, not a speed target (make bench)
    loaded = load_model(data)
    assert time.thread_time() - t0 < 2.0
    qc = loaded.config.quantization_config
    assert qc is not None and "quantized_layers" not in qc
    summary = qc["quantized_layers_summary"]
    assert summary["modules"] == 22_422
    assert summary["by_algo"] == {"NVFP4": 22_422}
    assert len(json.dumps(loaded.config.raw)) < 20_000
    d = diagnose(loaded.config)
    assert d.weights.weight_dtype == "nvfp4"
    assert d.kv_dtype.stored == "fp8_e4m3"  # the checkpoint's kv_cache_quant_algo


def test_size_cap_is_above_the_largest_real_config_and_refuses_beyond() -> None:
    from tools.nvfp4_config import nvfp4_config_bytes

    assert len(nvfp4_config_bytes()) < MAX_CONFIG_BYTES < 16 * 1024 * 1024
    with pytest.raises(InputError, match="at most 8 MiB"):
        parse_json_bytes(b" " * (MAX_CONFIG_BYTES + 1))


@pytest.mark.parametrize(
    ("data", "field"),
    [
        (("[" * (MAX_DEPTH + 5) + "]" * (MAX_DEPTH + 5)).encode(), "config.json"),
        (b'{"a": ' * 200 + b"1" + b"}" * 200, "a"),
        (b'{"hidden_size": "\xe9"}', "config.json"),
        (b"\xff\xfe\xfd", "config.json"),
    ],
)
def test_hostile_input_is_a_clear_error(data: bytes, field: str) -> None:
    with pytest.raises(InputError) as err:
        load_model(data)
    assert err.value.field.startswith(field)


def test_deep_nesting_inside_a_valid_config_is_refused_with_its_path() -> None:
    raw = json.loads((MODELS_DIR / "meta-llama__Meta-Llama-3.1-8B.json").read_text())
    nested: Any = 1
    for _ in range(MAX_DEPTH + 1):
        nested = {"x": nested}
    raw["extra"] = nested
    with pytest.raises(InputError, match="levels of nesting") as err:
        normalize(raw)
    assert err.value.field.startswith("extra")


@pytest.mark.parametrize(
    "vision",
    [
        {"hidden_size": 1e308, "num_hidden_layers": 27},
        {"hidden_size": "1152", "depth": [1]},
        {"hidden_size": 1152, "num_hidden_layers": 27, "intermediate_size": 1e308},
        {"hidden_size": True, "num_hidden_layers": 10**30},
        {"hidden_size": 1152, "num_hidden_layers": 2, "deepstack_visual_indexes": 7},
    ],
)
def test_vision_config_of_the_wrong_type_or_size_does_not_crash(vision: dict[str, Any]) -> None:
    raw = json.loads((MODELS_DIR / "Qwen__Qwen3-VL-32B-Instruct.json").read_text())
    raw["vision_config"] = vision
    d = diagnose(normalize(raw))
    assert d.weights.params_total > 0


def test_load_pasted_never_reads_a_path(tmp_path: Path) -> None:
    secret = tmp_path / "config.json"
    secret.write_text(json.dumps({"hidden_size": 1}))
    for text in (str(secret), str(tmp_path), "meta-llama/Meta-Llama-3.1-8B", "/etc/passwd"):
        with pytest.raises(InputError) as err:
            load_pasted(text)
        assert err.value.field == "config.json"
    ok = load_pasted((MODELS_DIR / "meta-llama__Meta-Llama-3.1-8B.json").read_text())
    assert ok.source == "json" and ok.config.hidden_size == 4096


@pytest.mark.parametrize("length", [251, 300, 5000, 100_000])
def test_long_source_strings_are_input_errors_not_os_errors(length: int) -> None:
    with pytest.raises(InputError) as err:
        load_model("a" * length)
    assert err.value.field == "model"
    assert len(str(err.value)) < 400


# --- a sweep of configs the project had not seen (fixtures/configs_wild/SOURCES.md) -------------


def _kv(name: str, **opts: Any) -> Any:
    return diagnose(normalize(_wild(name)), Options(kv_dtype="bf16", **opts))


def test_mamba_codestral_is_attention_free_with_a_mamba2_state_per_layer() -> None:
    # was read as 64 layers of 128-head MHA: 2,097,152 B/token and no state
    d = _kv("mistralai__Mamba-Codestral-7B-v0.1.json")
    # vLLM mamba2.py get_mamba_state_shape_from_config: intermediate = expand * hidden_size;
    # mamba_utils.mamba2_state_shape: conv (conv_kernel - 1, intermediate + 2 n_groups state),
    # temporal (num_heads, head_dim, state_size); both bf16 (mamba_ssm_cache_dtype auto)
    conv = (4 - 1) * (2 * 4096 + 2 * 8 * 128) * 2
    temporal = 128 * 64 * 128 * 2
    assert d.kv.kv_bytes_per_token == 0
    assert d.kv.state_bytes_per_request == 64 * (conv + temporal) == 138_149_888
    assert d.family.linear_kind == "mamba2"
    assert [(g.kind, g.num_layers) for g in d.kv.groups] == [("mamba", 64)]
    # TP 2 splits heads and the conv width (8 groups divide)
    assert _kv("mistralai__Mamba-Codestral-7B-v0.1.json", tp=2).kv.state_bytes_per_request == (
        64 * (conv + temporal) // 2
    )
    # no MLP: the published 7.3B parameters are mixers, norms and embeddings
    assert d.weights.params_total / 1e9 == pytest.approx(7.3, rel=0.01)


def test_falcon_mamba_state_uses_intermediate_size_not_expand() -> None:
    # was refused: "num_attention_heads ... missing"
    raw = _wild("tiiuae__falcon-mamba-7b.json")
    assert raw["expand"] * raw["hidden_size"] != raw["intermediate_size"]  # 65,536 vs 8,192
    d = _kv("tiiuae__falcon-mamba-7b.json")
    # vLLM mamba.py: mamba1_state_shape(intermediate_size, state_size, conv_kernel):
    # conv (conv_kernel - 1, intermediate), temporal (intermediate, state_size)
    per_layer = (4 - 1) * 8192 * 2 + 8192 * 16 * 2
    assert d.kv.kv_bytes_per_token == 0
    assert d.kv.state_bytes_per_request == 64 * per_layer == 19_922_944
    assert d.family.linear_kind == "mamba1"
    # tiiuae/falcon-mamba-7b model card: 7.27B parameters
    assert d.weights.params_total / 1e9 == pytest.approx(7.27, rel=0.01)


def test_falcon_h1_keeps_kv_and_a_mamba2_state_in_every_layer() -> None:
    # was sized as attention only: 45,056 B/token and no state
    d = _kv("tiiuae__Falcon-H1-7B.json")
    # vLLM falcon_h1.py FalconH1ParallelHybrid: self_attn (2 KV heads x 128) and mamba side by
    # side; get_mamba_state_shape_from_config: intermediate = mamba_d_ssm (3072),
    # n_groups mamba_n_groups, heads mamba_n_heads x mamba_d_head, state mamba_d_state
    conv = (4 - 1) * (3072 + 2 * 1 * 256) * 2
    temporal = 24 * 128 * 256 * 2
    assert d.kv.kv_bytes_per_token == 44 * 2 * (128 + 128) * 2 == 45_056
    assert d.kv.state_bytes_per_request == 44 * (conv + temporal) == 70_152_192
    assert d.family.attention_family == "HYBRID"
    assert all(lay.mixers == ("full", "mamba2") for lay in d.architecture.layers)
    # tiiuae/Falcon-H1-7B: 7.59B parameters (Falcon-H1 technical report, 7B base)
    assert d.weights.params_total / 1e9 == pytest.approx(7.59, rel=0.01)


def test_falcon_h1_without_d_ssm_takes_expand_times_hidden_for_the_conv_width() -> None:
    d = _kv("tiiuae__Falcon-H1-0.5B.json")
    # vLLM falcon_h1.py: intermediate = mamba_expand * hidden_size when mamba_d_ssm is None
    # (2 x 1024 = 2048, not mamba_n_heads x mamba_d_head = 1536); temporal (24, 64, 128)
    conv = (4 - 1) * (2 * 1024 + 2 * 1 * 128) * 2
    temporal = 24 * 64 * 128 * 2
    assert d.kv.state_bytes_per_request == 36 * (conv + temporal) == 14_653_440
    assert d.kv.kv_bytes_per_token == 36 * 2 * (64 + 64) * 2


def test_lfm2_short_conv_layers_keep_a_small_state_and_attention_layers_kv() -> None:
    # was refused: "linear layer 0 ('conv') needs its state dimensions"
    raw = _wild("LiquidAI__LFM2-2.6B.json")
    n_attn, n_conv = raw["layer_types"].count("full_attention"), raw["layer_types"].count("conv")
    assert (n_attn, n_conv) == (8, 22)
    d = _kv("LiquidAI__LFM2-2.6B.json")
    # vLLM lfm2.py: attention 8 KV heads x (2048 / 32); ShortConv state from
    # mamba_utils.short_conv_state_shape: (conv_L_cache - 1, conv_dim / TP), model dtype
    assert d.kv.kv_bytes_per_token == n_attn * 8 * (64 + 64) * 2 == 16_384
    assert d.kv.state_bytes_per_request == n_conv * (3 - 1) * 2048 * 2 == 180_224
    assert d.family.linear_kind == "short_conv"
    tp2 = _kv("LiquidAI__LFM2-2.6B.json", tp=2)
    assert tp2.kv.state_bytes_per_request == n_conv * (3 - 1) * 1024 * 2


def test_lfm2_full_attn_idxs_place_the_attention_layers() -> None:
    # was read as 16 full-attention layers: 32,768 B/token
    d = _kv("LiquidAI__LFM2-1.2B__full_attn_idxs.json")
    # transformers Lfm2Config: layer_types from full_attn_idxs [2, 5, 8, 10, 12, 14], conv_dim
    # defaults to hidden_size; vLLM lfm2.py then builds 6 attention + 10 ShortConv layers
    assert d.kv.kv_bytes_per_token == 6 * 8 * (64 + 64) * 2 == 12_288  # head 2048 / 32
    assert d.kv.state_bytes_per_request == 10 * (3 - 1) * 2048 * 2 == 81_920
    kinds = [lay.mixer for lay in d.architecture.layers]
    assert [i for i, k in enumerate(kinds) if k == "full"] == [2, 5, 8, 10, 12, 14]
    # LiquidAI/LFM2-1.2B: 1,170,340,608 parameters (embedding tied: Lfm2Config default)
    assert d.weights.params_total / 1_170_340_608 == pytest.approx(1, abs=0.005)


def test_gemma3n_shared_kv_layers_allocate_no_cache() -> None:
    # was refused: "intermediate_size: an integer" (one width per layer)
    raw = _wild("google__gemma-3n-E4B.json")["text_config"]
    d = _kv("google__gemma-3n-E4B.json")
    # vLLM gemma3n.py: layers >= num_hidden_layers - num_kv_shared_layers get a
    # kv_sharing_target_layer_name; gpu_model_runner.get_kv_cache_spec skips them. Layers 0-19
    # keep their own cache: full attention at 4, 9, 14, 19, sliding (512) elsewhere
    own = raw["num_hidden_layers"] - raw["num_kv_shared_layers"]
    assert own == 20
    per_layer = 2 * (256 + 256) * 2
    assert d.kv.kv_bytes_per_token == own * per_layer == 40_960
    assert d.kv.growing_bytes_per_token == 4 * per_layer
    assert [(g.kind, g.num_layers) for g in d.kv.groups] == [("full", 4), ("sliding", 16)]
    assert sum(lay.kv_shared for lay in d.architecture.layers) == 15
    assert {lay.ffn_intermediate for lay in d.architecture.layers} == {16384}


def test_llava_text_config_left_to_llama_defaults_is_a_7b_llama() -> None:
    # was refused: "hidden_size ... missing"
    cfg = normalize(_wild("llava-hf__llava-1.5-7b-hf.json"))
    assert say(cfg.defaults_applied["hidden_size"].said()).endswith("(nested text config)")
    d = diagnose(cfg, Options(kv_dtype="auto"))
    # transformers LlamaConfig defaults (4096 wide, 32 layers, 32 heads = 32 KV heads) that
    # vLLM llava.py builds; fp16 checkpoint
    assert d.kv.kv_bytes_per_token == 32 * 32 * (128 + 128) * 2 == 524_288
    # llava-hf/llava-1.5-7b-hf: 7.06B parameters
    assert d.weights.params_total / 1e9 == pytest.approx(7.06, rel=0.005)


def test_a_top_level_llama_config_still_needs_its_width() -> None:
    raw = json.loads((MODELS_DIR / "meta-llama__Meta-Llama-3.1-8B.json").read_text())
    del raw["hidden_size"]
    with pytest.raises(InputError) as err:
        normalize(raw)
    assert err.value.field == "hidden_size"


def test_minicpm3_caches_decoupled_rope_heads_not_a_latent() -> None:
    # was 62 x 40 x (64 + 64) x 2 = 634,880 B/token (head_dim from hidden / heads)
    d = _kv("openbmb__MiniCPM3-4B.json")
    # vLLM minicpm3.py: Attention(num_heads, qk_nope_head_dim + qk_rope_head_dim,
    # num_kv_heads=num_heads), V padded to the same size; minicpm3 is not an MLA model type
    assert d.kv.kv_bytes_per_token == 62 * 40 * (96 + 96) * 2 == 952_320
    assert d.family.attention_family == "MHA"


def test_granite_hybrid_reads_mamba_n_heads_and_mamba_d_head() -> None:
    d = _kv("ibm-granite__granite-4.0-h-tiny.json")
    # vLLM granitemoehybrid.py: mamba2_state_shape(mamba_expand * hidden_size, mamba_n_groups,
    # mamba_n_heads, mamba_d_head, mamba_d_state, mamba_d_conv)
    conv = (4 - 1) * (2 * 1536 + 2 * 1 * 128) * 2
    temporal = 48 * 64 * 128 * 2
    assert d.kv.state_bytes_per_request == 36 * (conv + temporal) == 29_030_400
    assert d.kv.kv_bytes_per_token == 4 * 4 * (128 + 128) * 2


def test_num_attention_groups_is_the_kv_head_count() -> None:
    # Step3 / Step3.5 spell their KV heads num_attention_groups (vLLM transformers_utils/
    # config.py CONFIG_FIELD_ALIASES["total_num_kv_heads"]; step3p5.py num_kv_heads=
    # config.num_attention_groups)
    raw = json.loads((MODELS_DIR / "Qwen__Qwen3-8B.json").read_text())
    raw["num_attention_groups"] = raw.pop("num_key_value_heads")
    cfg = normalize(raw)
    assert cfg.num_key_value_heads == 8
    assert diagnose(cfg, Options(kv_dtype="bf16")).kv.kv_bytes_per_token == 36 * 8 * 256 * 2


def test_per_layer_top_k_counts_its_largest_entry() -> None:
    # vLLM get_num_experts_per_token: a list (Hunyuan's moe_topk) counts its max
    raw = json.loads((MODELS_DIR / "Qwen__Qwen3-30B-A3B.json").read_text())
    raw.pop("num_experts_per_tok")
    raw["moe_topk"] = [8] * 48
    assert normalize(raw).experts_per_token == 8
