"""Adapters from a full diagnosis to the small fact sets the linter, troubleshooter,
back-calculation and kernels read. One place, so every consumer sees the same model."""

from __future__ import annotations

from dataclasses import replace

from engine.diagnose import Options, diagnose
from engine.lint import ModelFacts, ParserNames
from engine.measure.kernels.dims import KernelDims, LayerGroup
from engine.model.architecture import build_architecture
from engine.model.config import ModelConfig
from engine.model.loader import LoadedModel, load_model

UNQUANTIZED = ("bf16", "fp16", "fp32")


def _software(loaded: LoadedModel) -> tuple[ParserNames, ParserNames]:
    try:
        from engine.software.report import software_report
    except ImportError:  # pragma: no cover - module ships with the project
        return ParserNames(), ParserNames()
    model_id = loaded.name if loaded.source in ("catalog", "hub") else None
    v = software_report(loaded.config.raw, "vllm", model_id)
    s = software_report(loaded.config.raw, "sglang", model_id)
    return (
        ParserNames(v.tool_call_parser, s.tool_call_parser),
        ParserNames(v.reasoning_parser, s.reasoning_parser),
    )


def model_facts(loaded: LoadedModel) -> ModelFacts:
    cfg = loaded.config
    d = diagnose(cfg)
    tool, reasoning = _software(loaded)
    return ModelFacts(
        architecture=cfg.architecture,
        attention_family=d.family.attention_family,
        moe=d.family.moe,
        num_attention_heads=cfg.num_attention_heads,
        num_kv_heads=cfg.num_key_value_heads,
        max_position_embeddings=cfg.max_position_embeddings,
        model_type=cfg.model_type,
        num_experts=d.family.num_experts,
        has_tool_parser_need=tool.vllm is not None or tool.sglang is not None,
        has_reasoning_parser_need=reasoning.vllm is not None or reasoning.sglang is not None,
        tool_call_parser=tool,
        reasoning_parser=reasoning,
        checkpoint_format=None if d.weights.weight_dtype in UNQUANTIZED else d.weights.format,
        attention_block_tokens=d.kv.hybrid.block_size if d.kv.hybrid else None,
        name=loaded.name,
    )


def kernel_dims(cfg: ModelConfig) -> KernelDims:
    """The micro-kernels' dimensions taken from a real config (defaults where a family
    has no such part, e.g. no MLA fields on a GQA model)."""
    arch = build_architecture(cfg)
    base = KernelDims()
    hd = cfg.head_dim or cfg.hidden_size // cfg.num_attention_heads
    n_lin = arch.count("gdn")
    ep = 8 if cfg.num_experts > 1 and cfg.num_experts % 8 == 0 else 1  # one 8-GPU node
    return replace(
        base,
        name=cfg.architecture,
        num_layers=cfg.num_hidden_layers,
        num_heads=cfg.num_attention_heads,
        num_kv_heads=cfg.num_key_value_heads if cfg.kv_lora_rank is None else base.num_kv_heads,
        head_dim=hd if cfg.kv_lora_rank is None else base.head_dim,
        kv_lora_rank=cfg.kv_lora_rank or 0,
        qk_rope_head_dim=cfg.qk_rope_head_dim or base.qk_rope_head_dim,
        qk_nope_head_dim=cfg.qk_nope_head_dim or base.qk_nope_head_dim,
        v_head_dim=cfg.v_head_dim or base.v_head_dim,
        index_num_heads=cfg.index_n_heads or base.index_num_heads,
        index_head_dim=cfg.index_head_dim or 0,
        index_topk=cfg.index_topk or base.index_topk,
        hidden_size=cfg.hidden_size,
        moe_intermediate_size=cfg.moe_intermediate_size or base.moe_intermediate_size,
        num_experts=max(cfg.num_experts, 1),
        experts_per_token=max(cfg.experts_per_token, 1),
        ep_size=ep,
        num_redundant_experts=ep if ep > 1 else 0,
        num_linear_layers=n_lin,
        linear_num_key_heads=cfg.linear_num_key_heads or base.linear_num_key_heads,
        linear_num_value_heads=cfg.linear_num_value_heads or base.linear_num_value_heads,
        linear_key_head_dim=cfg.linear_key_head_dim or base.linear_key_head_dim,
        linear_value_head_dim=cfg.linear_value_head_dim or base.linear_value_head_dim,
        linear_conv_kernel_dim=cfg.linear_conv_kernel_dim or base.linear_conv_kernel_dim,
    )


def kernel_layer_groups(cfg: ModelConfig) -> tuple[list[LayerGroup], int | None]:
    """The engine's paged groups (bf16, TP 1) as the paged-layout check takes them, and the
    hybrid attention block. Constant-state (Mamba) and fractional compressed groups are
    left out: they are not token-paged."""
    d = diagnose(cfg, Options(kv_dtype="bf16"))
    groups = [
        (f"{g.kind}_{g.layers[0]}", g.num_layers, int(g.spec.bytes_per_token), d.kv.block_size)
        for g in d.kv.groups
        if g.kind not in ("mamba", "compressed")
    ]
    return groups, d.kv.hybrid.block_size if d.kv.hybrid else None


def facts_for_source(source: str) -> ModelFacts:
    return model_facts(load_model(source))


def predict_for_source(source: str, tp: int) -> tuple[float, str, list[str]]:
    """Predicted KV bytes per token per rank, the family and notes, for back-calculation."""
    d = diagnose(load_model(source).config, Options(tp=tp))
    notes = [g.formula() for g in d.kv.groups]
    if d.kv.hybrid is not None:
        notes.append("hybrid: " + d.kv.hybrid.formula())
    if d.kv.state_bytes_per_request:
        notes.append(f"constant state per request: {d.kv.state_bytes_per_request:,} B")
    return float(d.kv.kv_bytes_per_token), d.family.attention_family, notes
