"""Which facts about the model and the GPU hold, and the score they give a cause.

A scoring function is small and pure: it reads the model facts and the GPU and names which of its
facts hold. The cause's row in ``data/troubleshoot.yaml`` says how far each fact moves the cause's
base score; the score is the base plus those moves, clamped to 0-1, and the moves are the
explanation the user sees ("MoE model +83 %").

Kernel-per-GPU facts come from ``data/kernel_gates.yaml`` (``kernel_gates``, ``dsa_kernel_path``),
SGLang's DSA KV dtype per generation from ``data/engine_rules.yaml``, and the named generation and
architecture sets from ``data/troubleshoot.yaml``: no GPU or model is named here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from engine.gates import kernel_gates
from engine.hardware.gpus import Gpu
from engine.lint import dsa_kernel_path
from engine.rules import engine_rules
from engine.troubleshoot.cause_table import CauseRow, Table, troubleshoot_table
from engine.troubleshoot.facts import ModelFacts

BASE = "base"  # the first move of every score: the cause's base

# The named sets of data/troubleshoot.yaml that the scoring functions read.
NO_SM100_KERNELS = "no_sm100_kernels"  # generations that cannot run kernels built for sm_100
FLASH_ATTN_FP8_KV = "flash_attn_fp8_kv"  # generations where vLLM's FlashAttention reads FP8 KV
SEPARATE_TOOL_TEMPLATE = "separate_tool_template"  # architectures with a tool template file


@dataclass(frozen=True)
class Score:
    """A cause's score and the moves that make it; ``value`` is their sum clamped to 0-1."""

    value: float
    moves: tuple[tuple[str, float], ...]  # (BASE, base), then (fact, move) per fact that holds


def clamp(total: float) -> float:
    """A sum of moves as a score: within 0-1, rounded past float noise (0.02 + 0.83 = 0.85)."""
    return round(min(1.0, max(0.0, total)), 4)


Observe = Callable[[ModelFacts, "Gpu | None"], Iterator[str]]


@dataclass(frozen=True)
class Scorer:
    """A scoring function: the facts it can report and how it sees which of them hold."""

    facts: tuple[str, ...]
    observe: Observe

    def holding(self, facts: ModelFacts, gpu: Gpu | None) -> frozenset[str]:
        seen = frozenset(self.observe(facts, gpu))
        if not seen <= set(self.facts):
            raise ValueError(f"{self.observe.__name__} reported undeclared facts {sorted(seen)}")
        return seen

    def __call__(self, cause: CauseRow, facts: ModelFacts, gpu: Gpu | None) -> Score:
        holds = self.holding(facts, gpu)
        moves = tuple((fact, move) for fact, move in cause.adjust.items() if fact in holds)
        total = cause.base + sum(move for _, move in moves)
        return Score(clamp(total), ((BASE, cause.base), *moves))


def _generations(name: str) -> frozenset[str]:
    return troubleshoot_table().generation_sets[name].generations


def _architectures(name: str) -> frozenset[str]:
    return troubleshoot_table().architecture_sets[name].architectures


# --- the scoring functions ------------------------------------------------------------------


def _generic(f: ModelFacts, gpu: Gpu | None) -> Iterator[str]:
    """Causes that fit every model and GPU alike: only their base counts."""
    yield from ()


def _tool_calls(f: ModelFacts, gpu: Gpu | None) -> Iterator[str]:
    """Whether the model is meant to call tools, and whether its parser's name is known."""
    if f.has_tool_parser_need:
        yield "tool_calls_expected"
        if f.tool_call_parser.vllm or f.tool_call_parser.sglang:
            yield "tool_parser_known"


def _tool_template(f: ModelFacts, gpu: Gpu | None) -> Iterator[str]:
    """Families whose tools reach the model only through a separate template file."""
    if f.architecture in _architectures(SEPARATE_TOOL_TEMPLATE):
        yield "separate_tool_template"


def _reasoning(f: ModelFacts, gpu: Gpu | None) -> Iterator[str]:
    """Whether the model writes thinking text, and whether its parser's name is known."""
    if f.has_reasoning_parser_need:
        yield "thinking_expected"
        if f.reasoning_parser.vllm or f.reasoning_parser.sglang:
            yield "reasoning_parser_known"


def _experts(f: ModelFacts, gpu: Gpu | None) -> Iterator[str]:
    """Experts exist only in MoE models; with latent KV they are usually served with
    DP-attention, whose groups can idle."""
    if f.moe:
        yield "moe"
        if f.is_mla:
            yield "moe_latent_kv"


def _attention(f: ModelFacts, gpu: Gpu | None) -> Iterator[str]:
    """The attention family: what the cache keeps per token and how prefixes are reused."""
    if f.attention_family == "MHA":
        yield "mha"
    if f.attention_family == "GQA":
        yield "gqa"
    if f.is_mla:
        yield "latent_kv"
    if f.is_dsa:
        yield "dsa"
    if f.is_hybrid:
        yield "hybrid"


_DSA_PATH_FACT = {
    "none": "dsa_kernels_missing",
    "sm120": "dsa_kernels_sm120_only",
    "native": "dsa_kernels_native",
    "other-vendor": "dsa_kernels_other_vendor",
}


def _dsa_kernels(f: ModelFacts, gpu: Gpu | None) -> Iterator[str]:
    """A DSA model, and which sparse kernels this GPU has (``dsa_kernel_path``)."""
    if f.is_dsa:
        yield "dsa"
        if gpu is not None:
            yield _DSA_PATH_FACT[dsa_kernel_path(gpu)]


def _mla_kernels(f: ModelFacts, gpu: Gpu | None) -> Iterator[str]:
    """Plain MLA, and GPUs whose MLA gate is not a pass: there only TRITON_MLA runs."""
    if f.attention_family == "MLA":
        yield "mla"
        rule = kernel_gates().mla.archs.get(gpu.arch) if gpu is not None else None
        if rule is not None and rule.status != "pass":
            yield "mla_triton_only"


def _sm100_kernels(f: ModelFacts, gpu: Gpu | None) -> Iterator[str]:
    """GPUs of a generation that cannot run kernels built for sm_100; worst for latent KV,
    whose fast kernels are built for sm_90 / sm_100."""
    if gpu is not None and gpu.generation in _generations(NO_SM100_KERNELS):
        yield "no_sm100_kernels"
        if f.is_mla:
            yield "latent_kv_without_sm100_kernels"


def _dsa_kv_dtype(f: ModelFacts, gpu: Gpu | None) -> Iterator[str]:
    """A DSA model, and GPUs on which SGLang keeps its KV cache in bf16 by its own choice."""
    if f.is_dsa:
        yield "dsa"
        auto = engine_rules().sglang.dsa_auto_dtype
        if gpu is not None and auto.get(gpu.generation) == "bfloat16":
            yield "dsa_kv_bf16_default"


def _flash_attn_fp8(f: ModelFacts, gpu: Gpu | None) -> Iterator[str]:
    """Standard attention on a GPU where vLLM's FlashAttention backend cannot read FP8 KV."""
    if gpu is None or f.is_mla:
        return
    if gpu.generation not in _generations(FLASH_ATTN_FP8_KV):
        yield "fp8_kv_without_fa3"


SCORERS: Mapping[str, Scorer] = MappingProxyType(
    {
        "generic": Scorer((), _generic),
        "tool_calls": Scorer(("tool_calls_expected", "tool_parser_known"), _tool_calls),
        "tool_template": Scorer(("separate_tool_template",), _tool_template),
        "reasoning": Scorer(("thinking_expected", "reasoning_parser_known"), _reasoning),
        "experts": Scorer(("moe", "moe_latent_kv"), _experts),
        "attention": Scorer(("mha", "gqa", "latent_kv", "dsa", "hybrid"), _attention),
        "dsa_kernels": Scorer(("dsa", *_DSA_PATH_FACT.values()), _dsa_kernels),
        "mla_kernels": Scorer(("mla", "mla_triton_only"), _mla_kernels),
        "sm100_kernels": Scorer(
            ("no_sm100_kernels", "latent_kv_without_sm100_kernels"), _sm100_kernels
        ),
        "dsa_kv_dtype": Scorer(("dsa", "dsa_kv_bf16_default"), _dsa_kv_dtype),
        "flash_attn_fp8": Scorer(("fp8_kv_without_fa3",), _flash_attn_fp8),
    }
)


def score(cause: CauseRow, facts: ModelFacts, gpu: Gpu | None) -> Score:
    """The cause's score for this model and GPU, by the scoring function its row names."""
    return SCORERS[cause.rate](cause, facts, gpu)


# --- conditions that pick between a text and its variant ------------------------------------


def _tool_parser_unnamed(f: ModelFacts, gpu: Gpu | None) -> bool:
    return not (f.tool_call_parser.vllm and f.tool_call_parser.sglang)


def _reasoning_parser_unnamed(f: ModelFacts, gpu: Gpu | None) -> bool:
    return not (f.reasoning_parser.vllm and f.reasoning_parser.sglang)


def _attention_block_unknown(f: ModelFacts, gpu: Gpu | None) -> bool:
    return f.attention_block_tokens is None


def _gpu_without_fp8(f: ModelFacts, gpu: Gpu | None) -> bool:
    return gpu is not None and not gpu.fp8


CONDITIONS: Mapping[str, Callable[[ModelFacts, Gpu | None], bool]] = MappingProxyType(
    {
        "tool_parser_unnamed": _tool_parser_unnamed,
        "reasoning_parser_unnamed": _reasoning_parser_unnamed,
        "attention_block_unknown": _attention_block_unknown,
        "gpu_without_fp8": _gpu_without_fp8,
    }
)


def problems(table: Table) -> list[str]:
    """What in ``table`` names a scoring function, fact or condition this module lacks."""
    found: list[str] = []
    for cause in table.causes:
        scorer = SCORERS.get(cause.rate)
        if scorer is None:
            found.append(f"{cause.id}: no scoring function {cause.rate!r}")
            continue
        for fact in cause.adjust:
            if fact not in scorer.facts:
                found.append(f"{cause.id}: {cause.rate} does not report {fact!r}")
        for alternatives in cause.variants.values():
            for condition in alternatives:
                if condition not in CONDITIONS:
                    found.append(f"{cause.id}: no condition {condition!r}")
    for name in (NO_SM100_KERNELS, FLASH_ATTN_FP8_KV):
        if name not in table.generation_sets:
            found.append(f"generation_sets: {name!r} missing")
    if SEPARATE_TOOL_TEMPLATE not in table.architecture_sets:
        found.append(f"architecture_sets: {SEPARATE_TOOL_TEMPLATE!r} missing")
    return found
