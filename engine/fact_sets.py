"""Adapters from the Study to the small fact sets the troubleshooter, back-calculation and kernels
read. One place, so every consumer sees the model the way the planner and the linter see it."""

from __future__ import annotations

from engine.diagnose import Options, diagnose
from engine.lint import ModelFacts, ParserNames
from engine.lint.model import scenario_fields
from engine.measure.kernels.from_model import kernel_dims, kernel_layer_groups
from engine.model.loader import LoadedModel, load_model
from engine.present.evidence_words import formulas
from engine.scenario import make_scenario
from engine.study import Study, study
from engine.text.words import say

UNQUANTIZED = ("bf16", "fp16", "fp32")


def facts_from_study(st: Study) -> ModelFacts:
    """The model's facts as the Study found them: family, heads, the engines' own context limit,
    both engines' parser names, the checkpoint format, vLLM's hybrid attention block."""
    cfg = st.config
    sw = {e: st.engines[e].software for e in ("vllm", "sglang")}
    tool = ParserNames(sw["vllm"].tool_call_parser, sw["sglang"].tool_call_parser)
    reasoning = ParserNames(sw["vllm"].reasoning_parser, sw["sglang"].reasoning_parser)
    hybrid = st.engines["vllm"].kv.hybrid
    return ModelFacts(
        architecture=cfg.architecture,
        attention_family=st.family.attention_family,
        moe=st.family.moe,
        num_attention_heads=cfg.num_attention_heads,
        num_kv_heads=cfg.num_key_value_heads,
        max_position_embeddings=st.limit.tokens,
        model_type=cfg.model_type,
        num_experts=st.family.num_experts,
        has_tool_parser_need=tool.vllm is not None or tool.sglang is not None,
        has_reasoning_parser_need=reasoning.vllm is not None or reasoning.sglang is not None,
        tool_call_parser=tool,
        reasoning_parser=reasoning,
        checkpoint_format=(None if st.weights.weight_dtype in UNQUANTIZED else st.weights.format),
        attention_block_tokens=hybrid.block_size if hybrid is not None else None,
        name=st.model.name,
    )


def model_facts(model: LoadedModel | Study) -> ModelFacts:
    """The facts of a Study, or of a loaded model studied on the default hardware (the facts
    read here do not depend on it)."""

    if isinstance(model, Study):
        return facts_from_study(model)
    return facts_from_study(study(make_scenario(**scenario_fields(model))))


__all__ = [
    "facts_for_source",
    "facts_from_study",
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
    notes = formulas(d.kv)
    if d.kv.hybrid is not None:
        notes.append("hybrid: " + say(d.kv.hybrid.formula()))
    if d.kv.state_bytes_per_request:
        notes.append(f"constant state per request: {d.kv.state_bytes_per_request:,} B")
    return float(d.kv.kv_bytes_per_token), d.family.attention_family, notes
