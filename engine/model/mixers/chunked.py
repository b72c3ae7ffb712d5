"""Chunked local attention (Llama 4): each layer attends within its chunk, so at most
``attention_chunk_size`` tokens are kept (vLLM ``ChunkedLocalAttentionSpec``)."""

from __future__ import annotations

from engine.decision import Code
from engine.model.cache_specs import CacheSpec, ChunkedLocalSpec
from engine.model.config import ModelConfig
from engine.model.evidence import Evidence
from engine.model.mixers.base import CacheContext, LayerPlan, LayerShape, Mixer, Schedule
from engine.model.mixers.full import HeadAttention

LAYERS = Code("family.evidence.chunked_layers", "chunked")
NO_ROPE_LIST = Code("family.evidence.no_rope_layers")
NO_ROPE_STEP = Code("family.evidence.no_rope_layer_interval", "step")


class ChunkedLocal(HeadAttention):
    key = "chunked"
    layer_kinds = ("chunked_attention",)
    schedule_priority = 20

    def schedule(self, cfg: ModelConfig, linear: Mixer | None) -> Schedule | None:
        """Llama 4: the layers that rotate (``no_rope_layers`` 1, or all but every
        ``no_rope_layer_interval``-th) attend within their chunk; the others see everything."""
        if not cfg.attention_chunk_size:
            return None
        n = cfg.num_hidden_layers
        nrl = cfg.raw.get("no_rope_layers")
        if isinstance(nrl, list) and len(nrl) >= n:
            flags = [bool(x) for x in nrl[:n]]
            why = NO_ROPE_LIST()
        else:
            step = cfg.raw.get("no_rope_layer_interval", 4)
            flags = [(i + 1) % step != 0 for i in range(n)]
            why = NO_ROPE_STEP(step=step)
        kinds = ["chunked_attention" if f else "full_attention" for f in flags]
        return Schedule(kinds, Evidence("attention_chunk_size", str(cfg.attention_chunk_size), why))

    def layer(self, cfg: ModelConfig, shape: LayerShape) -> LayerPlan:
        assert cfg.attention_chunk_size is not None
        return self.head_layer(shape, window=cfg.attention_chunk_size)

    def layer_evidence(self, cfg: ModelConfig, layers: tuple[LayerPlan, ...]) -> list[Evidence]:
        n = sum(1 for lay in layers if lay.mixer == self.key)
        if not n:
            return []
        return [Evidence("attention_chunk_size", str(cfg.attention_chunk_size), LAYERS(chunked=n))]

    def cache_specs(self, layer: LayerPlan, ctx: CacheContext) -> tuple[CacheSpec, ...]:
        assert layer.window is not None
        return (ChunkedLocalSpec(*self.spec_args(layer, ctx), chunk_size=layer.window),)
