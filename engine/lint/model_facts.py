"""The small fact set about a model that the troubleshooter reads (``ModelFacts``), built from
the Study by ``engine.fact_sets``; kept small so rules stay readable and a test can write one in a
line."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, get_args

from engine.engines import check_engine
from engine.errors import InputError

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
    (``engine.fact_sets.facts_from_study``)."""

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
