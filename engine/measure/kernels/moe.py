"""Check 6, MoE routing: skewed traffic, per-GPU imbalance, and EPLB's fix.

A router sends each token to its top-k experts; real traffic is skewed (the playbook's
measurement: one expert at 7.2x the mean, another at 0.23x). With expert parallelism each GPU
holds num_experts / ep_size experts and every MoE layer waits for the busiest GPU, so the
step time follows max/mean GPU load. EPLB (DeepSeek's expert-parallel load balancer) adds
redundant replicas of the hottest experts (each replica takes an equal share of its expert's
tokens) and packs the replicas so that every GPU gets equal load; max/mean must fall.
"""

from __future__ import annotations

import heapq

import torch

from engine.decision import Decimal, Tokens
from engine.measure import kernel_notes as N
from engine.measure.kernels.common import (
    CheckResult,
    Ctx,
    best_time,
    exact_row,
    info_row,
    timing_row,
)

CHECK = "moe_routing"
SKEW = 0.26  # router bias -SKEW x log(popularity rank): hottest expert near 7x the mean


def route(ctx: Ctx, tokens: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Top-k routing of ``tokens`` over skewed router logits; returns (indices, expert load)."""
    d = ctx.dims
    g = ctx.generator(9)
    rank = torch.arange(1, d.num_experts + 1, dtype=torch.float32, device=ctx.device)
    bias = -SKEW * torch.log(rank)
    order = torch.randperm(d.num_experts, generator=g, device=ctx.device)
    logits = ctx.randn(tokens, d.num_experts, g=g) + bias[order]
    top = logits.topk(d.experts_per_token, dim=-1).indices
    load = torch.bincount(top.flatten(), minlength=d.num_experts)
    return top, load


def replicate(load: list[int], redundant: int) -> list[int]:
    """Replica count per expert: each extra replica goes to the highest load per replica."""
    replicas = [1] * len(load)
    heap = [(-float(x), e) for e, x in enumerate(load)]
    heapq.heapify(heap)
    for _ in range(redundant):
        _, e = heapq.heappop(heap)
        replicas[e] += 1
        heapq.heappush(heap, (-load[e] / replicas[e], e))
    return replicas


def pack(items: list[float], bins: int, slots: int) -> list[float]:
    """Largest load first onto the least-loaded GPU with a free slot; returns GPU loads."""
    gpu_load = [0.0] * bins
    free = [slots] * bins
    for item in sorted(items, reverse=True):
        gpu = min((i for i in range(bins) if free[i]), key=lambda i: gpu_load[i])
        gpu_load[gpu] += item
        free[gpu] -= 1
    return gpu_load


def run(ctx: Ctx) -> list[CheckResult]:
    d = ctx.dims
    if d.num_experts <= 1 or not d.ep_size:
        return [CheckResult(CHECK, "moe_skipped", True, 0.0, None, "", N.MOE_SKIPPED())]
    tokens = ctx.sizes.moe_tokens
    seconds = best_time(lambda: route(ctx, tokens), ctx.device, ctx.sizes.repeats)
    _, load_t = route(ctx, tokens)
    load = [int(x) for x in load_t.cpu().tolist()]
    experts, gpus, redundant = d.num_experts, d.ep_size, d.num_redundant_experts
    mean_expert = sum(load) / experts
    per_gpu = experts // gpus
    # Before: contiguous placement, experts 0..E/G-1 on GPU 0 and so on (no EPLB).
    before = [sum(load[i * per_gpu : (i + 1) * per_gpu]) for i in range(gpus)]
    mean_gpu = sum(before) / gpus
    # After: replicas of hot experts, then balanced packing into (E + R) / G slots per GPU.
    replicas = replicate(load, redundant)
    items = [load[e] / replicas[e] for e in range(experts) for _ in range(replicas[e])]
    after = pack(items, gpus, (experts + redundant) // gpus)
    imbalance_before = max(before) / mean_gpu
    imbalance_after = max(after) / mean_gpu
    hottest_slot_after = max(items) / (sum(items) / len(items))
    return [
        info_row(
            CHECK,
            "moe_expert_max_over_mean",
            max(load) / mean_expert,
            "x",
            N.MOE_EXPERT(
                tokens=Tokens(tokens),
                k=d.experts_per_token,
                experts=experts,
                coldest=Decimal(min(load) / mean_expert, 2),
            ),
        ),
        info_row(
            CHECK,
            "moe_gpu_max_over_mean_before",
            imbalance_before,
            "x",
            N.MOE_BEFORE(gpus=gpus, per_gpu=per_gpu),
        ),
        CheckResult(
            CHECK,
            "moe_gpu_max_over_mean_after_eplb",
            imbalance_after < imbalance_before,
            imbalance_after,
            imbalance_before,
            "x",
            N.MOE_AFTER(redundant=redundant, slots=(experts + redundant) // gpus),
        ),
        info_row(
            CHECK,
            "moe_hottest_slot_over_mean_after_eplb",
            hottest_slot_after,
            "x",
            N.MOE_HOTTEST(),
        ),
        exact_row(
            CHECK,
            "moe_tokens_conserved",
            round(sum(after)),
            tokens * d.experts_per_token,
            "token-expert pairs",
            N.MOE_CONSERVED(),
        ),
        info_row(
            CHECK,
            "moe_redundant_weight_overhead",
            redundant / experts,
            "fraction",
            N.MOE_OVERHEAD(),
        ),
        timing_row(ctx, CHECK, "moe_route_ms", seconds, N.MOE_ROUTE()),
    ]
