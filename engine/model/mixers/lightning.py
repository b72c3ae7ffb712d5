"""Lightning attention (MiniMax-Text-01 / M1): vLLM ``linear_attention_state_shape`` —
``(heads/TP, head_dim, head_dim)`` in the model dtype. Its layers are the zeros of
``attn_type_list``."""

from __future__ import annotations

from engine.decision import Code
from engine.model.cache_specs import MambaSpec
from engine.model.config import ModelConfig
from engine.model.evidence import short
from engine.model.mixers.base import CacheContext
from engine.model.mixers.linear import LinearMixer


class LightningAttention(LinearMixer):
    key = "lightning"
    priority = 60
    LABEL = Code("mixer.lightning")
    EVIDENCE = Code("family.evidence.lightning")
    VARIANT = Code("mixer.state.lightning")

    def describes(self, cfg: ModelConfig) -> bool:
        return cfg.field("attn_type_list") is not None

    def state_fields(self, cfg: ModelConfig) -> tuple[str, str]:
        return "attn_type_list", short(cfg.field("attn_type_list"))

    def state_spec(self, ctx: CacheContext) -> MambaSpec:
        cfg, tp = ctx.cfg, ctx.tp
        hd = cfg.head_dim or cfg.hidden_size // cfg.num_attention_heads
        ctx.divides(cfg.num_attention_heads, "num_attention_heads")
        shapes = ((cfg.num_attention_heads // tp, hd, hd),)
        return self.state(ctx, shapes, (ctx.conv_dtype,), (ctx.conv_bytes,))

    def mixer_params(self, cfg: ModelConfig) -> int:
        # q, k, v, gate and output projections
        return 5 * cfg.hidden_size * cfg.hidden_size
