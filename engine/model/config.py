"""config.json -> one typed, normalised ``ModelConfig``.

Hugging Face configs spell the same thing many ways (``n_head``, ``num_kv_heads``,
``multi_query``) and nest the language model of multimodal checkpoints under
``text_config`` / ``language_config`` / ``llm_config``. Everything is resolved here,
once, at the boundary; the rules downstream read plain typed fields.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from engine.errors import InputError

TEXT_CONFIG_KEYS = ("text_config", "language_config", "llm_config", "thinker_config")
VISION_CONFIG_KEYS = ("vision_config", "visual", "vision_tower_config", "mm_vision_tower")
AUDIO_CONFIG_KEYS = ("audio_config",)

# alias -> canonical name, applied when the canonical name is absent (first alias wins).
ALIASES: dict[str, tuple[str, ...]] = {
    "hidden_size": ("n_embd", "d_model", "dim", "model_dim"),
    "num_hidden_layers": ("n_layer", "n_layers", "num_layers"),
    "num_attention_heads": ("n_head", "n_heads", "num_heads"),
    "num_key_value_heads": ("num_kv_heads", "n_head_kv", "n_kv_heads", "multi_query_group_num"),
    "head_dim": ("attention_head_dim", "head_size", "kv_channels"),
    "intermediate_size": ("ffn_hidden_size", "n_inner", "ffn_dim", "inter_dim"),
    "max_position_embeddings": ("n_positions", "seq_length", "max_seq_len", "max_sequence_length"),
    "num_experts": ("n_routed_experts", "num_local_experts", "moe_num_experts", "n_experts"),
    "experts_per_token": (
        "num_experts_per_tok",
        "top_k_experts",
        "moe_topk",
        "num_selected_experts",
        "moe_k",
        "n_activated_experts",
    ),
    "dtype": ("torch_dtype",),
    "vocab_size": ("padded_vocab_size",),
}

PosInt = Annotated[int, Field(strict=True, ge=1)]
NonNegInt = Annotated[int, Field(strict=True, ge=0)]
SizeInt = Annotated[int, Field(strict=True, ge=1, le=1_048_576)]
LayerInt = Annotated[int, Field(strict=True, ge=1, le=4096)]
HeadInt = Annotated[int, Field(strict=True, ge=1, le=65_536)]
DimInt = Annotated[int, Field(strict=True, ge=1, le=65_536)]
ContextInt = Annotated[int, Field(strict=True, ge=1, le=1 << 34)]

MAX_CONFIG_BYTES = 2_000_000


class ModelConfig(BaseModel):
    """The fields the rules read, typed and bounded. ``raw`` keeps the flattened
    original (unknown fields included) so every verdict can cite what it read."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    architectures: list[str] = Field(default_factory=list)
    model_type: str = ""
    wrapper_model_type: str = ""  # top-level model_type of a multimodal wrapper
    dtype: str = "bfloat16"
    hidden_size: SizeInt
    num_hidden_layers: LayerInt
    num_attention_heads: HeadInt
    num_key_value_heads: HeadInt
    head_dim: DimInt | None = None
    intermediate_size: Annotated[int, Field(strict=True, ge=0, le=4_194_304)] | None = None
    vocab_size: Annotated[int, Field(strict=True, ge=1, le=100_000_000)] = 32_000
    max_position_embeddings: ContextInt | None = None
    tie_word_embeddings: bool = False
    hidden_act: str = ""
    # sliding / local attention
    sliding_window: ContextInt | None = None
    layer_types: list[str] | None = None
    attention_chunk_size: ContextInt | None = None
    # MLA / DSA / DeepSeek-V4
    kv_lora_rank: DimInt | None = None
    q_lora_rank: DimInt | None = None
    qk_rope_head_dim: DimInt | None = None
    qk_nope_head_dim: DimInt | None = None
    v_head_dim: DimInt | None = None
    index_topk: PosInt | None = None
    index_head_dim: DimInt | None = None
    index_n_heads: HeadInt | None = None
    compress_ratios: list[NonNegInt] | None = None
    o_lora_rank: DimInt | None = None
    o_groups: HeadInt | None = None
    # MoE
    num_experts: Annotated[int, Field(strict=True, ge=0, le=65_536)] = 0
    experts_per_token: Annotated[int, Field(strict=True, ge=0, le=65_536)] = 0
    moe_intermediate_size: Annotated[int, Field(strict=True, ge=1, le=4_194_304)] | None = None
    n_shared_experts: Annotated[int, Field(strict=True, ge=0, le=1024)] = 0
    shared_expert_intermediate_size: Annotated[int, Field(strict=True, ge=0)] | None = None
    first_k_dense_replace: NonNegInt = 0
    moe_layer_freq: PosInt = 1
    decoder_sparse_step: PosInt = 1
    mlp_only_layers: list[NonNegInt] = Field(default_factory=list)
    # MTP
    mtp_layers: NonNegInt = 0
    # linear attention / Mamba
    linear_num_key_heads: HeadInt | None = None
    linear_num_value_heads: HeadInt | None = None
    linear_key_head_dim: DimInt | None = None
    linear_value_head_dim: DimInt | None = None
    linear_conv_kernel_dim: DimInt | None = None
    mamba_num_heads: HeadInt | None = None
    mamba_head_dim: DimInt | None = None
    mamba_n_groups: HeadInt | None = None
    ssm_state_size: DimInt | None = None
    conv_kernel: DimInt | None = None
    mamba_expand: Annotated[int, Field(strict=True, ge=1, le=64)] | None = None
    mamba_intermediate_size: SizeInt | None = None
    mamba_dt_rank: DimInt | None = None
    # Kimi Delta Attention (linear_attn_config of Kimi-Linear); kda_layers are 1-based
    kda_layers: list[PosInt] | None = None
    kda_num_heads: HeadInt | None = None
    kda_head_dim: DimInt | None = None
    kda_conv_kernel: DimInt | None = None
    # quantisation and multimodal parts (kept as plain JSON)
    quantization_config: dict[str, Any] | None = None
    vision_config: dict[str, Any] | None = None
    audio_config: dict[str, Any] | None = None
    raw: dict[str, Any] = Field(default_factory=dict)

    @property
    def architecture(self) -> str:
        return self.architectures[0] if self.architectures else "unknown"

    def field(self, name: str) -> Any:
        """A field of the flattened original config (for evidence and rare rules)."""
        return self.raw.get(name)


def _first(raw: Mapping[str, Any], names: tuple[str, ...]) -> tuple[str, Any] | None:
    for n in names:
        if n in raw and raw[n] is not None:
            return n, raw[n]
    return None


def flatten(raw: Mapping[str, Any]) -> dict[str, Any]:
    """Merge a nested language-model config over the top level (the text part wins)."""
    flat = {k: v for k, v in raw.items() if k not in TEXT_CONFIG_KEYS}
    for key in TEXT_CONFIG_KEYS:
        sub = raw.get(key)
        if isinstance(sub, Mapping):
            inner = sub.get("text_config")
            if isinstance(inner, Mapping):  # e.g. thinker_config.text_config
                sub = inner
            for k, v in sub.items():
                if k == "architectures" and flat.get("architectures"):
                    continue
                flat[k] = v
            flat["_text_config_key"] = key
            break
    return flat


def _check_finite(obj: Any, path: str) -> None:
    """Reject NaN anywhere; +-Infinity is allowed (configs publish it: time_step_limit)."""
    if isinstance(obj, float) and math.isnan(obj):
        raise InputError(path, "a number, not NaN")
    if isinstance(obj, Mapping):
        for k, v in obj.items():
            _check_finite(v, f"{path}.{k}" if path else str(k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            _check_finite(v, f"{path}[{i}]")


def _pick(flat: Mapping[str, Any], name: str) -> Any:
    if name in flat and flat[name] is not None:
        return flat[name]
    hit = _first(flat, ALIASES.get(name, ()))
    return None if hit is None else hit[1]


def _bool(flat: Mapping[str, Any], name: str, default: bool) -> bool:
    v = flat.get(name, default)
    if v is None:
        return default
    if not isinstance(v, bool):
        raise InputError(name, f"true or false, got {v!r}")
    return v


def _kv_heads(flat: Mapping[str, Any], num_heads: Any) -> Any:
    """vLLM ModelConfig.get_total_num_kv_heads: the first KV-head attribute present (MPT's
    ``attn_config.kv_n_heads`` included), else one head for ``multi_query`` (Falcon), else
    as many KV heads as query heads (MHA)."""
    attn_cfg = flat.get("attn_config")
    if isinstance(attn_cfg, Mapping) and attn_cfg.get("kv_n_heads") is not None:
        return attn_cfg["kv_n_heads"]
    v = _pick(flat, "num_key_value_heads")
    if v is not None:
        return v
    if flat.get("multi_query") is True:
        return 1
    return num_heads


def _layer_types(flat: Mapping[str, Any]) -> list[str] | None:
    v = flat.get("layer_types")
    if v is None:
        v = flat.get("layers_block_type")
    if v is None:
        return None
    if not isinstance(v, list) or not all(isinstance(t, str) for t in v):
        raise InputError("layer_types", "a list of strings such as 'full_attention'")
    return list(v)


def _sliding_window(flat: Mapping[str, Any]) -> Any:
    """``use_sliding_window: false`` (Qwen2/Qwen3) switches the published window off."""
    sw = flat.get("sliding_window")
    if sw is None or flat.get("use_sliding_window", True) is False:
        return None
    if isinstance(sw, list):  # some configs give one window per layer; take the distinct one
        vals = [x for x in sw if x]
        return vals[0] if vals else None
    return sw


def normalize(raw: Mapping[str, Any]) -> ModelConfig:
    """Validate and normalise a parsed config.json. Raises InputError naming the field."""
    if not isinstance(raw, Mapping):
        raise InputError("config.json", "a JSON object at the top level")
    _check_finite(raw, "")
    flat = flatten(raw)

    hidden = _pick(flat, "hidden_size")
    if hidden is None:
        raise InputError("hidden_size", "a positive integer (the model width); it is missing")
    heads = _pick(flat, "num_attention_heads")
    if heads is None:
        raise InputError("num_attention_heads", "a positive integer; it is missing")
    layers = _pick(flat, "num_hidden_layers")
    if layers is None:
        raise InputError("num_hidden_layers", "a positive integer; it is missing")

    archs = flat.get("architectures") or raw.get("architectures") or []
    if not isinstance(archs, list) or not all(isinstance(a, str) for a in archs):
        raise InputError("architectures", 'a list of model class names, e.g. ["LlamaForCausalLM"]')

    n_groups = flat.get("mamba_n_groups", flat.get("n_groups"))
    mtp = flat.get("num_nextn_predict_layers") or flat.get("mtp_num_hidden_layers") or 0
    dtype = _pick(flat, "dtype") or raw.get("torch_dtype") or raw.get("dtype") or "bfloat16"
    vision = _first(raw, VISION_CONFIG_KEYS)
    audio = _first(raw, AUDIO_CONFIG_KEYS)
    qcfg = raw.get("quantization_config", flat.get("quantization_config"))
    shared_inter = flat.get("shared_expert_intermediate_size")
    if shared_inter is None:
        shared_inter = flat.get("moe_shared_expert_intermediate_size")

    values: dict[str, Any] = {
        "architectures": archs,
        "model_type": str(flat.get("model_type") or ""),
        "wrapper_model_type": str(raw.get("model_type") or ""),
        "dtype": str(dtype),
        "hidden_size": hidden,
        "num_hidden_layers": layers,
        "num_attention_heads": heads,
        "num_key_value_heads": _kv_heads(flat, heads),
        "head_dim": _pick(flat, "head_dim") or None,
        "intermediate_size": _pick(flat, "intermediate_size"),
        "vocab_size": _pick(flat, "vocab_size") or 32_000,
        "max_position_embeddings": _pick(flat, "max_position_embeddings"),
        "tie_word_embeddings": _bool(flat, "tie_word_embeddings", False),
        "hidden_act": str(
            flat.get("mlp_hidden_act")
            or flat.get("hidden_act")
            or flat.get("hidden_activation")
            or flat.get("activation_function")
            or ""
        ),
        "sliding_window": _sliding_window(flat),
        "layer_types": _layer_types(flat),
        "attention_chunk_size": flat.get("attention_chunk_size"),
        "kv_lora_rank": flat.get("kv_lora_rank"),
        "q_lora_rank": flat.get("q_lora_rank"),
        "qk_rope_head_dim": flat.get("qk_rope_head_dim"),
        "qk_nope_head_dim": flat.get("qk_nope_head_dim"),
        "v_head_dim": flat.get("v_head_dim"),
        "index_topk": flat.get("index_topk"),
        "index_head_dim": flat.get("index_head_dim"),
        "index_n_heads": flat.get("index_n_heads"),
        "compress_ratios": flat.get("compress_ratios"),
        "o_lora_rank": flat.get("o_lora_rank"),
        "o_groups": flat.get("o_groups"),
        "num_experts": _pick(flat, "num_experts") or 0,
        "experts_per_token": _pick(flat, "experts_per_token") or 0,
        "moe_intermediate_size": flat.get("moe_intermediate_size")
        or flat.get("expert_intermediate_size"),
        "n_shared_experts": flat.get("n_shared_experts") or flat.get("num_shared_experts") or 0,
        "shared_expert_intermediate_size": shared_inter,
        "first_k_dense_replace": flat.get("first_k_dense_replace") or 0,
        "moe_layer_freq": flat.get("moe_layer_freq") or 1,
        "decoder_sparse_step": flat.get("decoder_sparse_step") or 1,
        "mlp_only_layers": flat.get("mlp_only_layers") or [],
        "mtp_layers": mtp,
        "linear_num_key_heads": flat.get("linear_num_key_heads"),
        "linear_num_value_heads": flat.get("linear_num_value_heads"),
        "linear_key_head_dim": flat.get("linear_key_head_dim"),
        "linear_value_head_dim": flat.get("linear_value_head_dim"),
        "linear_conv_kernel_dim": flat.get("linear_conv_kernel_dim"),
        "mamba_num_heads": flat.get("mamba_num_heads"),
        "mamba_head_dim": flat.get("mamba_head_dim"),
        "mamba_n_groups": n_groups,
        "ssm_state_size": flat.get("ssm_state_size") or flat.get("mamba_d_state"),
        "conv_kernel": flat.get("conv_kernel") or flat.get("mamba_d_conv"),
        "mamba_expand": flat.get("mamba_expand") or flat.get("expand"),
        "mamba_intermediate_size": flat.get("mamba_intermediate_size") or flat.get("mamba_d_inner"),
        "mamba_dt_rank": flat.get("mamba_dt_rank") or flat.get("time_step_rank"),
        "quantization_config": qcfg if isinstance(qcfg, dict) else None,
        "vision_config": vision[1] if vision and isinstance(vision[1], dict) else None,
        "audio_config": audio[1] if audio and isinstance(audio[1], dict) else None,
        "raw": dict(flat),
    }
    lac = flat.get("linear_attn_config")
    if isinstance(lac, Mapping) and lac.get("kda_layers") is not None:
        values["kda_layers"] = lac.get("kda_layers")
        values["kda_num_heads"] = lac.get("num_heads")
        values["kda_head_dim"] = lac.get("head_dim")
        values["kda_conv_kernel"] = lac.get("short_conv_kernel_size", 4)
    if values["mamba_dt_rank"] == "auto":
        values["mamba_dt_rank"] = None
    try:
        cfg = ModelConfig.model_validate(values)
    except ValidationError as err:
        first = err.errors()[0]
        loc = ".".join(str(p) for p in first["loc"]) or "config.json"
        got = first.get("input")
        raise InputError(
            loc, f"{_expected(first['type'], first.get('ctx'))}, got {got!r}"
        ) from None
    _cross_checks(cfg)
    return cfg


def _expected(kind: str, ctx: Mapping[str, Any] | None) -> str:
    ctx = ctx or {}
    if kind in ("int_type", "int_parsing", "int_from_float"):
        return "an integer"
    if kind == "greater_than_equal":
        return f"an integer >= {ctx.get('ge')}"
    if kind == "less_than_equal":
        return f"at most {ctx.get('le')} (a larger value is not a real model dimension)"
    if kind in ("string_type",):
        return "a string"
    if kind in ("list_type",):
        return "a list"
    if kind in ("bool_type", "bool_parsing"):
        return "true or false"
    if kind in ("dict_type",):
        return "a JSON object"
    return kind.replace("_", " ")


def _cross_checks(cfg: ModelConfig) -> None:
    if cfg.num_attention_heads % cfg.num_key_value_heads and cfg.kv_lora_rank is None:
        raise InputError(
            "num_key_value_heads",
            f"a divisor of num_attention_heads ({cfg.num_attention_heads}), "
            f"got {cfg.num_key_value_heads}",
        )
    if cfg.experts_per_token > cfg.num_experts and cfg.num_experts > 0:
        raise InputError(
            "num_experts_per_tok",
            f"at most num_experts ({cfg.num_experts}), got {cfg.experts_per_token}",
        )
    if cfg.layer_types is not None and len(cfg.layer_types) < cfg.num_hidden_layers:
        raise InputError(
            "layer_types",
            f"one entry per layer ({cfg.num_hidden_layers}), got {len(cfg.layer_types)}",
        )
    if cfg.kv_lora_rank is not None and cfg.qk_rope_head_dim is None:
        raise InputError("qk_rope_head_dim", "a positive integer when kv_lora_rank (MLA) is set")
    if cfg.index_topk is not None and cfg.kv_lora_rank is not None and cfg.index_head_dim is None:
        raise InputError("index_head_dim", "a positive integer when index_topk (DSA) is set")
