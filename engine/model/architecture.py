"""A model is its list of layers: which attention (or linear mixer) each one runs, its
dimensions, and its FFN. Decided from config fields the way vLLM's model code and
transformers' config defaults decide them; every decision records the field it read."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import StrEnum

from engine.errors import InputError
from engine.model.config import ModelConfig, model_defaults
from engine.rules import engine_rules

ATTN_FULL = ("full_attention", "attention", "global_attention", "hybrid", "global")
ATTN_SLIDING = ("sliding_attention", "sliding_window_attention", "local_attention", "local")
ATTN_CHUNKED = ("chunked_attention",)
LINEAR = ("linear_attention", "mamba", "mamba2", "gated_delta_net", "conv", "linear")
NO_MIXER = ("mlp", "moe", "ffn", "dense")


@dataclass(frozen=True)
class Evidence:
    field: str
    value: str
    rule: str


class Mixer(StrEnum):
    """A layer's token mixer. A ``StrEnum``: it compares and serialises as its value."""

    FULL = "full"
    SLIDING = "sliding"
    CHUNKED = "chunked"
    MLA = "mla"
    COMPRESSED = "compressed"  # DeepSeek-V4 compressed attention
    GDN = "gdn"  # Gated DeltaNet
    KDA = "kda"  # Kimi Delta Attention
    MAMBA2 = "mamba2"
    MAMBA1 = "mamba1"
    LIGHTNING = "lightning"
    SHORT_CONV = "short_conv"  # LFM2's gated short convolution
    NONE = "none"  # an FFN-only block (Nemotron-H's '-' / 'E')

    @property
    def is_linear(self) -> bool:
        """A recurrent state instead of a per-token KV cache."""
        return self in _LINEAR

    @property
    def is_attention(self) -> bool:
        """Softmax attention that keeps per-token KV (full, windowed, latent, compressed)."""
        return self not in _LINEAR and self is not Mixer.NONE

    @property
    def is_head_attention(self) -> bool:
        """Attention with K/V heads of its own (not MLA's latent, not V4's compressed entries)."""
        return self in (Mixer.FULL, Mixer.SLIDING, Mixer.CHUNKED)


_LINEAR = frozenset(
    {Mixer.GDN, Mixer.KDA, Mixer.MAMBA2, Mixer.MAMBA1, Mixer.LIGHTNING, Mixer.SHORT_CONV}
)


@dataclass(frozen=True)
class LayerPlan:
    """One decoder layer. ``mixer`` is the token mixer (see ``Mixer``); a plain string is
    read as its member. ``linear`` is a second, linear mixer the same layer also runs
    (Falcon-H1's parallel Mamba-2, Zamba2's hybrid layers): its state is kept beside the KV.
    ``kv_shared``: the layer reads another layer's KV cache and allocates none (vLLM
    ``kv_sharing_target_layer_name``, Gemma 3n / Gemma 4's last num_kv_shared_layers)."""

    index: int
    mixer: Mixer
    num_kv_heads: int = 0
    head_dim: int = 0
    head_dim_v: int = 0
    window: int | None = None
    indexer: bool = False
    compress_ratio: int = 0
    ffn: str = "dense"  # dense | moe | moe+dense | none
    num_heads: int = 0  # query heads of this layer (0: num_attention_heads)
    ffn_intermediate: int = 0  # this layer's dense FFN width (0: intermediate_size)
    linear: Mixer | None = None
    kv_shared: bool = False

    def __post_init__(self) -> None:
        if type(self.mixer) is not Mixer:
            object.__setattr__(self, "mixer", Mixer(self.mixer))
        if self.linear is not None and type(self.linear) is not Mixer:
            object.__setattr__(self, "linear", Mixer(self.linear))

    @property
    def mixers(self) -> tuple[Mixer, ...]:
        """Every token mixer of the layer (the main one, then a parallel linear one)."""
        return (self.mixer,) if self.linear is None else (self.mixer, self.linear)


@dataclass(frozen=True)
class Architecture:
    layers: tuple[LayerPlan, ...]
    linear_kind: Mixer | None
    evidence: tuple[Evidence, ...] = field(default_factory=tuple)

    def count(self, mixer: str) -> int:
        return sum(1 for layer in self.layers if mixer in layer.mixers)

    @property
    def attention_layers(self) -> int:
        return sum(1 for layer in self.layers if layer.mixer.is_attention)


def uses_mla(cfg: ModelConfig) -> bool:
    """vLLM ``ModelConfig.use_mla``: a DeepSeek-MLA model_type with ``kv_lora_rank`` set."""
    return cfg.kv_lora_rank is not None and cfg.model_type in engine_rules().mla_model_types.values


def head_size(cfg: ModelConfig) -> int:
    """vLLM ``get_head_size``: ``head_dim`` if set, else ``hidden_size // num_attention_heads``;
    MiniCPM3's decoupled-RoPE heads (data/model_defaults.yaml decoupled_rope_head_model_types)
    cache qk_nope_head_dim + qk_rope_head_dim per head."""
    if (
        cfg.model_type in model_defaults()["decoupled_rope_head_model_types"]
        and cfg.qk_nope_head_dim
        and cfg.qk_rope_head_dim
    ):
        return cfg.qk_nope_head_dim + cfg.qk_rope_head_dim
    if cfg.head_dim:
        return cfg.head_dim
    return cfg.hidden_size // cfg.num_attention_heads


def linear_kind(cfg: ModelConfig) -> Mixer | None:
    """Which linear mixer the config's fields describe (None: no linear layers possible)."""
    if cfg.attention_free:
        return Mixer(cfg.attention_free)
    if cfg.short_conv_kernel is not None:
        return Mixer.SHORT_CONV
    if cfg.linear_num_value_heads is not None and cfg.linear_value_head_dim is not None:
        return Mixer.GDN
    if cfg.kda_layers is not None and cfg.kda_num_heads and cfg.kda_head_dim:
        return Mixer.KDA
    if cfg.mamba_num_heads is not None or (cfg.mamba_n_groups is not None and cfg.ssm_state_size):
        return Mixer.MAMBA2
    if cfg.ssm_state_size is not None and (cfg.mamba_expand or cfg.mamba_intermediate_size):
        return Mixer.MAMBA1
    if cfg.field("attn_type_list") is not None:
        return Mixer.LIGHTNING
    return None


def _raw_layer_types(cfg: ModelConfig, ev: list[Evidence]) -> list[str]:
    n = cfg.num_hidden_layers
    raw = cfg.raw
    if cfg.layer_types is not None:
        key = "layer_types" if raw.get("layer_types") is not None else "layers_block_type"
        ev.append(Evidence(key, _short(cfg.layer_types), "per-layer kinds given by the config"))
        return [t.lower() for t in cfg.layer_types[:n]]
    pattern = raw.get("hybrid_override_pattern")
    if isinstance(pattern, str) and pattern:
        if len(pattern) < n:
            raise InputError("hybrid_override_pattern", f"one character per layer ({n})")
        ev.append(
            Evidence(
                "hybrid_override_pattern",
                _short(pattern),
                "M = Mamba-2, * = attention, - = MLP, E = MoE (Nemotron-H)",
            )
        )
        m = {"M": "mamba", "*": "full_attention", "-": "mlp", "E": "moe"}
        return [m.get(c, f"unknown:{c}") for c in pattern[:n]]
    period = raw.get("attn_layer_period")
    if isinstance(period, int) and period > 0:
        offset = raw.get("attn_layer_offset", 0)
        ev.append(
            Evidence(
                "attn_layer_period / attn_layer_offset",
                f"{period} / {offset}",
                "attention where layer % period == offset, Mamba elsewhere (Jamba)",
            )
        )
        return ["full_attention" if i % period == offset else "mamba" for i in range(n)]
    interval = raw.get("full_attention_interval")
    if isinstance(interval, int) and interval > 0 and linear_kind(cfg) is not None:
        ev.append(
            Evidence(
                "full_attention_interval",
                str(interval),
                "every interval-th layer is full attention, the rest linear (transformers default)",
            )
        )
        return [
            "full_attention" if (i + 1) % interval == 0 else "linear_attention" for i in range(n)
        ]
    for key, mapping in model_defaults()["layer_pattern_lists"].items():
        pat_list = raw.get(key)
        if isinstance(pat_list, list) and pat_list:
            if len(pat_list) < n:
                raise InputError(key, f"one entry per layer ({n}), got {len(pat_list)}")
            kinds = []
            for i, v in enumerate(pat_list[:n]):
                if isinstance(v, bool) or v not in mapping:
                    raise InputError(f"{key}[{i}]", f"one of {sorted(mapping)}, got {v!r}")
                kinds.append(mapping[v])
            rule = ", ".join(f"{k} = {v}" for k, v in mapping.items())
            ev.append(Evidence(key, _short(pat_list), f"per-layer pattern: {rule}"))
            return kinds
    atl = raw.get("attn_type_list")
    if isinstance(atl, list) and atl:
        ev.append(Evidence("attn_type_list", _short(atl), "1 = softmax attention, 0 = lightning"))
        return ["full_attention" if t == 1 else "linear_attention" for t in atl[:n]]
    indices = raw.get("attn_layer_indices")
    if isinstance(indices, list) and linear_kind(cfg) is not None:
        ev.append(Evidence("attn_layer_indices", _short(indices), "attention at these layers"))
        return ["full_attention" if i in indices else "mamba" for i in range(n)]
    idxs = raw.get("full_attn_idxs")
    if isinstance(idxs, list) and linear_kind(cfg) is Mixer.SHORT_CONV:
        ev.append(
            Evidence(
                "full_attn_idxs",
                _short(idxs),
                "attention at these layers, short convolution elsewhere (transformers Lfm2Config)",
            )
        )
        return ["full_attention" if i in idxs else "conv" for i in range(n)]
    if cfg.attention_chunk_size:
        nrl = raw.get("no_rope_layers")
        if isinstance(nrl, list) and len(nrl) >= n:
            flags = [bool(x) for x in nrl[:n]]
            rule = "no_rope_layers[i] = 1 -> chunked local (RoPE) layer, 0 -> global NoPE layer"
        else:
            step = raw.get("no_rope_layer_interval", 4)
            flags = [(i + 1) % step != 0 for i in range(n)]
            rule = f"transformers default: every {step}th layer global (NoPE), the rest chunked"
        ev.append(Evidence("attention_chunk_size", str(cfg.attention_chunk_size), rule))
        return ["chunked_attention" if f else "full_attention" for f in flags]
    if cfg.layer_windows is not None:
        ev.append(
            Evidence(
                "sliding_window",
                _short(cfg.field("sliding_window")),
                "one window per layer: a window slides, null / 0 is full attention",
            )
        )
        return ["sliding_attention" if w else "full_attention" for w in cfg.layer_windows[:n]]
    if cfg.sliding_window:
        pat = raw.get("sliding_window_pattern") or raw.get("_sliding_window_pattern")
        defaults = engine_rules().default_sliding_patterns.values
        if not isinstance(pat, int) and cfg.model_type in defaults:
            pat = defaults[cfg.model_type]
        if isinstance(pat, int) and pat > 1:
            ev.append(
                Evidence(
                    "sliding_window_pattern",
                    str(pat),
                    "every pattern-th layer global, the rest sliding (transformers default)",
                )
            )
            return [
                "full_attention" if (i + 1) % pat == 0 else "sliding_attention" for i in range(n)
            ]
        mwl = raw.get("max_window_layers")
        if raw.get("use_sliding_window") is True and isinstance(mwl, int) and mwl < n:
            ev.append(
                Evidence("max_window_layers", str(mwl), "layers from max_window_layers on slide")
            )
            return ["sliding_attention" if i >= mwl else "full_attention" for i in range(n)]
        ev.append(
            Evidence(
                "sliding_window",
                str(cfg.sliding_window),
                "no layer pattern: every layer uses the sliding window (as vLLM applies it)",
            )
        )
        return ["sliding_attention"] * n
    if raw.get("sliding_window") is not None and raw.get("use_sliding_window") is False:
        ev.append(
            Evidence(
                "use_sliding_window",
                "false",
                f"sliding_window={raw.get('sliding_window')} is published but switched off",
            )
        )
    return ["full_attention"] * n


def _moe_layer(cfg: ModelConfig, i: int, kind: str, blocks: bool = False) -> str:
    """FFN of layer i. In a block list (Nemotron-H's pattern or layers_block_type, where
    'mlp' / 'moe' are blocks of their own) a block carries either a mixer or an FFN;
    elsewhere every layer has an FFN, MoE where the config's schedule says."""
    raw = cfg.raw
    if kind == "mlp":
        return "dense"
    if kind == "moe":
        return "moe"
    if blocks:
        return "none"
    if cfg.num_experts <= 1:
        return "dense"
    if raw.get("enable_moe_block") or raw.get("use_second_mlp_block"):
        return "moe+dense"
    period = raw.get("expert_layer_period")
    if isinstance(period, int) and period > 0:
        return "moe" if i % period == raw.get("expert_layer_offset", 0) else "dense"
    step = raw.get("interleave_moe_layer_step")
    if isinstance(step, int) and step > 0:
        return "moe" if (i + 1) % step == 0 else "dense"
    if cfg.moe_layers is not None:
        return "moe" if cfg.moe_layers[i] else "dense"
    if i < cfg.first_k_dense_replace or i in cfg.mlp_only_layers:
        return "dense"
    if i % cfg.moe_layer_freq != 0 or (i + 1) % cfg.decoder_sparse_step != 0:
        return "dense"
    return "moe"


def _indexer_layers(cfg: ModelConfig) -> list[bool]:
    """vLLM IndexCache: layer i skips its indexer when index_topk_pattern[i] == 'S', or
    (no pattern) when max(i - offset + 1, 0) % freq != 0 (defaults freq 1, offset 2)."""
    raw = cfg.raw
    freq = raw.get("index_topk_freq") or 1
    offset = raw.get("index_skip_topk_offset", 2)
    pattern = raw.get("index_topk_pattern")
    out = []
    for i in range(cfg.num_hidden_layers):
        if isinstance(pattern, (str, list)) and i < len(pattern):
            skip = pattern[i] == "S"
        elif pattern is not None:
            skip = False
        else:
            skip = max(i - offset + 1, 0) % freq != 0
        out.append(not skip)
    return out


def build_architecture(cfg: ModelConfig) -> Architecture:
    ev: list[Evidence] = [Evidence("architectures", cfg.architecture, "model class")]
    if cfg.model_type:
        ev.append(Evidence("model_type", cfg.model_type, "engine rules are keyed by it"))
    for name, why in cfg.defaults_applied.items():
        value = getattr(cfg, name, None)
        if name == "mtp_num_hidden_layers":
            value = cfg.mtp_layers
        ev.append(Evidence(name, _short(value), f"absent from config.json: {why}"))
    n = cfg.num_hidden_layers
    hs = head_size(cfg)
    lk = linear_kind(cfg)
    layers: list[LayerPlan] = []

    if cfg.compress_ratios is not None:
        return _deepseek_v4(cfg, ev)

    if cfg.attention_free:
        assert lk is not None
        ev.append(
            Evidence(
                "architectures",
                cfg.architecture,
                f"attention-free: every layer is one {lk} mixer and no MLP (vLLM IsAttentionFree)",
            )
        )
        ev.append(Evidence("linear mixer", lk, _LINEAR_RULES[lk]))
        return Architecture(tuple(LayerPlan(i, lk, ffn="none") for i in range(n)), lk, tuple(ev))

    if uses_mla(cfg):
        assert cfg.kv_lora_rank is not None and cfg.qk_rope_head_dim is not None
        ev.append(
            Evidence(
                "kv_lora_rank / qk_rope_head_dim",
                f"{cfg.kv_lora_rank} / {cfg.qk_rope_head_dim}",
                f"model_type {cfg.model_type} with kv_lora_rank -> MLA (vLLM use_mla)",
            )
        )
        dsa = cfg.index_topk is not None
        idx = _indexer_layers(cfg) if dsa else [False] * n
        if dsa:
            ev.append(
                Evidence(
                    "index_topk / index_head_dim",
                    f"{cfg.index_topk} / {cfg.index_head_dim}",
                    "DSA: an indexer picks the top-k tokens each MLA layer attends to",
                )
            )
        if cfg.kda_layers is not None:
            kda = set(cfg.kda_layers)
            kinds = ["linear_attention" if i + 1 in kda else "full_attention" for i in range(n)]
            ev.append(
                Evidence(
                    "linear_attn_config.kda_layers",
                    _short(sorted(kda)),
                    "1-based layers running Kimi Delta Attention; the rest are MLA",
                )
            )
        elif cfg.layer_types:
            kinds = _raw_layer_types(cfg, [])
        else:
            kinds = ["full_attention"] * n
        for i in range(n):
            k = kinds[i]
            if k in LINEAR and lk is not None:
                layers.append(LayerPlan(i, lk, ffn=_moe_layer(cfg, i, k)))
            else:
                layers.append(
                    LayerPlan(
                        i,
                        Mixer.MLA,
                        num_kv_heads=1,
                        head_dim=cfg.kv_lora_rank + cfg.qk_rope_head_dim,
                        indexer=idx[i],
                        ffn=_moe_layer(cfg, i, k),
                    )
                )
        _moe_evidence(cfg, ev)
        return Architecture(tuple(layers), lk, tuple(ev))

    if cfg.kv_lora_rank is not None:
        ev.append(
            Evidence(
                "kv_lora_rank",
                str(cfg.kv_lora_rank),
                f"set, but model_type {cfg.model_type!r} is not one vLLM runs as MLA: "
                "treated as standard attention",
            )
        )
    if cfg.block_configs is not None:
        return _block_configs(cfg, ev, hs)
    kinds = _raw_layer_types(cfg, ev)
    # FFNs are layers of their own (Nemotron-H's pattern, layers_block_type with mlp / moe)
    blocks = bool(cfg.field("hybrid_override_pattern")) or any(k in NO_MIXER for k in kinds)
    global_hd = cfg.field("global_head_dim")
    k_eq_v = cfg.field("attention_k_eq_v") is True
    global_kv = cfg.field("num_global_key_value_heads")
    # value head size of standard attention (vLLM head_size_v; MiMo-V2-Flash's diff-KV layers)
    hdv_full = cfg.v_head_dim if cfg.kv_lora_rank is None and cfg.v_head_dim else None
    for i in range(n):
        k = kinds[i]
        ffn = _moe_layer(cfg, i, k, blocks)
        if k in LINEAR or k == "mamba":
            if lk is None:
                raise InputError(
                    "layer_types",
                    f"linear layer {i} ({k!r}) needs its state dimensions "
                    "(linear_* or mamba/ssm fields), which are missing",
                )
            layers.append(LayerPlan(i, lk, ffn=ffn))
        elif k in NO_MIXER or (cfg.layer_kv_heads is not None and cfg.layer_kv_heads[i] == 0):
            layers.append(LayerPlan(i, Mixer.NONE, ffn=ffn))
        elif k in ATTN_SLIDING or k in ATTN_FULL or k in ATTN_CHUNKED:
            kv = cfg.layer_kv_heads[i] if cfg.layer_kv_heads else cfg.num_key_value_heads
            q = cfg.layer_q_heads[i] if cfg.layer_q_heads else 0
            hd = hs
            hdv = hdv_full or hd
            if k in ATTN_FULL and isinstance(global_hd, int) and global_hd > 0:
                hd = hdv = global_hd  # Gemma 4: global layers use global_head_dim
                if k_eq_v and isinstance(global_kv, int) and global_kv > 0:
                    kv = global_kv
            if k in ATTN_SLIDING:
                window = cfg.layer_windows[i] if cfg.layer_windows else cfg.sliding_window
                if not window:
                    raise InputError("sliding_window", f"a window size for sliding layer {i}")
                # swa_* fields give sliding layers their own shapes (vLLM mimo_v2_flash.py)
                kv = cfg.swa_num_key_value_heads or kv
                q = cfg.swa_num_attention_heads or q
                if cfg.swa_head_dim:
                    hd = cfg.swa_head_dim
                    hdv = cfg.swa_v_head_dim or hd
                layers.append(
                    LayerPlan(i, Mixer.SLIDING, kv, hd, hdv, window, ffn=ffn, num_heads=q)
                )
            elif k in ATTN_CHUNKED:
                assert cfg.attention_chunk_size is not None
                layers.append(
                    LayerPlan(
                        i,
                        Mixer.CHUNKED,
                        kv,
                        hd,
                        hdv,
                        cfg.attention_chunk_size,
                        ffn=ffn,
                        num_heads=q,
                    )
                )
            else:
                layers.append(LayerPlan(i, Mixer.FULL, kv, hd, hdv, ffn=ffn, num_heads=q))
        else:
            raise InputError("layer_types", f"known layer kinds; layer {i} is {k!r}")
    layers = _layer_extras(cfg, layers, kinds, lk, ev)
    _per_layer_evidence(cfg, ev, layers)
    if isinstance(global_hd, int) and global_hd > 0 and global_hd != hs:
        ev.append(
            Evidence(
                "global_head_dim",
                str(global_hd),
                f"full-attention layers use head_dim {global_hd}, sliding layers {hs}",
            )
        )
        if k_eq_v and isinstance(global_kv, int):
            ev.append(
                Evidence(
                    "attention_k_eq_v / num_global_key_value_heads",
                    f"true / {global_kv}",
                    "full layers have their own KV-head count; vLLM still stores V (= K)",
                )
            )
    if lk is not None and any(lk in layer.mixers for layer in layers):
        ev.append(Evidence("linear mixer", lk, _LINEAR_RULES[lk]))
    _moe_evidence(cfg, ev)
    return Architecture(tuple(layers), lk, tuple(ev))


def _layer_extras(
    cfg: ModelConfig,
    layers: list[LayerPlan],
    kinds: list[str],
    lk: Mixer | None,
    ev: list[Evidence],
) -> list[LayerPlan]:
    """What a layer carries besides its main mixer: a parallel linear mixer (Falcon-H1's every
    layer, Zamba2's 'hybrid' layers), a KV cache borrowed from an earlier layer (Gemma 3n /
    Gemma 4's num_kv_shared_layers) and its own FFN width (a per-layer intermediate_size)."""
    n = cfg.num_hidden_layers
    parallel = lk is not None and cfg.model_type in model_defaults()["parallel_hybrid_model_types"]
    shared_from = n - cfg.num_kv_shared_layers if cfg.num_kv_shared_layers else n
    out = []
    for i, layer in enumerate(layers):
        extra: dict[str, object] = {}
        attn = layer.mixer.is_attention
        if attn and lk is not None and (parallel or kinds[i] == "hybrid"):
            extra["linear"] = lk
        if attn and i >= shared_from:
            extra["kv_shared"] = True
        if cfg.layer_ffn_widths is not None and layer.ffn == "dense":
            extra["ffn_intermediate"] = cfg.layer_ffn_widths[i]
        out.append(replace(layer, **extra) if extra else layer)  # type: ignore[arg-type]
    n_par = sum(1 for lay in out if lay.linear is not None)
    if n_par:
        rule = (
            "every layer runs attention and a Mamba-2 mixer side by side (vLLM falcon_h1.py)"
            if parallel
            else "'hybrid' layers run a shared attention block and a Mamba-2 mixer (vLLM zamba2.py)"
        )
        ev.append(Evidence("layer kinds", f"{n_par} layers with attention + {lk}", rule))
    n_shared = sum(1 for lay in out if lay.kv_shared)
    if n_shared:
        ev.append(
            Evidence(
                "num_kv_shared_layers",
                str(cfg.num_kv_shared_layers),
                f"the last {n_shared} attention layers reuse an earlier layer's KV cache and "
                "allocate none (vLLM kv_sharing_target_layer_name)",
            )
        )
    return out


def _block_configs(cfg: ModelConfig, ev: list[Evidence], hs: int) -> Architecture:
    """vLLM nemotron_nas.py DeciLMDecoderLayer: per layer, a no-op attention has no weights
    and no cache, any other has num_attention_heads // n_heads_in_group KV heads; a no-op
    FFN is skipped, any other is a dense MLP of its own width (ffn_mult)."""
    assert cfg.block_configs is not None
    blocks = cfg.block_configs[: cfg.num_hidden_layers]
    layers = []
    for i, b in enumerate(blocks):
        ffn = "dense" if b.ffn_intermediate else "none"
        if b.kv_heads:
            layers.append(
                LayerPlan(
                    i, Mixer.FULL, b.kv_heads, hs, hs, ffn=ffn, ffn_intermediate=b.ffn_intermediate
                )
            )
        else:
            layers.append(LayerPlan(i, Mixer.NONE, ffn=ffn, ffn_intermediate=b.ffn_intermediate))
    n_attn = sum(1 for b in blocks if b.kv_heads)
    heads = sorted({b.kv_heads for b in blocks if b.kv_heads})
    ev.append(
        Evidence(
            "block_configs",
            f"{n_attn} attention + {len(blocks) - n_attn} no-op attention layers",
            "per-layer blocks: a no-op attention holds no cache; KV heads per attention layer "
            f"= num_attention_heads // n_heads_in_group ({', '.join(map(str, heads))})",
        )
    )
    widths = sorted({b.ffn_intermediate for b in blocks if b.ffn_intermediate})
    ev.append(
        Evidence(
            "block_configs[].ffn.ffn_mult",
            ", ".join(map(str, widths)),
            "dense FFN width per layer = multiple of 256 above 2 × ffn_mult × hidden_size / 3",
        )
    )
    return Architecture(tuple(layers), None, tuple(ev))


def _per_layer_evidence(cfg: ModelConfig, ev: list[Evidence], layers: list[LayerPlan]) -> None:
    if cfg.layer_kv_heads is not None:
        ev.append(
            Evidence(
                "num_key_value_heads",
                _short(cfg.layer_kv_heads),
                "one KV-head count per layer (0: the layer has no attention)",
            )
        )
    if cfg.swa_num_key_value_heads or cfg.swa_head_dim:
        sw = next((lay for lay in layers if lay.mixer == "sliding"), None)
        if sw is not None:
            ev.append(
                Evidence(
                    "swa_num_key_value_heads / swa_head_dim / swa_v_head_dim",
                    f"{sw.num_kv_heads} / {sw.head_dim} / {sw.head_dim_v}",
                    "sliding-window layers have their own KV heads and head sizes",
                )
            )
    full = next((lay for lay in layers if lay.mixer == "full"), None)
    if full is not None and full.head_dim_v != full.head_dim:
        ev.append(
            Evidence(
                "v_head_dim",
                str(full.head_dim_v),
                f"K and V differ in size: {full.head_dim} + {full.head_dim_v} per KV head",
            )
        )
    if cfg.moe_layers is not None:
        ev.append(
            Evidence(
                "moe_layer_freq",
                _short([int(x) for x in cfg.moe_layers]),
                "one entry per layer: 1 = MoE FFN, 0 = dense FFN",
            )
        )


_LINEAR_RULES = {
    "gdn": "linear_num_value_heads / linear_value_head_dim -> Gated DeltaNet state",
    "kda": "linear_attn_config num_heads / head_dim -> Kimi Delta Attention state",
    "mamba2": "mamba_num_heads / n_groups / ssm_state_size -> Mamba-2 state",
    "mamba1": "mamba_d_state / mamba_expand -> Mamba-1 state",
    "lightning": "attn_type_list -> lightning (linear) attention state",
    "short_conv": "conv_L_cache / conv_dim -> short-convolution state (LFM2)",
}


def _deepseek_v4(cfg: ModelConfig, ev: list[Evidence]) -> Architecture:
    """DeepSeek-V4: every layer keeps a sliding window of raw entries plus, at its
    compression ratio, compressed K=V entries; ratio-4 layers also index (DSA)."""
    ratios = cfg.compress_ratios or []
    n = cfg.num_hidden_layers
    if len(ratios) < n:
        raise InputError("compress_ratios", f"one ratio per layer ({n}), got {len(ratios)}")
    if not cfg.sliding_window:
        raise InputError("sliding_window", "a window size for DeepSeek-V4 compressed attention")
    hd = head_size(cfg)
    ev.append(
        Evidence(
            "compress_ratios",
            _short(ratios[:n]),
            "compressed attention: one K=V entry per ratio tokens per layer",
        )
    )
    ev.append(Evidence("sliding_window", str(cfg.sliding_window), "raw entries of recent tokens"))
    if cfg.index_topk is not None:
        ev.append(
            Evidence(
                "index_topk / index_head_dim",
                f"{cfg.index_topk} / {cfg.index_head_dim}",
                "DSA indexer on the finer-ratio layers",
            )
        )
    finest = min((r for r in ratios[:n] if r > 0), default=0)
    layers = [
        LayerPlan(
            i,
            Mixer.COMPRESSED,
            num_kv_heads=1,
            head_dim=hd,
            head_dim_v=0,
            window=cfg.sliding_window,
            indexer=cfg.index_topk is not None and ratios[i] == finest and finest > 0,
            compress_ratio=ratios[i],
            ffn=_moe_layer(cfg, i, "full_attention"),
        )
        for i in range(n)
    ]
    _moe_evidence(cfg, ev)
    return Architecture(tuple(layers), None, tuple(ev))


def _moe_evidence(cfg: ModelConfig, ev: list[Evidence]) -> None:
    if cfg.num_experts > 1:
        ev.append(
            Evidence(
                "num_experts / experts_per_token",
                f"{cfg.num_experts} / {cfg.experts_per_token}",
                "MoE: each token runs top-k of the routed experts",
            )
        )
        shared = cfg.n_shared_experts or (1 if cfg.shared_expert_intermediate_size else 0)
        if shared:
            ev.append(Evidence("shared experts", str(shared), "always-on experts beside top-k"))
        if cfg.first_k_dense_replace:
            ev.append(
                Evidence(
                    "first_k_dense_replace",
                    str(cfg.first_k_dense_replace),
                    "the first k layers keep a dense FFN",
                )
            )


def _short(v: object, limit: int = 60) -> str:
    s = "".join(v) if isinstance(v, str) else str(v)
    return s if len(s) <= limit else s[: limit - 1] + "…"
