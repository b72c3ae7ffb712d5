"""Gated DeltaNet (Qwen3-Next, Qwen3.5): vLLM ``gated_delta_net_state_shape`` — conv over
q, k, v ``(K-1, (2·head_k_dim·num_k_heads + head_v_dim·num_v_heads)/TP)`` and a recurrent
``(num_v_heads/TP, head_v_dim, head_k_dim)`` state."""

from __future__ import annotations

from engine.decision import Code
from engine.model.cache_specs import MambaSpec
from engine.model.config import ModelConfig
from engine.model.mixers.base import CacheContext, require
from engine.model.mixers.linear import LinearMixer


class GatedDeltaNet(LinearMixer):
    key = "gdn"
    priority = 20
    LABEL = Code("mixer.gdn")
    EVIDENCE = Code("family.evidence.gdn")
    VARIANT = Code("mixer.state.gdn")

    def describes(self, cfg: ModelConfig) -> bool:
        return cfg.linear_num_value_heads is not None and cfg.linear_value_head_dim is not None

    def state_fields(self, cfg: ModelConfig) -> tuple[str, str]:
        return (
            "linear_num_value_heads / linear_value_head_dim",
            f"{cfg.linear_num_value_heads} / {cfg.linear_value_head_dim}",
        )

    def state_spec(self, ctx: CacheContext) -> MambaSpec:
        cfg, tp = ctx.cfg, ctx.tp
        nk = require(cfg.linear_num_key_heads, "linear_num_key_heads")
        nv = require(cfg.linear_num_value_heads, "linear_num_value_heads")
        hk = require(cfg.linear_key_head_dim, "linear_key_head_dim")
        hv = require(cfg.linear_value_head_dim, "linear_value_head_dim")
        k = cfg.linear_conv_kernel_dim or 4
        ctx.divides(nv, "linear_num_value_heads")
        conv_dim = 2 * hk * nk + hv * nv
        shapes = ((k - 1, conv_dim // tp), (nv // tp, hv, hk))
        return self.state(
            ctx, shapes, (ctx.conv_dtype, ctx.ssm_dtype), (ctx.conv_bytes, ctx.ssm_bytes)
        )

    def mixer_params(self, cfg: ModelConfig) -> int:
        h = cfg.hidden_size
        nk = cfg.linear_num_key_heads or 1
        nv = cfg.linear_num_value_heads or 1
        hk = cfg.linear_key_head_dim or 1
        hv = cfg.linear_value_head_dim or 1
        k = cfg.linear_conv_kernel_dim or 4
        conv_dim = 2 * nk * hk + nv * hv
        return (
            h * (2 * nk * hk + 2 * nv * hv) + h * 2 * nv + conv_dim * k + 2 * nv + hv + nv * hv * h
        )
