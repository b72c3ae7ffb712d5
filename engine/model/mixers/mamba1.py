"""Mamba-1 (Jamba, Falcon-Mamba, MambaForCausalLM): vLLM ``mamba1_state_shape`` — conv
``(K-1, intermediate/TP)``, recurrent ``(intermediate/TP, state)``."""

from __future__ import annotations

from engine.decision import Code
from engine.model.cache_specs import MambaSpec
from engine.model.config import ModelConfig
from engine.model.mixers.base import CacheContext, require
from engine.model.mixers.linear import LinearMixer


class Mamba1(LinearMixer):
    key = "mamba1"
    priority = 50
    LABEL = Code("mixer.mamba1")
    EVIDENCE = Code("family.evidence.mamba1")
    VARIANT = Code("mixer.state.mamba1")

    def describes(self, cfg: ModelConfig) -> bool:
        return cfg.ssm_state_size is not None and bool(
            cfg.mamba_expand or cfg.mamba_intermediate_size
        )

    def state_fields(self, cfg: ModelConfig) -> tuple[str, str]:
        return (
            "mamba_d_state / mamba_expand",
            f"{cfg.ssm_state_size} / {cfg.mamba_expand or cfg.mamba_intermediate_size}",
        )

    def state_spec(self, ctx: CacheContext) -> MambaSpec:
        cfg, tp = ctx.cfg, ctx.tp
        state = require(cfg.ssm_state_size, "mamba_d_state")
        inter = cfg.mamba_intermediate_size or (cfg.mamba_expand or 2) * cfg.hidden_size
        k = cfg.conv_kernel or 4
        shapes = ((k - 1, inter // tp), (inter // tp, state))
        return self.state(
            ctx, shapes, (ctx.conv_dtype, ctx.ssm_dtype), (ctx.conv_bytes, ctx.ssm_bytes)
        )

    def mixer_params(self, cfg: ModelConfig) -> int:
        h = cfg.hidden_size
        state = cfg.ssm_state_size or 16
        inter = cfg.mamba_intermediate_size or (cfg.mamba_expand or 2) * h
        k = cfg.conv_kernel or 4
        dt_rank = cfg.mamba_dt_rank or -(-h // 16)
        return (
            h * 2 * inter
            + inter * (k + 1)
            + inter * (dt_rank + 2 * state)
            + dt_rank * inter
            + inter
            + inter * state
            + inter
            + inter * h
        )
