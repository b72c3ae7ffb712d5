"""Fixed costs belong to the software stack: what an engine on a vendor's stack (vLLM or SGLang
on CUDA or ROCm) spends beyond the bytes and FLOPs of a step, and how it runs a step (CUDA
graphs or eager, a compiled prefill or an eager one).

A stack's costs are scaled by what they physically depend on, never by the model's name or the
GPU's: each kernel a step launches (``data/perf.yaml`` kernels: per layer and op, counted from the
engines' model code) costs the stack's per-kernel floor when the step replays a captured CUDA /
HIP graph, or the host's launch when it runs op by op; a prefill pass costs the host's dispatch
of its kernels (compiled, or eager); a step costs the scheduler's pass, and each running request
its bookkeeping; a collective the library's latency (NCCL, RCCL). ``data/perf.yaml`` stacks holds
one row per (engine, vendor stack), each cost with its source; ``tools/fit_perf.py`` fits the
rows it has measured runs for, and derives a row it has none for from its like on the other
vendor times a sourced scale.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import Field, model_validator

from engine.rules import Strict

Vendor = Literal["nvidia", "amd"]
ExecMode = Literal["graph", "eager"]
# the per-stack costs, in the order data/perf.yaml lists them
STACK_COSTS = (
    "kernel_seconds",
    "eager_kernel_seconds",
    "prefill_kernel_seconds",
    "step_seconds",
    "request_step_seconds",
    "request_seconds",
    "collective_latency_seconds",
)


class Factor(Strict):
    """One number with its unit and where it comes from (``fitted``: by tools/fit_perf.py)."""

    value: float = Field(ge=0)
    unit: str
    fitted: bool
    source: str = Field(min_length=1)


class Scale(Strict):
    """A derived stack's cost over its like's, with the source that says so."""

    value: float = Field(gt=0)
    source: str = Field(min_length=1)


class Stack(Strict):
    """One engine on one vendor's stack (``key``: engine/vendor) and its fixed costs."""

    key: str = Field(min_length=1)
    engine: str = Field(min_length=1)
    vendor: Vendor
    kernel_seconds: Factor  # per kernel of a decode step replayed as a CUDA / HIP graph
    eager_kernel_seconds: Factor  # per kernel the host launches op by op (eager)
    prefill_kernel_seconds: Factor  # the host's dispatch per kernel of a compiled prefill pass
    step_seconds: Factor  # the scheduler, sampler and output of one step
    request_step_seconds: Factor  # per running request per step: its bookkeeping
    request_seconds: Factor  # per request, once: tokenize, admit, first sample, detokenize
    collective_latency_seconds: Factor  # one collective inside the scale-up domain
    like: str | None = None  # the stack this one is derived from (no measured runs of its own)
    scales: dict[str, Scale] = Field(default_factory=dict)  # its costs over the like's

    @model_validator(mode="after")
    def _derived(self) -> Stack:
        if self.scales and self.like is None:
            raise ValueError(f"{self.key}: scales without the stack they scale (like)")
        unknown = set(self.scales) - set(STACK_COSTS)
        if unknown:
            raise ValueError(f"{self.key}: scales for unknown costs {sorted(unknown)}")
        return self

    def cost(self, name: str) -> float:
        factor: Factor = getattr(self, name)
        return factor.value


class Kernels(Strict):
    """Kernels one layer launches in a decode step, by op."""

    norms: int = Field(ge=0)  # per decoder layer (the fused add + RMSNorm before each block)
    attention: int = Field(ge=0)  # GQA / MHA / sliding / chunked
    mla: int = Field(ge=0)
    indexer: int = Field(ge=0)  # DSA's indexer, beside its MLA
    compressed: int = Field(ge=0)  # DeepSeek-V4's compressed attention
    linear: int = Field(ge=0)  # a linear mixer (Gated DeltaNet, Mamba)
    dense_ffn: int = Field(ge=0)
    moe: int = Field(ge=0)  # router, top-k, permute, two grouped GEMMs, activation, combine
    shared_experts: int = Field(ge=0)
    source: str = Field(min_length=1)

    def of(self, kind: str) -> int:
        """Kernels of an attention group kind (``engine.perf.attention`` GroupCost.kind)."""
        if kind in ("mla", "indexer", "compressed", "linear"):
            count: int = getattr(self, kind)
            return count
        return self.attention


@dataclass(frozen=True)
class StepKernels:
    """Kernels one pass launches through every layer (all pipeline stages), by part."""

    layers: int  # norms, attention and FFN of every layer
    moe_layers: int  # the MoE layers' own (router ... combine, shared experts)
    count: int  # decoder layers

    @property
    def total(self) -> int:
        return self.layers + self.moe_layers

    @property
    def per_layer(self) -> float:
        return self.total / self.count if self.count else 0.0
