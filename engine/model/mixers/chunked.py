"""Chunked local attention (Llama 4): each layer attends within its chunk, so at most
``attention_chunk_size`` tokens are kept (vLLM ``ChunkedLocalAttentionSpec``)."""

from __future__ import annotations

from engine.decision import Code
from engine.kv.specs import CacheSpec, ChunkedLocalSpec
from engine.model.config import ModelConfig
from engine.model.evidence import Evidence
from engine.model.mixers.base import CacheContext, LayerPlan, LayerShape, Mixer
from engine.model.mixers.full import HeadAttention

LAYERS = Code("family.evidence.chunked_layers", "chunked")


class ChunkedLocal(HeadAttention):
    key = "chunked"
    LABEL = Code("mixer.chunked")
    layer_kinds = ("chunked_attention",)

    def layer(self, cfg: ModelConfig, shape: LayerShape) -> LayerPlan:
        assert cfg.attention_chunk_size is not None
        return LayerPlan(
            shape.index,
            Mixer(self.key),
            shape.kv_heads,
            shape.head_dim,
            shape.head_dim_v,
            cfg.attention_chunk_size,
            ffn=shape.ffn,
            num_heads=shape.q_heads,
        )

    def layer_evidence(self, cfg: ModelConfig, layers: tuple[LayerPlan, ...]) -> list[Evidence]:
        n = sum(1 for lay in layers if lay.mixer == self.key)
        if not n:
            return []
        return [Evidence("attention_chunk_size", str(cfg.attention_chunk_size), LAYERS(chunked=n))]

    def cache_specs(self, layer: LayerPlan, ctx: CacheContext) -> tuple[CacheSpec, ...]:
        assert layer.window is not None
        return (ChunkedLocalSpec(*self.spec_args(layer, ctx), chunk_size=layer.window),)
