"""Mamba-2 (Nemotron-H, Falcon-H1, Granite-4.0-H, Zamba2, Mamba2ForCausalLM): vLLM
``mamba2_state_shape`` — n_groups padded to TP (``extra_groups_for_head_shards``), conv
``(K-1, (intermediate + 2·n_groups·state)/TP)``, recurrent ``(heads/TP, head_dim, state)``."""

from __future__ import annotations

from engine.decision import Code
from engine.model.cache_specs import MambaSpec
from engine.model.config import ModelConfig, model_defaults
from engine.model.mixers.base import CacheContext, require
from engine.model.mixers.linear import LinearMixer


def mamba2_inner(cfg: ModelConfig) -> int:
    """The conv width vLLM passes as ``intermediate_size`` to ``mamba2_state_shape``
    (data/model_defaults.yaml mamba2_inner_from_heads_model_types)."""
    heads_x_dim = (cfg.mamba_num_heads or 0) * (cfg.mamba_head_dim or 64)
    if cfg.model_type in model_defaults()["mamba2_inner_from_heads_model_types"] and heads_x_dim:
        return heads_x_dim
    if cfg.mamba_intermediate_size:
        return cfg.mamba_intermediate_size
    if cfg.mamba_expand is None and heads_x_dim:
        return heads_x_dim
    return (cfg.mamba_expand or 2) * cfg.hidden_size


class Mamba2(LinearMixer):
    key = "mamba2"
    priority = 40
    LABEL = Code("mixer.mamba2")
    EVIDENCE = Code("family.evidence.mamba2")
    VARIANT = Code("mixer.state.mamba2")

    def describes(self, cfg: ModelConfig) -> bool:
        return cfg.mamba_num_heads is not None or (
            cfg.mamba_n_groups is not None and bool(cfg.ssm_state_size)
        )

    def state_fields(self, cfg: ModelConfig) -> tuple[str, str]:
        return (
            "mamba_num_heads / n_groups / ssm_state_size",
            f"{cfg.mamba_num_heads} / {cfg.mamba_n_groups} / {cfg.ssm_state_size}",
        )

    def state_spec(self, ctx: CacheContext) -> MambaSpec:
        cfg, tp = ctx.cfg, ctx.tp
        state = require(cfg.ssm_state_size, "ssm_state_size")
        groups = cfg.mamba_n_groups or 1
        if groups % tp:
            groups += tp - groups  # vLLM extra_groups_for_head_shards
        head_dim = cfg.mamba_head_dim or 64
        inter = mamba2_inner(cfg)
        heads = cfg.mamba_num_heads or inter // head_dim
        ctx.divides(heads, "mamba_num_heads")
        k = cfg.conv_kernel or 4
        shapes = ((k - 1, (inter + 2 * groups * state) // tp), (heads // tp, head_dim, state))
        return self.state(
            ctx, shapes, (ctx.conv_dtype, ctx.ssm_dtype), (ctx.conv_bytes, ctx.ssm_bytes)
        )

    def mixer_params(self, cfg: ModelConfig) -> int:
        h = cfg.hidden_size
        state = cfg.ssm_state_size or 128
        groups = cfg.mamba_n_groups or 1
        hd = cfg.mamba_head_dim or 64
        heads = cfg.mamba_num_heads or ((cfg.mamba_expand or 2) * h // hd)
        inter = heads * hd
        conv_dim = inter + 2 * groups * state
        k = cfg.conv_kernel or 4
        return (
            h * (2 * inter + 2 * groups * state + heads)
            + conv_dim * (k + 1)
            + 3 * heads
            + inter
            + inter * h
        )
