"""Multi-head latent attention (DeepSeek-V2/V3, Kimi-K2, GLM-4.x-lite …): one compressed latent
(``kv_lora_rank``) plus the decoupled RoPE key per token, a single copy replicated on every TP
rank (vLLM ``MLAAttention.get_kv_cache_spec``: ``MLAAttentionSpec``, ``num_kv_heads=1``,
``max_tp_shards=1``). A DSA indexer (engine/model/mixers/dsa.py) adds its keys beside it."""

from __future__ import annotations

from engine.decision import Code, Decision, Name
from engine.model.cache_specs import CacheSpec, MLAAttentionSpec
from engine.model.config import ModelConfig
from engine.model.evidence import Evidence
from engine.model.mixers.base import (
    CacheContext,
    LayerPlan,
    LayerShape,
    Mixer,
    MixerFamily,
    uses_mla,
)
from engine.model.mixers.dsa import DSA

EVIDENCE = Code("family.evidence.mla", "model_type")


def projection_params(cfg: ModelConfig, layer: LayerPlan) -> tuple[int, int]:
    """(TP-split, replicated) parameters of MLA's low-rank projections. The down-projections
    (q_a, kv_a with the RoPE key) and the DSA indexer are ReplicatedLinear in vLLM's DeepSeek
    code: every rank holds them whole. MiniCPM3 projects the same way (minicpm3.py)."""
    h = cfg.hidden_size
    heads = cfg.num_attention_heads
    nope = cfg.qk_nope_head_dim or 128
    rope = cfg.qk_rope_head_dim or 64
    v = cfg.v_head_dim or nope
    lora = cfg.kv_lora_rank or 512
    if cfg.q_lora_rank:
        q_rep = h * cfg.q_lora_rank + cfg.q_lora_rank
        q_tp = cfg.q_lora_rank * heads * (nope + rope)
    else:
        q_rep, q_tp = 0, h * heads * (nope + rope)
    kv_rep = h * (lora + rope) + lora
    kv_tp = lora * heads * (nope + v)
    o = heads * v * h
    # Kimi-K3's gated MLA: a full-rank sigmoid gate on every head's output (kimi_linear.py
    # g_proj, ColumnParallelLinear hidden -> heads x v_head_dim)
    gate = h * heads * v if cfg.field("mla_use_output_gate") is True else 0
    idx = DSA.params(cfg, cfg.q_lora_rank or h) if layer.indexer else 0
    return q_tp + kv_tp + o + gate, q_rep + kv_rep + idx


class MultiHeadLatent(MixerFamily):
    key = "mla"
    priority = 20
    LABEL = Code("mixer.mla")
    attention = True

    def claims(self, cfg: ModelConfig) -> bool:
        return uses_mla(cfg)

    def label(self, layer: LayerPlan | None = None) -> Decision:
        return DSA.LABEL() if layer is not None and layer.indexer else self.LABEL()

    def evidence(self, cfg: ModelConfig) -> list[Evidence]:
        rows = [
            Evidence(
                "kv_lora_rank / qk_rope_head_dim",
                f"{cfg.kv_lora_rank} / {cfg.qk_rope_head_dim}",
                EVIDENCE(model_type=Name(cfg.model_type)),
            )
        ]
        if DSA.present(cfg):
            rows.append(DSA.evidence(cfg))
        return rows

    def indexed_layers(self, cfg: ModelConfig) -> list[bool]:
        return DSA.mla_layers(cfg)

    def layer(self, cfg: ModelConfig, shape: LayerShape) -> LayerPlan:
        assert cfg.kv_lora_rank is not None and cfg.qk_rope_head_dim is not None
        return LayerPlan(
            shape.index,
            Mixer(self.key),
            num_kv_heads=1,
            head_dim=cfg.kv_lora_rank + cfg.qk_rope_head_dim,
            indexer=shape.indexed,
            ffn=shape.ffn,
        )

    def cache_specs(self, layer: LayerPlan, ctx: CacheContext) -> tuple[CacheSpec, ...]:
        cfg = ctx.cfg
        assert cfg.kv_lora_rank is not None and cfg.qk_rope_head_dim is not None
        latent = MLAAttentionSpec(
            ctx.kv_dtype, cfg.kv_lora_rank, cfg.qk_rope_head_dim, ctx.kv_bytes, ctx.mla_packed_bytes
        )
        return (latent, DSA.spec(ctx)) if layer.indexer else (latent,)

    def params(self, cfg: ModelConfig, layer: LayerPlan) -> tuple[int, int]:
        return projection_params(cfg, layer)
