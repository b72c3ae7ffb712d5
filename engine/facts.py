"""Adapters from a full diagnosis to the small fact sets the linter, troubleshooter,
back-calculation and kernels read. One place, so every consumer sees the same model."""

from __future__ import annotations

from engine.diagnose import Options, diagnose
from engine.lint import ModelFacts, ParserNames
from engine.measure.kernels.from_model import kernel_dims, kernel_layer_groups
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


__all__ = [
    "facts_for_source",
    "kernel_dims",  # lives in engine.measure.kernels.from_model; re-exported for its readers
    "kernel_layer_groups",
    "model_facts",
    "predict_for_source",
]


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
