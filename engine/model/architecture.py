"""A model is its list of layers: which attention (or linear mixer) each one runs, its
dimensions, and its FFN. Decided from config fields the way vLLM's model code and
transformers' config defaults decide them; every decision records the field it read.

This module reads the config's spellings of a layer pattern (``layer_types``, Nemotron-H's
``hybrid_override_pattern``, Jamba's periods, the per-layer lists …) and the FFN schedule;
what each kind of layer *is* — its shapes, its cache, its weights, its label — belongs to its
mixer family (engine/model/mixers/)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property

from engine import errors as E
from engine.decision import Code, Name
from engine.errors import InputError
from engine.model.config import ModelConfig, model_defaults
from engine.model.evidence import LAYER_KINDS, Evidence, short
from engine.model.mixers import (
    LayerPlan,
    LayerShape,
    Mixer,
    MixerFamily,
    families,
    family,
    for_layer_kind,
    head_size,
    linear_families,
    scheduling_families,
    uses_mla,
)
from engine.model.mixers.kv_shared import KV_SHARING
from engine.model.mixers.linear import LINEAR_KINDS, LinearMixer

__all__ = [
    "Architecture",
    "Evidence",
    "LayerPlan",
    "Mixer",
    "build_architecture",
    "head_size",
    "linear_kind",
    "uses_mla",
]

MODEL_CLASS = Code("family.evidence.model_class")
MODEL_TYPE = Code("family.evidence.model_type")
DEFAULT = Code("family.evidence.default", "source")
ATTENTION_FREE = Code("family.evidence.attention_free", "mixer")
LAYER_TYPES = Code("family.evidence.layer_types")
NEMOTRON_PATTERN = Code("family.evidence.hybrid_override_pattern")
JAMBA_PERIOD = Code("family.evidence.attn_layer_period")
INTERVAL = Code("family.evidence.full_attention_interval")
PATTERN_LIST = Code("family.evidence.pattern_list", "mapping")
ATTN_TYPE_LIST = Code("family.evidence.attn_type_list")
ATTN_INDICES = Code("family.evidence.attn_layer_indices")
KDA_LAYERS = Code("family.evidence.kda_layers")
NOT_MLA = Code("family.evidence.not_mla", "model_type")
PARALLEL = Code("family.evidence.parallel_hybrid", "layers", "mixer")
HYBRID_BLOCKS = Code("family.evidence.hybrid_blocks", "layers", "mixer")
BLOCK_CONFIGS = Code("family.evidence.block_configs", "attention", "noop", "heads")
FFN_MULT = Code("family.evidence.ffn_mult")
LAYER_KV_HEADS = Code("family.evidence.layer_kv_heads")
MOE_LAYERS = Code("family.evidence.moe_layers")
MOE = Code("family.evidence.moe")
SHARED = Code("family.evidence.shared_experts")
FIRST_DENSE = Code("family.evidence.first_k_dense_replace")
# how the layer strip names an FFN
FFN_LABELS = {
    "dense": Code("layer.ffn.dense"),
    "moe": Code("layer.ffn.moe"),
    "moe+dense": Code("layer.ffn.moe_dense"),
    "none": Code("layer.ffn.none"),
}


@dataclass(frozen=True)
class Architecture:
    layers: tuple[LayerPlan, ...]
    linear_kind: Mixer | None
    evidence: tuple[Evidence, ...] = field(default_factory=tuple)

    def count(self, mixer: str) -> int:
        return sum(1 for layer in self.layers if mixer in layer.mixers)

    @cached_property
    def attention_layers(self) -> int:
        """Counted once per architecture: the layout search asks it for every split."""
        return sum(1 for layer in self.layers if layer.mixer.is_attention)


def linear_kind(cfg: ModelConfig) -> Mixer | None:
    """Which linear mixer the config's fields describe (None: no linear layers possible): an
    attention-free model class names its own, else the first linear family whose state
    fields the config carries."""
    if cfg.attention_free:
        return Mixer(cfg.attention_free)
    found = next((f for f in linear_families() if f.describes(cfg)), None)
    return Mixer(found.key) if found is not None else None


def _attention_family(cfg: ModelConfig) -> MixerFamily:
    """The family that builds this model's attention layers: one that claims the config
    (DeepSeek-V4's compressed attention, MLA), else full / windowed attention by layer kind."""
    claiming = sorted((f for f in families() if f.claims(cfg)), key=lambda f: f.priority)
    return claiming[0] if claiming else family("full")


def _raw_layer_types(cfg: ModelConfig, ev: list[Evidence], lk: Mixer | None) -> list[str]:
    n = cfg.num_hidden_layers
    raw = cfg.raw
    if cfg.layer_types is not None:
        key = "layer_types" if raw.get("layer_types") is not None else "layers_block_type"
        ev.append(Evidence(key, short(cfg.layer_types), LAYER_TYPES()))
        return [t.lower() for t in cfg.layer_types[:n]]
    pattern = raw.get("hybrid_override_pattern")
    if isinstance(pattern, str) and pattern:
        if len(pattern) < n:
            raise InputError(
                "hybrid_override_pattern", E.PATTERN_PER_LAYER(layers=n, got=len(pattern))
            )
        ev.append(Evidence("hybrid_override_pattern", short(pattern), NEMOTRON_PATTERN()))
        m = {"M": "mamba", "*": "full_attention", "-": "mlp", "E": "moe"}
        return [m.get(c, f"unknown:{c}") for c in pattern[:n]]
    period = raw.get("attn_layer_period")
    if isinstance(period, int) and period > 0:
        offset = raw.get("attn_layer_offset", 0)
        ev.append(
            Evidence(
                "attn_layer_period / attn_layer_offset", f"{period} / {offset}", JAMBA_PERIOD()
            )
        )
        return ["full_attention" if i % period == offset else "mamba" for i in range(n)]
    interval = raw.get("full_attention_interval")
    if isinstance(interval, int) and interval > 0 and lk is not None:
        ev.append(Evidence("full_attention_interval", str(interval), INTERVAL()))
        return [
            "full_attention" if (i + 1) % interval == 0 else "linear_attention" for i in range(n)
        ]
    for key, mapping in model_defaults()["layer_pattern_lists"].items():
        pat_list = raw.get(key)
        if isinstance(pat_list, list) and pat_list:
            if len(pat_list) < n:
                raise InputError(key, E.PER_LAYER(layers=n, got=len(pat_list)))
            kinds = []
            for i, v in enumerate(pat_list[:n]):
                if isinstance(v, bool) or v not in mapping:
                    raise InputError(
                        f"{key}[{i}]",
                        E.ONE_OF_GOT(
                            choices=tuple(E.got(c) for c in sorted(mapping)), got=E.got(v)
                        ),
                    )
                kinds.append(mapping[v])
            rule = ", ".join(f"{k} = {v}" for k, v in mapping.items())
            ev.append(Evidence(key, short(pat_list), PATTERN_LIST(mapping=Name(rule))))
            return kinds
    atl = raw.get("attn_type_list")
    if isinstance(atl, list) and atl:
        ev.append(Evidence("attn_type_list", short(atl), ATTN_TYPE_LIST()))
        return ["full_attention" if t == 1 else "linear_attention" for t in atl[:n]]
    indices = raw.get("attn_layer_indices")
    if isinstance(indices, list) and lk is not None:
        ev.append(Evidence("attn_layer_indices", short(indices), ATTN_INDICES()))
        return ["full_attention" if i in indices else "mamba" for i in range(n)]
    for fam in scheduling_families():
        found = fam.schedule(cfg, lk)
        if found is not None:
            ev.append(found.evidence)
            return found.kinds[:n]
    return ["full_attention"] * n


def _latent_layer_types(cfg: ModelConfig, ev: list[Evidence]) -> list[str]:
    """Layer kinds of an MLA / compressed-attention model: Kimi's 1-based kda_layers, the
    config's layer_types, else every layer attention."""
    n = cfg.num_hidden_layers
    if cfg.kda_layers is not None:
        kda = set(cfg.kda_layers)
        ev.append(Evidence("linear_attn_config.kda_layers", short(sorted(kda)), KDA_LAYERS()))
        return ["linear_attention" if i + 1 in kda else "full_attention" for i in range(n)]
    if cfg.layer_types:
        return [t.lower() for t in cfg.layer_types[:n]]
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


def _base_evidence(cfg: ModelConfig) -> list[Evidence]:
    ev: list[Evidence] = [Evidence("architectures", cfg.architecture, MODEL_CLASS())]
    if cfg.model_type:
        ev.append(Evidence("model_type", cfg.model_type, MODEL_TYPE()))
    for name, why in cfg.defaults_applied.items():
        value = getattr(cfg, name, None)
        if name == "mtp_num_hidden_layers":
            value = cfg.mtp_layers
        ev.append(Evidence(name, short(value), DEFAULT(source=why.said())))
    return ev


def build_architecture(cfg: ModelConfig) -> Architecture:
    ev = _base_evidence(cfg)
    n = cfg.num_hidden_layers
    lk = linear_kind(cfg)
    attention = _attention_family(cfg)
    latent = attention.key != "full"  # MLA / compressed attention build every attention layer
    if cfg.attention_free:
        assert lk is not None
        ev.append(Evidence("architectures", cfg.architecture, ATTENTION_FREE(mixer=Name(lk))))
        ev += lk.family.evidence(cfg)
        kinds = ["linear"] * n
    elif latent:
        ev += attention.evidence(cfg)
        kinds = _latent_layer_types(cfg, ev)
    else:
        if cfg.kv_lora_rank is not None:
            ev.append(
                Evidence(
                    "kv_lora_rank", str(cfg.kv_lora_rank), NOT_MLA(model_type=Name(cfg.model_type))
                )
            )
        if cfg.block_configs is not None:
            return _block_configs(cfg, ev, head_size(cfg))
        kinds = _raw_layer_types(cfg, ev, lk)
    # FFNs are layers of their own (Nemotron-H's pattern, layers_block_type with mlp / moe)
    blocks = bool(cfg.field("hybrid_override_pattern")) or any(
        for_layer_kind(k) is family("none") for k in kinds
    )
    indexed = attention.indexed_layers(cfg)
    hs = head_size(cfg)
    # value head size of standard attention (vLLM head_size_v; MiMo-V2-Flash's diff-KV layers)
    hdv = cfg.v_head_dim if cfg.kv_lora_rank is None and cfg.v_head_dim else hs
    # families that take over some full-attention layers (MiniMax-M3's block-sparse layers)
    takers = [(f, flags) for f in families() if (flags := f.takes_layers(cfg)) is not None]
    layers: list[LayerPlan] = []
    for i in range(n):
        k = kinds[i]
        # vLLM IsAttentionFree: one mixer per layer and no MLP
        ffn = "none" if cfg.attention_free else _moe_layer(cfg, i, k, blocks)
        shape = LayerShape(
            i,
            ffn,
            cfg.layer_kv_heads[i] if cfg.layer_kv_heads else cfg.num_key_value_heads,
            cfg.layer_q_heads[i] if cfg.layer_q_heads else 0,
            hs,
            hdv,
            indexed[i],
        )
        fam = _family_of(cfg, k, i, lk, attention)
        if fam.key == "full":
            fam = next((f for f, flags in takers if i < len(flags) and flags[i]), fam)
        layers.append(fam.layer(cfg, shape))
    layers = _layer_extras(cfg, layers, kinds, lk, ev)
    built = tuple(layers)
    _per_layer_evidence(cfg, ev)
    for fam in families():
        ev += fam.layer_evidence(cfg, built)
    if lk is not None and not cfg.attention_free and any(lk in lay.mixers for lay in built):
        ev += lk.family.evidence(cfg)
    _moe_evidence(cfg, ev)
    return Architecture(built, lk, tuple(ev))


def _family_of(
    cfg: ModelConfig, kind: str, i: int, lk: Mixer | None, attention: MixerFamily
) -> MixerFamily:
    """The family that builds layer ``i`` of kind ``kind``: the linear mixer for a linear
    kind, the latent family for every other layer of an MLA / compressed model, else the
    family the kind word names (an FFN-only block where the layer has no KV heads)."""
    latent = attention.key != "full"
    if kind in LINEAR_KINDS:
        if lk is not None:
            return lk.family
        if latent:
            return attention
        raise InputError("layer_types", E.LINEAR_STATE(layer=i, kind=E.got(kind)))
    if latent:
        return attention
    found = for_layer_kind(kind)
    if found is family("none") or (cfg.layer_kv_heads is not None and cfg.layer_kv_heads[i] == 0):
        return family("none")
    if found is None:
        raise InputError("layer_types", E.KNOWN_LAYER_KIND(layer=i, got=E.got(kind)))
    return found


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
    parallel = lk is not None and cfg.model_type in model_defaults()["parallel_hybrid_model_types"]
    out = []
    for i, layer in enumerate(layers):
        extra: dict[str, object] = {}
        if layer.mixer.is_attention and lk is not None and (parallel or kinds[i] == "hybrid"):
            extra["linear"] = lk
        if cfg.layer_ffn_widths is not None and layer.ffn == "dense":
            extra["ffn_intermediate"] = cfg.layer_ffn_widths[i]
        out.append(replace(layer, **extra) if extra else layer)  # type: ignore[arg-type]
    n_par = sum(1 for lay in out if lay.linear is not None)
    if n_par and lk is not None:
        fam = lk.family
        name = fam.variant() if isinstance(fam, LinearMixer) else fam.label()
        if parallel:
            ev.append(Evidence("model_type", cfg.model_type, PARALLEL(layers=n_par, mixer=name)))
        else:
            ev.append(Evidence(LAYER_KINDS(), "hybrid", HYBRID_BLOCKS(layers=n_par, mixer=name)))
    out = KV_SHARING.mark(cfg, out)
    ev += KV_SHARING.evidence(cfg, out)
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
    heads = tuple(sorted({b.kv_heads for b in blocks if b.kv_heads}))
    ev.append(
        Evidence(
            "block_configs",
            str(len(blocks)),
            BLOCK_CONFIGS(attention=n_attn, noop=len(blocks) - n_attn, heads=heads),
        )
    )
    widths = sorted({b.ffn_intermediate for b in blocks if b.ffn_intermediate})
    ev.append(Evidence("block_configs[].ffn.ffn_mult", ", ".join(map(str, widths)), FFN_MULT()))
    return Architecture(tuple(layers), None, tuple(ev))


def _per_layer_evidence(cfg: ModelConfig, ev: list[Evidence]) -> None:
    if cfg.layer_kv_heads is not None:
        ev.append(Evidence("num_key_value_heads", short(cfg.layer_kv_heads), LAYER_KV_HEADS()))
    if cfg.moe_layers is not None:
        ev.append(Evidence("moe_layer_freq", short([int(x) for x in cfg.moe_layers]), MOE_LAYERS()))


def _moe_evidence(cfg: ModelConfig, ev: list[Evidence]) -> None:
    if cfg.num_experts <= 1:
        return
    ev.append(
        Evidence(
            "num_experts / experts_per_token", f"{cfg.num_experts} / {cfg.experts_per_token}", MOE()
        )
    )
    if cfg.n_shared_experts:
        ev.append(Evidence("n_shared_experts", str(cfg.n_shared_experts), SHARED()))
    elif cfg.shared_expert_intermediate_size:
        ev.append(
            Evidence(
                "shared_expert_intermediate_size",
                str(cfg.shared_expert_intermediate_size),
                SHARED(),
            )
        )
    if cfg.first_k_dense_replace:
        ev.append(Evidence("first_k_dense_replace", str(cfg.first_k_dense_replace), FIRST_DENSE()))
