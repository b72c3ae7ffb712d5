"""LFM2's gated short convolution: vLLM ``short_conv_state_shape`` — ``(conv_L_cache - 1,
conv_dim/TP)`` in the model dtype (short_conv.py ``ShortConv``)."""

from __future__ import annotations

from engine.decision import Code
from engine.model.cache_specs import MambaSpec
from engine.model.config import ModelConfig
from engine.model.evidence import Evidence, short
from engine.model.mixers.base import CacheContext, Mixer, Schedule, require
from engine.model.mixers.linear import LinearMixer


class ShortConvolution(LinearMixer):
    key = "short_conv"
    priority = 10
    LABEL = Code("mixer.short_conv")
    EVIDENCE = Code("family.evidence.short_conv")
    VARIANT = Code("mixer.state.short_conv")
    INDICES = Code("family.evidence.full_attn_idxs")
    schedule_priority = 10

    def describes(self, cfg: ModelConfig) -> bool:
        return cfg.short_conv_kernel is not None

    def schedule(self, cfg: ModelConfig, linear: Mixer | None) -> Schedule | None:
        """LFM2's ``full_attn_idxs``: the attention layers; every other layer convolves."""
        idxs = cfg.raw.get("full_attn_idxs")
        if not isinstance(idxs, list) or linear != self.key:
            return None
        kinds = ["full_attention" if i in idxs else "conv" for i in range(cfg.num_hidden_layers)]
        return Schedule(kinds, Evidence("full_attn_idxs", short(idxs), self.INDICES()))

    def state_fields(self, cfg: ModelConfig) -> tuple[str, str]:
        return "conv_L_cache / conv_dim", f"{cfg.short_conv_kernel} / {cfg.short_conv_dim}"

    def state_spec(self, ctx: CacheContext) -> MambaSpec:
        cfg, tp = ctx.cfg, ctx.tp
        k = require(cfg.short_conv_kernel, "conv_L_cache")
        dim = require(cfg.short_conv_dim, "conv_dim")
        ctx.divides(dim, "conv_dim")
        return self.state(ctx, ((k - 1, dim // tp),), (ctx.conv_dtype,), (ctx.conv_bytes,))

    def mixer_params(self, cfg: ModelConfig) -> int:
        # in_proj (h -> 3 conv_dim), conv1d (conv_L_cache taps per channel), out_proj (-> h)
        h = cfg.hidden_size
        dim = cfg.short_conv_dim or h
        return 3 * h * dim + dim * (cfg.short_conv_kernel or 3) + dim * h
