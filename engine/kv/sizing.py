"""Per-layer cache specs on one TP rank, grouped; per-token, per-request and pool numbers
as vLLM 0.33.0 computes them, with SGLang 0.5.23's figure beside them."""

from __future__ import annotations

import math
from dataclasses import dataclass

from engine.engines import adapter
from engine.errors import InputError
from engine.kv.dtype import DTYPE_BYTES, KvDtype, model_dtype
from engine.kv.specs import (
    CacheSpec,
    ChunkedLocalSpec,
    CompressedSpec,
    FullAttentionSpec,
    IndexerSpec,
    MambaSpec,
    MLAAttentionSpec,
    SlidingWindowSpec,
)
from engine.model.architecture import Architecture, LayerPlan
from engine.model.config import ModelConfig, model_defaults
from engine.rules import engine_rules


@dataclass(frozen=True)
class LayerGroup:
    """Layers that share one cache spec. Bytes are per TP rank, summed over the layers."""

    kind: str
    layers: tuple[int, ...]
    spec: CacheSpec

    @property
    def num_layers(self) -> int:
        return len(self.layers)

    @property
    def bytes_per_token(self) -> float:
        return self.spec.bytes_per_token * self.num_layers

    @property
    def state_bytes_per_request(self) -> int:
        return self.spec.state_bytes * self.num_layers

    def bytes_at(self, context: int) -> float:
        return self.spec.bytes_at(context) * self.num_layers

    def formula(self) -> str:
        return f"{self.num_layers} layers × [{self.spec.formula()}]"


@dataclass(frozen=True)
class HybridAlignment:
    """vLLM pads Mamba state pages up to a whole number of attention pages: the attention
    block size becomes ``align × cdiv(mamba_page, align × attn_bytes_per_token)``."""

    align: int
    attn_bytes_per_token: int
    mamba_page: int
    block_size: int
    padded_page: int

    def formula(self) -> str:
        return (
            f"block = {self.align} × ceil({self.mamba_page:,} / ({self.align} × "
            f"{self.attn_bytes_per_token:,})) = {self.block_size}; padded state page = "
            f"{self.block_size} × {self.attn_bytes_per_token:,} = {self.padded_page:,} B"
        )


@dataclass(frozen=True)
class KvSizing:
    groups: tuple[LayerGroup, ...]
    kv_dtype: KvDtype
    tp: int
    block_size: int
    hybrid: HybridAlignment | None

    @property
    def kv_bytes_per_token(self) -> int:
        return _int(sum(g.bytes_per_token for g in self.groups if g.spec.paged))

    @property
    def growing_bytes_per_token(self) -> int:
        """Bytes added per token once sliding / chunked layers are full."""
        return _int(
            sum(g.bytes_per_token for g in self.groups if g.spec.paged and g.spec.window is None)
        )

    @property
    def state_bytes_per_request(self) -> int:
        return sum(g.state_bytes_per_request for g in self.groups)

    @property
    def state_bytes_per_request_padded(self) -> int:
        if self.hybrid is None:
            return self.state_bytes_per_request
        n = sum(g.num_layers for g in self.groups if not g.spec.paged)
        return n * self.hybrid.padded_page

    def kv_bytes_at(self, context: int) -> int:
        """Attention bytes of one request at ``context`` tokens (windows capped), no state."""
        return _int(sum(g.bytes_at(context) for g in self.groups if g.spec.paged))

    def bytes_per_request(self, context: int, padded: bool = False) -> int:
        state = self.state_bytes_per_request_padded if padded else self.state_bytes_per_request
        return self.kv_bytes_at(context) + state


def _int(x: float) -> int:
    return round(x) if abs(x - round(x)) < 1e-6 else math.ceil(x)


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _kv_heads_per_rank(total: int, tp: int) -> int:
    """vLLM get_num_kv_heads: KV heads split over TP, replicated when fewer than TP."""
    return max(1, total // tp)


def _ssm_dtype(cfg: ModelConfig, conv_dtype: str) -> tuple[str, str]:
    for rule in engine_rules().mamba_ssm_dtype_hooks.rules:
        if cfg.model_type in rule.model_types:
            val = cfg.field(rule.field)
            if isinstance(val, str) and val:
                return val.replace("torch.", ""), f"{rule.field} in the config"
            if rule.default:
                return rule.default, f"vLLM default for {cfg.model_type}"
    return conv_dtype, "model dtype (mamba_ssm_cache_dtype auto)"


def mamba_spec(cfg: ModelConfig, kind: str, tp: int, engine: str = "vllm") -> MambaSpec:
    """State shapes from vLLM ``MambaStateShapeCalculator`` (conv layout (state_len, dim))."""
    conv_dt = model_dtype(cfg)
    ssm_dt, _ = _ssm_dtype(cfg, conv_dt)
    ssm_dt = adapter(engine).ssm_dtype(cfg, ssm_dt)
    shapes: tuple[tuple[int, ...], ...]
    if kind == "gdn":
        nk = _req(cfg.linear_num_key_heads, "linear_num_key_heads")
        nv = _req(cfg.linear_num_value_heads, "linear_num_value_heads")
        hk = _req(cfg.linear_key_head_dim, "linear_key_head_dim")
        hv = _req(cfg.linear_value_head_dim, "linear_value_head_dim")
        k = cfg.linear_conv_kernel_dim or 4
        _divides(nv, tp, "linear_num_value_heads")
        conv_dim = 2 * hk * nk + hv * nv
        shapes = ((k - 1, conv_dim // tp), (nv // tp, hv, hk))
        variant = "Gated DeltaNet"
    elif kind == "mamba2":
        state = _req(cfg.ssm_state_size, "ssm_state_size")
        groups = cfg.mamba_n_groups or 1
        if groups % tp:
            groups += tp - groups  # vLLM extra_groups_for_head_shards
        head_dim = cfg.mamba_head_dim or 64
        inter = mamba2_inner(cfg)
        heads = cfg.mamba_num_heads or inter // head_dim
        _divides(heads, tp, "mamba_num_heads")
        k = cfg.conv_kernel or 4
        shapes = ((k - 1, (inter + 2 * groups * state) // tp), (heads // tp, head_dim, state))
        variant = "Mamba-2"
    elif kind == "mamba1":
        state = _req(cfg.ssm_state_size, "mamba_d_state")
        inter = cfg.mamba_intermediate_size or (cfg.mamba_expand or 2) * cfg.hidden_size
        k = cfg.conv_kernel or 4
        shapes = ((k - 1, inter // tp), (inter // tp, state))
        variant = "Mamba-1"
    elif kind == "lightning":
        # linear_attention_state_shape: (heads / TP, head_dim, head_dim) in mamba_cache_dtype
        hd = cfg.head_dim or cfg.hidden_size // cfg.num_attention_heads
        _divides(cfg.num_attention_heads, tp, "num_attention_heads")
        return MambaSpec(
            conv_dt,
            "lightning attention",
            ((cfg.num_attention_heads // tp, hd, hd),),
            (conv_dt,),
            (DTYPE_BYTES[conv_dt],),
        )
    elif kind == "short_conv":
        # short_conv_state_shape: (conv_L_cache - 1, conv_dim / TP) in mamba_cache_dtype
        k = _req(cfg.short_conv_kernel, "conv_L_cache")
        dim = _req(cfg.short_conv_dim, "conv_dim")
        _divides(dim, tp, "conv_dim")
        return MambaSpec(
            conv_dt, "short convolution", ((k - 1, dim // tp),), (conv_dt,), (DTYPE_BYTES[conv_dt],)
        )
    elif kind == "kda":
        # kda_state_shape: conv over q, k, v (3 × heads × head_dim); recurrent state in fp32
        nh = _req(cfg.kda_num_heads, "linear_attn_config.num_heads")
        hd = _req(cfg.kda_head_dim, "linear_attn_config.head_dim")
        k = cfg.kda_conv_kernel or 4
        _divides(nh, tp, "linear_attn_config.num_heads")
        shapes = ((k - 1, 3 * nh * hd // tp), (nh // tp, hd, hd))
        dts = (conv_dt, "float32")
        return MambaSpec("float32", "Kimi Delta Attention", shapes, dts, (DTYPE_BYTES[conv_dt], 4))
    else:  # pragma: no cover - kinds come from architecture.linear_kind
        raise InputError("layer_types", f"a known linear mixer, got {kind!r}")
    dts = (conv_dt, ssm_dt)
    return MambaSpec(ssm_dt, variant, shapes, dts, tuple(DTYPE_BYTES.get(d, 2) for d in dts))


def mamba2_inner(cfg: ModelConfig) -> int:
    """The conv width vLLM passes as ``intermediate_size`` to ``mamba2_state_shape``
    (data/model_defaults.yaml mamba2_inner_from_heads_model_types)."""
    heads_x_dim = (cfg.mamba_num_heads or 0) * (cfg.mamba_head_dim or 64)
    if cfg.model_type in model_defaults()["mamba2_inner_from_heads_model_types"] and heads_x_dim:
        return heads_x_dim
    if cfg.mamba_intermediate_size:
        return cfg.mamba_intermediate_size
    if cfg.mamba_expand is None and heads_x_dim:
        return heads_x_dim
    return (cfg.mamba_expand or 2) * cfg.hidden_size


def _req(v: int | None, name: str) -> int:
    if v is None:
        raise InputError(name, "a positive integer for the linear-attention state; it is missing")
    return v


def _divides(n: int, tp: int, name: str) -> None:
    if n % tp:
        raise InputError("tp", f"a TP size that divides {name} ({n}); got {tp}")


def layer_specs(
    arch: Architecture, cfg: ModelConfig, kv: KvDtype, tp: int, engine: str = "vllm"
) -> list[tuple[LayerPlan, list[CacheSpec]]]:
    if tp < 1:
        raise InputError("tp", f"a positive integer, got {tp}")
    rules = engine_rules()
    out: list[tuple[LayerPlan, list[CacheSpec]]] = []
    mamba_cache: dict[str, MambaSpec] = {}
    # layers that differ only in their index or FFN share one spec list (most stacks repeat
    # a few layer kinds), so each kind is built and hashed once
    by_shape: dict[tuple[object, ...], list[CacheSpec]] = {}
    for layer in arch.layers:
        shape = (
            layer.mixer,
            layer.linear,
            layer.kv_shared,
            layer.num_kv_heads,
            layer.head_dim,
            layer.head_dim_v,
            layer.window,
            layer.indexer,
            layer.compress_ratio,
        )
        known = by_shape.get(shape)
        if known is not None:
            out.append((layer, known))
            continue
        specs: list[CacheSpec] = []
        by_shape[shape] = specs
        m = layer.mixer
        if layer.kv_shared:
            pass  # reads an earlier layer's cache (vLLM skips its KVCacheSpec)
        elif m in ("full", "sliding", "chunked"):
            heads = _kv_heads_per_rank(layer.num_kv_heads, tp)
            base = (kv.stored, heads, layer.head_dim, layer.head_dim_v, kv.bytes)
            if m == "full":
                specs.append(FullAttentionSpec(*base))
            elif m == "sliding":
                assert layer.window is not None
                specs.append(SlidingWindowSpec(*base, sliding_window=layer.window))
            else:
                assert layer.window is not None
                specs.append(ChunkedLocalSpec(*base, chunk_size=layer.window))
        elif m == "mla":
            assert cfg.kv_lora_rank is not None and cfg.qk_rope_head_dim is not None
            specs.append(
                MLAAttentionSpec(
                    kv.stored, cfg.kv_lora_rank, cfg.qk_rope_head_dim, kv.bytes, kv.mla_packed_bytes
                )
            )
            if layer.indexer:
                assert cfg.index_head_dim is not None
                specs.append(
                    IndexerSpec(
                        "uint8",
                        cfg.index_head_dim,
                        rules.indexer.quant_block,
                        rules.indexer.scale_bytes,
                    )
                )
        elif m == "compressed":
            dt = kv.bytes
            if layer.compress_ratio > 0:
                idx = (cfg.index_head_dim or 0) if layer.indexer else 0
                specs.append(
                    CompressedSpec(kv.stored, layer.head_dim, layer.compress_ratio, dt, idx)
                )
            assert layer.window is not None
            specs.append(SlidingWindowSpec(kv.stored, 1, layer.head_dim, 0, dt, layer.window))
        for lin in (m, layer.linear):
            if lin is not None and lin.is_linear:
                if lin not in mamba_cache:
                    mamba_cache[lin] = mamba_spec(cfg, lin, tp, engine)
                specs.append(mamba_cache[lin])
        out.append((layer, specs))
    return out


def group_layers(per_layer: list[tuple[LayerPlan, list[CacheSpec]]]) -> tuple[LayerGroup, ...]:
    buckets: dict[tuple[str, CacheSpec], list[int]] = {}
    keys: dict[int, tuple[str, CacheSpec]] = {}  # one hash per spec object (layers share them)
    for layer, specs in per_layer:
        for spec in specs:
            key = keys.get(id(spec))
            if key is None:
                key = keys[id(spec)] = (spec.kind, spec)
            buckets.setdefault(key, []).append(layer.index)
    groups = [LayerGroup(kind, tuple(idx), spec) for (kind, spec), idx in buckets.items()]
    groups.sort(key=lambda g: (g.spec.order, g.layers[0]))
    return tuple(groups)


def hybrid_alignment(groups: tuple[LayerGroup, ...], is_mla: bool) -> HybridAlignment | None:
    mamba = [g for g in groups if not g.spec.paged]
    attn = [g for g in groups if g.spec.aligns_state]
    if not mamba or not attn:
        return None
    rules = engine_rules()
    attn_1tok = int(attn[0].spec.bytes_per_token)
    mamba_page = max(g.spec.state_bytes for g in mamba)
    base_block = rules.default_block_size.mla if is_mla else rules.default_block_size.attention
    align = max(rules.hybrid_alignment.kernel_block, base_block)
    if is_mla:
        align = max(align, rules.hybrid_alignment.mla_min_align)
    block = align * _cdiv(mamba_page, align * attn_1tok)
    return HybridAlignment(align, attn_1tok, mamba_page, block, max(block * attn_1tok, mamba_page))


def size_kv(
    arch: Architecture, cfg: ModelConfig, kv: KvDtype, tp: int, engine: str = "vllm"
) -> KvSizing:
    groups = group_layers(layer_specs(arch, cfg, kv, tp, engine))
    is_mla = any(g.spec.latent for g in groups)
    eng = adapter(engine)
    hybrid = hybrid_alignment(groups, is_mla) if eng.aligns_hybrid_pages else None
    rules = engine_rules()
    if hybrid is not None:
        block = hybrid.block_size
    elif eng.token_paged:
        block = 1
    else:
        block = rules.default_block_size.mla if is_mla else rules.default_block_size.attention
    return KvSizing(groups, kv, tp, block, hybrid)
