"""What the linear / SSM mixers share: a constant state per request instead of per-token KV
(vLLM ``MambaSpec``: Σ prod(shape) × dtype over the conv and recurrent states), the per-layer
kind words that name "a linear layer" whichever mixer the config's fields describe, and the
evidence row that names those fields."""

from __future__ import annotations

from typing import ClassVar

from engine.decision import Code, Decision
from engine.model.cache_specs import CacheSpec, MambaSpec
from engine.model.config import ModelConfig
from engine.model.evidence import Evidence
from engine.model.mixers.base import CacheContext, LayerPlan, LayerShape, Mixer, MixerFamily

# layer-kind words that mean "this layer runs the model's linear mixer"
LINEAR_KINDS = ("linear_attention", "mamba", "mamba2", "gated_delta_net", "conv", "linear")


class LinearMixer(MixerFamily):
    """A linear family: ``describes`` tests its state fields; ``EVIDENCE`` words why those
    fields mean this mixer; ``VARIANT`` names its state in the KV tables."""

    linear: ClassVar[bool] = True
    EVIDENCE: ClassVar[Code]
    VARIANT: ClassVar[Code]

    def state_fields(self, cfg: ModelConfig) -> tuple[str, str]:
        """The config fields that describe the state and their values, for the evidence."""
        raise NotImplementedError

    def evidence(self, cfg: ModelConfig) -> list[Evidence]:
        fields, values = self.state_fields(cfg)
        return [Evidence(fields, values, self.EVIDENCE())]

    def variant(self) -> Decision:
        return self.VARIANT()

    def layer(self, cfg: ModelConfig, shape: LayerShape) -> LayerPlan:
        return LayerPlan(shape.index, Mixer(self.key), ffn=shape.ffn)

    def state(
        self,
        ctx: CacheContext,
        shapes: tuple[tuple[int, ...], ...],
        dtypes: tuple[str, ...],
        sizes: tuple[int, ...],
    ) -> MambaSpec:
        """The state spec; its dtype is the recurrent state's (the last one)."""
        return MambaSpec(dtypes[-1], self.variant(), shapes, dtypes, sizes)

    def cache_specs(self, layer: LayerPlan, ctx: CacheContext) -> tuple[CacheSpec, ...]:
        return (self.state_spec(ctx),)

    def state_spec(self, ctx: CacheContext) -> MambaSpec:
        """vLLM ``MambaStateShapeCalculator`` for this mixer (conv layout (state_len, dim))."""
        raise NotImplementedError

    def params(self, cfg: ModelConfig, layer: LayerPlan) -> tuple[int, int]:
        return self.mixer_params(cfg), 0

    def mixer_params(self, cfg: ModelConfig) -> int:
        """Parameters of the mixer's projections, convolution and state parameters."""
        raise NotImplementedError
