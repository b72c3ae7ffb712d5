"""Memory of one GPU as the engines count it: the device's own total, the engine's fraction and
its non-KV reserve, and the weights a parallel layout leaves on each GPU.

vLLM sizes the KV pool as ``total × gpu_memory_utilization − (weights + the profile run's peak
activations + non-torch memory + CUDA graphs)``; SGLang's ``--mem-fraction-static`` covers the
weights and the KV pool only, and everything else lives in the remaining ``1 − fraction``. Where
each parameter block of the model sits under a layout follows the engines' model code (see
``engine.model.weights.Role``). The rules' numbers live in ``data/memory.yaml`` with sources.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache
from typing import Literal

from pydantic import Field

from engine.hardware.gpus import Gpu
from engine.model.config import ModelConfig
from engine.model.weights import ROLES, Role, WeightReport
from engine.rules import Loose, load_data
from engine.software.tables import lookup_flag

Engine = Literal["vllm", "sglang"]
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
    per_decode_graph_bs: float
    dp_attention_per_bs_per_dp: float
    dp_attention_extra_above_300_bs: float
    dp_attention_extra_from_bs: int = Field(ge=1)
    min_activation_tokens: int = Field(ge=1)
    per_prefill_graph_bs_non_mla: float
    prefill_graph_mla: float
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


class MemoryRules(Loose):
    vllm_kv_pool: _VllmKvPool
    sglang_static_memory: _SglangStatic


@cache
def memory_rules() -> MemoryRules:
    """``data/memory.yaml``, read and validated once."""
    return load_data(MemoryRules, "memory.yaml")


# --- the parallel layout as the memory rules see it -----------------------------------------


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


@dataclass(frozen=True)
class WeightShare:
    """Bytes of one role on the busiest GPU: the role's total ÷ the GPUs sharing one copy,
    × the share of layers on the busiest pipeline stage."""

    role: Role
    bytes_total: int
    divisor: int
    stage_share: float
    bytes_per_gpu: int

    def formula(self) -> str:
        split = "whole on every GPU" if self.divisor == 1 else f"÷ {self.divisor}"
        stage = "" if self.stage_share == 1 else f" × {self.stage_share:.3f} of the layers"
        return f"{self.role}: {self.bytes_total:,} B {split}{stage} = {self.bytes_per_gpu:,} B"


def device_memory(gpu: Gpu) -> int:
    """Bytes the device reports (CUDA / ROCm total), which the engines' fractions apply to."""
    reported: int = getattr(gpu, "device_memory_bytes", gpu.memory_bytes)
    return reported


def _divisor(engine: Engine, role: Role, s: Split, vision_replicated: bool) -> int:
    """How many GPUs share one copy of a role's weights, per the engines' model code."""
    full_tp = s.tp * s.dp  # SGLang's --tp-size under DP-attention
    if role in ("replicated", "router", "norm"):
        return 1
    if role == "routed_experts":
        return s.moe_group
    if role == "vision":
        return 1 if vision_replicated else (s.tp if engine == "vllm" else full_tp)
    if engine == "vllm":
        # VocabParallelEmbedding / ParallelLMHead and every column/row-parallel linear use the
        # attention TP group; each DP rank holds its own copy.
        return s.tp
    if role == "embedding":
        # SGLang: VocabParallelEmbedding(enable_tp=not is_dp_attention_enabled())
        return 1 if s.dp > 1 else full_tp
    if role in ("lm_head", "dense_ffn", "shared_experts"):
        # SGLang: lm_head and the dense / shared MLPs use the full TP group by default
        # (--enable-dp-lm-head and --moe-dense-tp-size 1 change that)
        return full_tp
    return s.tp  # attention and linear mixers: the attention TP group


def weights_per_gpu(
    w: WeightReport,
    engine: Engine,
    split: Split,
    *,
    num_layers: int,
    mtp: bool,
    vision: bool,
    vision_replicated: bool = False,
) -> tuple[int, tuple[WeightShare, ...]]:
    """Weight bytes on the busiest GPU of one model copy, by role. ``mtp``: the MTP layers are
    loaded (speculative decoding on); ``vision``: the encoder is loaded (not text-only).

    With pipeline stages the busiest is the first or the last: it holds ``ceil(L / pp)`` of the
    ``L`` layers plus the embedding and encoder (first) or the LM head (last)."""
    stage = math.ceil(num_layers / split.pp) / num_layers if split.pp > 1 else 1.0
    shares: list[WeightShare] = []
    first = last = body = 0
    for role in ROLES:
        if role == "vision" and not vision:
            continue
        total = w.bytes_of([role], mtp=None if mtp else False)
        if total == 0:
            continue
        div = _divisor(engine, role, split, vision_replicated)
        share = 1.0 if role in _ENDS else stage
        per = math.ceil(total / div * share)
        if role == "lm_head":
            last += per
        elif role in _ENDS:
            first += per
        else:
            body += per
        shares.append(WeightShare(role, total, div, share, per))
    busiest = body + (max(first, last) if split.pp > 1 else first + last)
    return busiest, tuple(shares)


_ENDS = ("embedding", "lm_head", "vision")


# --- the engine's usable memory and reserve --------------------------------------------------


def vllm_default_fraction() -> float:
    """``vllm serve``'s default --gpu-memory-utilization, from the pinned flag table."""
    info = lookup_flag("vllm", "--gpu-memory-utilization")
    assert info is not None and isinstance(info.default, int | float)
    return float(info.default)


def vllm_batch_defaults(gpu: Gpu) -> tuple[int, int]:
    """(max_num_batched_tokens, max_num_seqs) vLLM picks for the API server on ``gpu``
    (EngineArgs.get_batch_defaults: tiers by device memory, A100 kept out of the large tier)."""
    gib = device_memory(gpu) / GIB
    name = gpu.name.lower()
    for tier in sorted(
        memory_rules().vllm_kv_pool.batch_defaults.tiers, key=lambda t: -t.min_device_gib
    ):
        if gib >= tier.min_device_gib and not (tier.excludes_name and tier.excludes_name in name):
            return tier.max_num_batched_tokens_api_server, tier.max_num_seqs_api_server
    raise AssertionError("data/memory.yaml batch tiers must include a 0 GiB tier")


@dataclass(frozen=True)
class Reserve:
    """Non-KV memory the engine keeps inside its fraction on one GPU, by part."""

    parts: tuple[tuple[str, int, str], ...]  # (name, bytes, formula)

    @property
    def total(self) -> int:
        return sum(b for _, b, _ in self.parts)

    def formula(self) -> str:
        return " + ".join(f"{name} {b / GIB:,.2f} GiB ({why})" for name, b, why in self.parts)


def vllm_reserve(
    cfg: ModelConfig,
    gpu: Gpu,
    split: Split,
    chunk_tokens: int | None,
    max_num_seqs: int | None = None,
) -> Reserve:
    """The profile run's peak (dominated by the sampler's fp32 logit rows for
    min(max_num_seqs, max_num_batched_tokens) requests), non-torch memory and the CUDA-graph
    estimate vLLM subtracts since 0.21 (``data/memory.yaml`` reserve_estimate, fitted on logs).
    ``max_num_seqs``: a ``--max-num-seqs`` the plan sets (None: vLLM's default for the GPU)."""
    r = memory_rules().vllm_kv_pool.reserve_estimate
    batched, default_seqs = vllm_batch_defaults(gpu)
    seqs = max_num_seqs or default_seqs
    tokens = chunk_tokens or batched
    rows = min(seqs, tokens)
    vocab = cfg.vocab_size
    act = int(r.activation_logit_copies * rows * vocab * 4)
    non_torch = r.non_torch_gib_tp1 if split.gpus == 1 else r.non_torch_gib_tp_gt1
    return Reserve(
        (
            (
                "activations",
                act,
                f"{r.activation_logit_copies:g} × {rows:,} sampler rows × {vocab:,} vocab × 4 B",
            ),
            ("non-torch", int(non_torch * GIB), "NCCL / all-reduce buffers, workspaces"),
            ("CUDA graphs", int(r.cuda_graph_gib * GIB), "the capture estimate vLLM subtracts"),
        )
    )


def _prefill_capture_sizes(max_bs: int) -> int:
    rules = memory_rules().sglang_static_memory.prefill_graph_capture_sizes
    count = 0
    for start, stop, step in rules.ranges:
        end = max_bs if stop is None else min(stop, max_bs)
        if end >= start:
            count += (end - start) // step + 1
    return count


def sglang_capacity(gpu: Gpu, full_tp: int) -> tuple[int, int]:
    """(chunked_prefill_size, decode CUDA-graph max batch) SGLang picks for this GPU."""
    gib = device_memory(gpu) / GIB
    tiers = memory_rules().sglang_static_memory.capacity_defaults.tiers
    for tier in tiers:
        if tier.below_gib is None or gib < tier.below_gib:
            bs = tier.decode_graph_max_bs_tp_lt4 if full_tp < 4 else tier.decode_graph_max_bs_tp_ge4
            return tier.chunked_prefill_size, bs
    raise AssertionError("data/memory.yaml capacity tiers must end with an open tier")


def sglang_default_fraction(
    gpu: Gpu,
    split: Split,
    *,
    chunk_tokens: int | None,
    mla: bool,
    vision: tuple[int, int] | None = None,
) -> tuple[float, str]:
    """SGLang's own --mem-fraction-static when none is given (memory_hook.py
    handle_gpu_memory_settings), and the formula with the numbers plugged in. ``vision``:
    (layers, hidden) of an encoder that is loaded."""
    rules = memory_rules().sglang_static_memory
    c = rules.mem_fraction_static_default.constants_mb
    gpu_mem = device_memory(gpu) / (1 << 20)
    full_tp = split.tp * split.dp
    chunk_default, decode_bs = sglang_capacity(gpu, full_tp)
    chunk = chunk_tokens or chunk_default
    activation = max(chunk, c.min_activation_tokens)
    graph = decode_bs * c.per_decode_graph_bs
    if split.dp > 1:
        graph += decode_bs * split.dp * c.dp_attention_per_bs_per_dp
        if decode_bs > c.dp_attention_extra_from_bs:
            graph += decode_bs * split.dp * c.dp_attention_extra_above_300_bs
    if mla:
        graph += c.prefill_graph_mla
    else:
        graph += _prefill_capture_sizes(chunk) * c.per_prefill_graph_bs_non_mla
    reserved = c.base + activation * c.per_activation_token
    reserved += full_tp * split.pp / 8 * c.per_tp_pp_over_8 + graph
    if gpu_mem > 60 * 1024:
        reserved = max(reserved, c.floor_above_60gib)
    fraction = round((gpu_mem - reserved) / gpu_mem, 3)
    formula = f"(1 − {reserved:,.0f} MiB reserved / {gpu_mem:,.0f} MiB) = {fraction:g}"
    if vision is not None:
        v = rules.vlm_adjust
        layers, hidden = vision
        ratio = layers * hidden**2 / (v.baseline_layers * v.baseline_hidden**2)
        factor = max(v.min_factor, min(v.max_factor, 1 - v.sensitivity * (ratio - 1)))
        fraction = fraction * v.base * factor
        formula += f" × {v.base:g} × {factor:.3f} (vision encoder) = {fraction:.3f}"
    return max(0.05, min(fraction, 0.99)), formula
