"""Per-layer cache specs on one TP rank, grouped; per-token, per-request and pool numbers
as vLLM 0.33.0 computes them, with SGLang 0.5.23's figure beside them."""

from __future__ import annotations

import math
from dataclasses import dataclass

from engine.decision import Code, Decision
from engine.engines import adapter
from engine.errors import InputError
from engine.kv.dtype import DTYPE_BYTES, KvDtype, model_dtype
from engine.model.architecture import Architecture, LayerPlan
from engine.model.cache_specs import CacheSpec
from engine.model.config import ModelConfig
from engine.model.mixers import CacheContext
from engine.model.mixers.kv_shared import KV_SHARING
from engine.rules import engine_rules

GROUP = Code("kv.formula.group", "layers", "spec")
ALIGNMENT = Code("kv.formula.hybrid_alignment", "align", "state_page", "attn", "block", "padded")


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

    def formula(self) -> Decision:
        """The group's accounting line: its layer count times one layer's formula."""
        return GROUP(layers=self.num_layers, spec=self.spec.formula())

    def label(self) -> Decision:
        return self.spec.label()


@dataclass(frozen=True)
class HybridAlignment:
    """vLLM pads Mamba state pages up to a whole number of attention pages: the attention
    block size becomes ``align × cdiv(mamba_page, align × attn_bytes_per_token)``."""

    align: int
    attn_bytes_per_token: int
    mamba_page: int
    block_size: int
    padded_page: int

    def formula(self) -> Decision:
        return ALIGNMENT(
            align=self.align,
            state_page=self.mamba_page,
            attn=self.attn_bytes_per_token,
            block=self.block_size,
            padded=self.padded_page,
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


def _ssm_dtype(cfg: ModelConfig, conv_dtype: str) -> tuple[str, str]:
    for rule in engine_rules().mamba_ssm_dtype_hooks.rules:
        if cfg.model_type in rule.model_types:
            val = cfg.field(rule.field)
            if isinstance(val, str) and val:
                return val.replace("torch.", ""), f"{rule.field} in the config"
            if rule.default:
                return rule.default, f"vLLM default for {cfg.model_type}"
    return conv_dtype, "model dtype (mamba_ssm_cache_dtype auto)"


def cache_context(cfg: ModelConfig, kv: KvDtype, tp: int, engine: str = "vllm") -> CacheContext:
    """What the mixer families' cache specs read: the stored KV dtype and the linear states'
    dtypes as each engine resolves them (vLLM: the model dtype for the conv state, its per-model
    hooks for the recurrent one; SGLang: the config's mamba_ssm_dtype, else its default)."""
    conv_dt = model_dtype(cfg)
    ssm_dt, _ = _ssm_dtype(cfg, conv_dt)
    ssm_dt = adapter(engine).ssm_dtype(cfg, ssm_dt)
    rules = engine_rules()
    return CacheContext(
        cfg=cfg,
        tp=tp,
        kv_dtype=kv.stored,
        kv_bytes=kv.bytes,
        mla_packed_bytes=kv.mla_packed_bytes,
        conv_dtype=conv_dt,
        conv_bytes=DTYPE_BYTES.get(conv_dt, 2),
        ssm_dtype=ssm_dt,
        ssm_bytes=DTYPE_BYTES.get(ssm_dt, 2),
        indexer_quant_block=rules.indexer.quant_block,
        indexer_scale_bytes=rules.indexer.scale_bytes,
    )


def layer_specs(
    arch: Architecture, cfg: ModelConfig, kv: KvDtype, tp: int, engine: str = "vllm"
) -> list[tuple[LayerPlan, list[CacheSpec]]]:
    """Each layer's cache specs on one TP rank: its mixer family's (none where it reads an
    earlier layer's KV), then a parallel linear mixer's state."""
    if tp < 1:
        raise InputError("tp", f"a positive integer, got {tp}")
    ctx = cache_context(cfg, kv, tp, engine)
    out: list[tuple[LayerPlan, list[CacheSpec]]] = []
    states: dict[str, tuple[CacheSpec, ...]] = {}  # one state spec object per linear mixer
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
        if known is None:
            known = by_shape[shape] = []
            for m in layer.mixers:
                if m.is_linear:
                    if m not in states:
                        states[m] = m.family.cache_specs(layer, ctx)
                    known += states[m]
                else:
                    known += KV_SHARING.specs(layer, m.family.cache_specs(layer, ctx))
        out.append((layer, known))
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
    arch: Architecture,
    cfg: ModelConfig,
    kv: KvDtype,
    tp: int,
    engine: str = "vllm",
    block_size: int | None = None,
) -> KvSizing:
    """The KV accounting at attention TP ``tp``; ``block_size``: a block the launch sets (a
    recipe's mandatory ``--block-size``), else the engine's own for the model."""
    groups = group_layers(layer_specs(arch, cfg, kv, tp, engine))
    is_mla = any(g.spec.latent for g in groups)
    eng = adapter(engine)
    hybrid = hybrid_alignment(groups, is_mla) if eng.aligns_hybrid_pages else None
    rules = engine_rules()
    if hybrid is not None:
        block = hybrid.block_size
    elif eng.token_paged:
        block = 1
    elif block_size is not None:
        block = block_size
    else:
        block = rules.default_block_size.mla if is_mla else rules.default_block_size.attention
    return KvSizing(groups, kv, tp, block, hybrid)
