"""Kimi Delta Attention (Kimi-Linear, Kimi-K3): vLLM ``kda_state_shape`` — a short conv over
q, k and v ``(K-1, 3·heads·head_dim/TP)`` in the model dtype and a recurrent
``(heads/TP, head_dim, head_dim)`` state in float32. Its layers are the 1-based
``linear_attn_config.kda_layers``."""

from __future__ import annotations

from engine.decision import Code
from engine.model.cache_specs import MambaSpec
from engine.model.config import ModelConfig
from engine.model.mixers.base import CacheContext, require
from engine.model.mixers.linear import LinearMixer


class KimiDeltaAttention(LinearMixer):
    key = "kda"
    priority = 30
    LABEL = Code("mixer.kda")
    EVIDENCE = Code("family.evidence.kda")
    VARIANT = Code("mixer.state.kda")

    def describes(self, cfg: ModelConfig) -> bool:
        return cfg.kda_layers is not None and bool(cfg.kda_num_heads and cfg.kda_head_dim)

    def state_fields(self, cfg: ModelConfig) -> tuple[str, str]:
        return (
            "linear_attn_config.num_heads / head_dim",
            f"{cfg.kda_num_heads} / {cfg.kda_head_dim}",
        )

    def state_spec(self, ctx: CacheContext) -> MambaSpec:
        cfg, tp = ctx.cfg, ctx.tp
        nh = require(cfg.kda_num_heads, "linear_attn_config.num_heads")
        hd = require(cfg.kda_head_dim, "linear_attn_config.head_dim")
        k = cfg.kda_conv_kernel or 4
        ctx.divides(nh, "linear_attn_config.num_heads")
        shapes = ((k - 1, 3 * nh * hd // tp), (nh // tp, hd, hd))
        return self.state(ctx, shapes, (ctx.conv_dtype, "float32"), (ctx.conv_bytes, 4))

    def mixer_params(self, cfg: ModelConfig) -> int:
        h = cfg.hidden_size
        nh = cfg.kda_num_heads or 1
        hd = cfg.kda_head_dim or 1
        k = cfg.kda_conv_kernel or 4
        # q, k, v, gate, output projections + short convs + low-rank decay (approximate)
        return 5 * h * nh * hd + 3 * nh * hd * k
