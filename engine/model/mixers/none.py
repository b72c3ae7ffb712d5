"""No mixer: an FFN-only block (Nemotron-H's '-' / 'E', a DeciLM no-op attention, a layer
with 0 KV heads in a per-layer list). No weights of its own, no cache."""

from __future__ import annotations

from engine.model.config import ModelConfig
from engine.model.mixers.base import LayerPlan, LayerShape, Mixer, MixerFamily


class NoMixer(MixerFamily):
    key = "none"
    layer_kinds = ("mlp", "moe", "ffn", "dense")

    def layer(self, cfg: ModelConfig, shape: LayerShape) -> LayerPlan:
        return LayerPlan(shape.index, Mixer(self.key), ffn=shape.ffn)
