"""Memory facts both engine adapters read: ``data/memory.yaml`` (validated once), the device's
own total the engines' fractions apply to, how one copy of the model is cut (``Split``) and the
non-KV reserve an engine keeps inside its fraction (``Reserve``). The engine-specific accounting
(vLLM's utilization and start-up reserve, SGLang's automatic ``--mem-fraction-static``) is each
adapter's (``engine.engines.vllm``, ``engine.engines.sglang``)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from pydantic import Field

from engine.decision import Code, Decision
from engine.hardware.gpus import Gpu
from engine.rules import Loose, load_data

GIB = 1 << 30


class _BatchTier(Loose):
    min_device_gib: float = Field(ge=0)
    excludes_name: str | None = None
    max_num_batched_tokens_api_server: int = Field(ge=1)
    max_num_seqs_api_server: int = Field(ge=1)
    source: str = Field(min_length=1)


class _BatchDefaults(Loose):
    tiers: list[_BatchTier] = Field(min_length=1)
    source: str = Field(min_length=1)


class _VllmReserve(Loose):
    """vLLM's non-KV memory inside the utilization fraction (a fit to real start-up logs)."""

    activation_logit_copies: float = Field(ge=0)
    non_torch_gib_tp1: float = Field(ge=0)
    non_torch_gib_tp_gt1: float = Field(ge=0)
    cuda_graph_gib: float = Field(ge=0)
    source: str = Field(min_length=1)


class _VllmKvPool(Loose):
    batch_defaults: _BatchDefaults
    reserve_estimate: _VllmReserve


class _CapacityTier(Loose):
    below_gib: float | None
    chunked_prefill_size: int = Field(ge=1)
    decode_graph_max_bs_tp_lt4: int = Field(ge=1)
    decode_graph_max_bs_tp_ge4: int = Field(ge=1)


class _Capacity(Loose):
    tiers: list[_CapacityTier] = Field(min_length=1)
    source: str = Field(min_length=1)


class _ConstantsMb(Loose):
    base: float
    per_activation_token: float
    per_tp_pp_over_8: float
    floor_above_60gib: float
    floor_from_gib: float = Field(gt=0)
    per_decode_graph_bs: float
    dp_attention_per_bs_per_dp: float
    dp_attention_extra_above_300_bs: float
    dp_attention_extra_from_bs: int = Field(ge=1)
    min_activation_tokens: int = Field(ge=1)
    per_prefill_graph_bs_non_mla: float
    prefill_graph_mla: float
    deepep_a2a: float
    source: str = Field(min_length=1)


class _FractionDefault(Loose):
    constants_mb: _ConstantsMb


class _PrefillSizes(Loose):
    ranges: list[tuple[int, int | None, int]] = Field(min_length=1)
    mla_max_bs: int = Field(ge=1)
    source: str = Field(min_length=1)


class _VlmAdjust(Loose):
    base: float = Field(gt=0)
    baseline_layers: int = Field(ge=1)
    baseline_hidden: int = Field(ge=1)
    sensitivity: float = Field(ge=0)
    min_factor: float = Field(gt=0)
    max_factor: float = Field(gt=0)
    source: str = Field(min_length=1)


class _SglangStatic(Loose):
    capacity_defaults: _Capacity
    mem_fraction_static_default: _FractionDefault
    prefill_graph_capture_sizes: _PrefillSizes
    vlm_adjust: _VlmAdjust


class SourcedFraction(Loose):
    value: float = Field(gt=0, le=1)
    source: str


class RaisedFraction(Loose):
    """``raised_fraction``: the highest memory fraction the official commands run at, per
    engine (an alternative may offer it; a fraction the plan pins never exceeds it)."""

    vllm: SourcedFraction
    sglang: SourcedFraction


class MemoryRules(Loose):
    vllm_kv_pool: _VllmKvPool
    sglang_static_memory: _SglangStatic
    raised_fraction: RaisedFraction


@cache
def memory_rules() -> MemoryRules:
    """``data/memory.yaml``, read and validated once."""
    return load_data(MemoryRules, "memory.yaml")


@dataclass(frozen=True)
class Split:
    """How one copy of the model is cut: ``tp`` attention tensor-parallel ranks per DP rank,
    ``dp`` attention data-parallel ranks (MoE models only), ``pp`` pipeline stages; ``ep``:
    routed experts placed whole on ranks instead of sliced."""

    tp: int
    dp: int = 1
    pp: int = 1
    ep: bool = False

    @property
    def gpus(self) -> int:
        return self.tp * self.dp * self.pp

    @property
    def moe_group(self) -> int:
        """Ranks the routed experts are spread over (TP flattened across DP in both engines)."""
        return self.tp * self.dp


def device_memory(gpu: Gpu) -> int:
    """Bytes the device reports (CUDA / ROCm total), which the engines' fractions apply to."""
    reported: int = getattr(gpu, "device_memory_bytes", gpu.memory_bytes)
    return reported


@dataclass(frozen=True)
class Reserve:
    """Non-KV memory the engine keeps inside its fraction on one GPU, by part: each part's
    name, its bytes and its formula (a decision, worded in the reader's language)."""

    parts: tuple[tuple[str, int, Decision], ...]  # (name, bytes, formula)

    @property
    def total(self) -> int:
        return sum(b for _, b, _ in self.parts)

    def formula(self) -> tuple[Decision, ...]:
        """Each part's formula, in order (a reader joins them with ``+``)."""
        return tuple(why for _, _, why in self.parts)


# The parts of vLLM's start-up reserve (engine.engines.vllm.VllmAdapter.reserve).
RESERVE_ACTIVATIONS = Code("memory.reserve.activations", "bytes", "copies", "rows", "vocab")
RESERVE_NON_TORCH = Code("memory.reserve.non_torch", "bytes")
RESERVE_CUDA_GRAPHS = Code("memory.reserve.cuda_graphs", "bytes")
