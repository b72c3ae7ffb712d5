"""The small fact set about a model that the troubleshooter reads (``ModelFacts``), built from
the Study (``facts_from_study``) so the troubleshooter sees the model the way the planner and the
linter see it; kept small so rules stay readable and a test can write one in a line."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, get_args

from engine.engines import check_engine
from engine.errors import InputError
from engine.lint.model import scenario_fields
from engine.model.loader import LoadedModel, load_model
from engine.scenario import make_scenario
from engine.study import Study, study

AttentionFamily = Literal["MHA", "MQA", "GQA", "MLA", "DSA", "HYBRID"]
ATTENTION_FAMILIES: tuple[str, ...] = get_args(AttentionFamily)


@dataclass(frozen=True)
class ParserNames:
    """A parser's name per engine (the spellings differ: vLLM ``deepseek_v3``, SGLang
    ``deepseekv3``)."""

    vllm: str | None = None
    sglang: str | None = None

    def for_engine(self, engine: str) -> str | None:
        name: str | None = getattr(self, check_engine(engine))
        return name


@dataclass(frozen=True)
class ModelFacts:
    """The few facts about a model that the troubleshooting rules read, taken from the Study
    (``facts_from_study``)."""

    architecture: str  # HF architectures[0], e.g. "GlmMoeDsaForCausalLM"
    attention_family: str  # MHA | MQA | GQA | MLA | DSA | HYBRID
    moe: bool
    num_attention_heads: int
    num_kv_heads: int
    max_position_embeddings: int | None = None
    model_type: str = ""
    num_experts: int = 0
    has_tool_parser_need: bool = False  # the model is meant to call tools
    has_reasoning_parser_need: bool = False  # the model emits thinking text
    tool_call_parser: ParserNames = field(default_factory=ParserNames)
    reasoning_parser: ParserNames = field(default_factory=ParserNames)
    checkpoint_format: str | None = None  # "nvfp4", "fp8", "mxfp4", "awq", "gptq"; None = 16-bit
    attention_block_tokens: int | None = None  # hybrid: tokens per attention block vLLM aligns to
    name: str = ""  # display name, e.g. "zai-org/GLM-5"

    def __post_init__(self) -> None:
        if self.attention_family not in ATTENTION_FAMILIES:
            raise InputError(
                "attention_family",
                f"one of {', '.join(ATTENTION_FAMILIES)}, got {self.attention_family!r}",
            )
        for name in ("num_attention_heads", "num_kv_heads"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InputError(name, f"a positive whole number, got {value!r}")
        for name in ("max_position_embeddings", "attention_block_tokens"):
            value = getattr(self, name)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or value < 1
            ):
                raise InputError(name, f"a positive whole number or nothing, got {value!r}")

    @property
    def is_dsa(self) -> bool:
        return self.attention_family == "DSA"

    @property
    def is_mla(self) -> bool:
        """MLA latent KV (plain MLA and DSA both store it)."""
        return self.attention_family in ("MLA", "DSA")

    @property
    def is_hybrid(self) -> bool:
        return self.attention_family == "HYBRID"


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


def facts_for_source(source: str) -> ModelFacts:
    return model_facts(load_model(source))
