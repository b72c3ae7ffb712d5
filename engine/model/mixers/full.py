"""Full attention (MHA / GQA / MQA): K and V of every KV head for every token, and the base of
the windowed families that keep the same bytes per token for fewer tokens."""

from __future__ import annotations

from typing import ClassVar

from engine.decision import Code
from engine.model.cache_specs import CacheSpec, FullAttentionSpec
from engine.model.config import ModelConfig, model_defaults
from engine.model.evidence import Evidence
from engine.model.mixers.base import (
    CacheContext,
    LayerPlan,
    LayerShape,
    Mixer,
    MixerFamily,
    head_size,
)
from engine.model.mixers.mla import projection_params

GLOBAL_HEAD_DIM = Code("family.evidence.global_head_dim", "global_dim", "sliding_dim")
K_EQ_V = Code("family.evidence.k_eq_v")
V_HEAD_DIM = Code("family.evidence.v_head_dim", "k", "v")


def kv_heads_per_rank(total: int, tp: int) -> int:
    """vLLM get_num_kv_heads: KV heads split over TP, replicated when fewer than TP."""
    return max(1, total // tp)


class HeadAttention(MixerFamily):
    """Attention with K/V heads of its own. Its weights are the q, k, v and o projections
    (vLLM QKVParallelLinear + RowParallelLinear), all split over the attention TP group."""

    attention: ClassVar[bool] = True
    head_attention: ClassVar[bool] = True

    def head_layer(
        self, shape: LayerShape, window: int | None = None, indexer: bool = False
    ) -> LayerPlan:
        """A layer of this mixer with the shape's own heads (``window``: the tokens a layer
        attends to; ``indexer``: it keeps an index cache beside its KV)."""
        return LayerPlan(
            shape.index,
            Mixer(self.key),
            shape.kv_heads,
            shape.head_dim,
            shape.head_dim_v,
            window,
            indexer=indexer,
            ffn=shape.ffn,
            num_heads=shape.q_heads,
        )

    def spec_args(self, layer: LayerPlan, ctx: CacheContext) -> tuple[str, int, int, int, int]:
        heads = kv_heads_per_rank(layer.num_kv_heads, ctx.tp)
        return ctx.kv_dtype, heads, layer.head_dim, layer.head_dim_v, ctx.kv_bytes

    def params(self, cfg: ModelConfig, layer: LayerPlan) -> tuple[int, int]:
        h = cfg.hidden_size
        hd = layer.head_dim
        hdv = layer.head_dim_v or hd
        heads = layer.num_heads or cfg.num_attention_heads
        kv_heads = layer.num_kv_heads
        bias = bool(cfg.field("attention_bias") or cfg.field("bias"))
        # attn_output_gate: the query projection also emits one gate per head (qwen3_next.py)
        q = h * heads * hd * (2 if cfg.attn_output_gate else 1)
        k = h * kv_heads * hd
        v = 0 if self.shares_k_as_v(cfg) else h * kv_heads * hdv
        o = heads * hdv * h
        b = (heads * hd + kv_heads * (hd + hdv)) if bias else 0
        return q + k + v + o + b, 0

    def shares_k_as_v(self, cfg: ModelConfig) -> bool:
        """The layer has no v_proj of its own (Gemma 4's global layers: attention_k_eq_v)."""
        return False


class FullAttention(HeadAttention):
    """Every token of the context, every KV head on this rank (vLLM ``FullAttentionSpec``).
    Gemma 4's global layers take ``global_head_dim`` (and with ``attention_k_eq_v`` their own
    ``num_global_key_value_heads``); MiniCPM3 projects through MLA-style low-rank q/kv but
    caches per-head K/V (data/model_defaults.yaml decoupled_rope_head_model_types)."""

    key = "full"
    layer_kinds = ("full_attention", "attention", "global_attention", "hybrid", "global")

    def layer(self, cfg: ModelConfig, shape: LayerShape) -> LayerPlan:
        kv, hd, hdv = shape.kv_heads, shape.head_dim, shape.head_dim_v
        global_hd = cfg.field("global_head_dim")
        global_kv = cfg.field("num_global_key_value_heads")
        if isinstance(global_hd, int) and global_hd > 0:
            hd = hdv = global_hd
            if (
                cfg.field("attention_k_eq_v") is True
                and isinstance(global_kv, int)
                and global_kv > 0
            ):
                kv = global_kv
        return LayerPlan(
            shape.index, Mixer(self.key), kv, hd, hdv, ffn=shape.ffn, num_heads=shape.q_heads
        )

    def layer_evidence(self, cfg: ModelConfig, layers: tuple[LayerPlan, ...]) -> list[Evidence]:
        out = []
        first = next((lay for lay in layers if lay.mixer == self.key), None)
        if first is not None and first.head_dim_v != first.head_dim:
            out.append(
                Evidence(
                    "v_head_dim",
                    str(first.head_dim_v),
                    V_HEAD_DIM(k=first.head_dim, v=first.head_dim_v),
                )
            )
        global_hd = cfg.field("global_head_dim")
        hs = head_size(cfg)
        if isinstance(global_hd, int) and global_hd > 0 and global_hd != hs:
            out.append(
                Evidence(
                    "global_head_dim",
                    str(global_hd),
                    GLOBAL_HEAD_DIM(global_dim=global_hd, sliding_dim=hs),
                )
            )
            global_kv = cfg.field("num_global_key_value_heads")
            if cfg.field("attention_k_eq_v") is True and isinstance(global_kv, int):
                out.append(
                    Evidence(
                        "attention_k_eq_v / num_global_key_value_heads",
                        f"true / {global_kv}",
                        K_EQ_V(),
                    )
                )
        return out

    def cache_specs(self, layer: LayerPlan, ctx: CacheContext) -> tuple[CacheSpec, ...]:
        return (FullAttentionSpec(*self.spec_args(layer, ctx)),)

    def params(self, cfg: ModelConfig, layer: LayerPlan) -> tuple[int, int]:
        if (
            cfg.kv_lora_rank is not None
            and cfg.model_type in model_defaults()["decoupled_rope_head_model_types"]
        ):
            return projection_params(cfg, layer)
        return super().params(cfg, layer)

    def shares_k_as_v(self, cfg: ModelConfig) -> bool:
        return cfg.field("attention_k_eq_v") is True
