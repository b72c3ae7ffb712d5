"""DeepSeek-V4 compressed attention: every layer keeps a sliding window of raw entries plus,
at its compression ratio, one shared K=V entry per ``ratio`` tokens; the finest-ratio layers
also index (DSA). vLLM 0.33.0 sizes it with ``tokens_per_state = ratio``."""

from __future__ import annotations

from engine import errors as E
from engine.decision import Code, Decision
from engine.errors import InputError
from engine.model.cache_specs import (
    V4_ROW,
    CacheSpec,
    CompressedSpec,
    IndexerSpec,
    SlidingWindowSpec,
)
from engine.model.config import ModelConfig
from engine.model.evidence import Evidence, short
from engine.model.mixers.base import (
    CacheContext,
    LayerPlan,
    LayerShape,
    Mixer,
    MixerFamily,
    head_size,
)
from engine.model.mixers.dsa import DSA

RATIOS = Code("family.evidence.compress_ratios")
WINDOW = Code("family.evidence.compressed_window")


def _ratios(cfg: ModelConfig) -> list[int]:
    ratios = cfg.compress_ratios or []
    n = cfg.num_hidden_layers
    if len(ratios) < n:
        raise InputError(
            "compress_ratios",
            f"one ratio per layer ({n}), got {len(ratios)}",
            expects=E.PER_LAYER(layers=n, got=len(ratios)),
        )
    if not cfg.sliding_window:
        raise InputError("sliding_window", "a window size for DeepSeek-V4 compressed attention")
    return ratios[:n]


def _packed_row(ctx: CacheContext, head_dim: int) -> Decision | None:
    """The packed fp8 row's formula when the engine stores one (vLLM's DeepSeek-V4 fp8 layout:
    NoPE fp8 + RoPE bf16 + one scale byte per group + pad), else None."""
    packed = ctx.mla_packed_bytes
    if packed is None:
        return None
    rope = ctx.cfg.qk_rope_head_dim or 0
    nope = head_dim - rope
    scales_and_pad = packed - nope - 2 * rope
    return V4_ROW(nope=nope, rope=rope, scales=scales_and_pad - 1, pad=1, bytes=packed)


class CompressedAttention(MixerFamily):
    key = "compressed"
    priority = 10  # claimed before MLA: a V4 config may also carry kv_lora_rank
    LABEL = Code("mixer.compressed")
    attention = True

    def claims(self, cfg: ModelConfig) -> bool:
        return cfg.compress_ratios is not None

    def evidence(self, cfg: ModelConfig) -> list[Evidence]:
        rows = [
            Evidence("compress_ratios", short(_ratios(cfg)), RATIOS()),
            Evidence("sliding_window", str(cfg.sliding_window), WINDOW()),
        ]
        if DSA.present(cfg):
            rows.append(DSA.evidence(cfg, on_compressed=True))
        return rows

    def indexed_layers(self, cfg: ModelConfig) -> list[bool]:
        ratios = _ratios(cfg)
        finest = min((r for r in ratios if r > 0), default=0)
        return [DSA.present(cfg) and r == finest and finest > 0 for r in ratios]

    def layer(self, cfg: ModelConfig, shape: LayerShape) -> LayerPlan:
        assert cfg.compress_ratios is not None
        return LayerPlan(
            shape.index,
            Mixer(self.key),
            num_kv_heads=1,
            head_dim=head_size(cfg),
            head_dim_v=0,
            window=cfg.sliding_window,
            indexer=shape.indexed,
            compress_ratio=cfg.compress_ratios[shape.index],
            ffn=shape.ffn,
        )

    def cache_specs(self, layer: LayerPlan, ctx: CacheContext) -> tuple[CacheSpec, ...]:
        assert layer.window is not None
        row = _packed_row(ctx, layer.head_dim)
        packed = ctx.mla_packed_bytes
        raw = SlidingWindowSpec(
            ctx.kv_dtype, 1, layer.head_dim, 0, ctx.kv_bytes, layer.window, row, packed
        )
        if layer.compress_ratio <= 0:
            return (raw,)
        idx = (ctx.cfg.index_head_dim or 0) if layer.indexer else 0
        if row is None or not idx:
            compressed = CompressedSpec(
                ctx.kv_dtype, layer.head_dim, layer.compress_ratio, ctx.kv_bytes, idx, row, packed
            )
            return (compressed, raw)
        # the indexer keys keep their fp8 + fp32-scale row beside the packed entry (vLLM)
        keys = IndexerSpec(ctx.kv_dtype, idx, ctx.indexer_quant_block, ctx.indexer_scale_bytes)
        compressed = CompressedSpec(
            ctx.kv_dtype,
            layer.head_dim,
            layer.compress_ratio,
            ctx.kv_bytes,
            idx,
            row,
            packed,
            keys.formula(),
            int(keys.bytes_per_token),
        )
        return (compressed, raw)

    def params(self, cfg: ModelConfig, layer: LayerPlan) -> tuple[int, int]:
        h = cfg.hidden_size
        heads = cfg.num_attention_heads
        hd = layer.head_dim
        ql = cfg.q_lora_rank or h
        q_rep, q_tp = h * ql, ql * heads * hd
        kv = h * hd
        groups = cfg.o_groups or 1
        olora = cfg.o_lora_rank or h
        # grouped low-rank output: wo_a (groups·o_lora × heads·hd/groups), wo_b (groups·o_lora → h)
        o = heads * hd * olora + groups * olora * h
        idx = DSA.params(cfg, ql, with_head_weights=False) if layer.indexer else 0
        comp = 2 * h * hd if layer.compress_ratio else 0
        return q_tp + o, q_rep + kv + idx + comp
