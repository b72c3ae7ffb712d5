"""Check 4, DSA: a lightning indexer scores all N cached tokens, top-k picks, attention reads k.

DeepSeek Sparse Attention (DeepSeek-V3.2, GLM-5) keeps the whole MLA cache plus one small
index key per token. Per decode step the indexer computes
``score[n] = sum_h w_h relu(q_h . k_n)`` over every cached token (cheap per token, but O(N)),
``topk`` keeps ``index_topk`` positions, and MLA attention reads only those latents (O(k)).
The check verifies the sparse output equals dense attention masked to the selected tokens,
measures cost against dense attention as N grows, and shows IndexShare: layers sharing one
indexer call it ``ceil(num_layers / share)`` times instead of ``num_layers``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from engine.decision import Decimal, Tokens
from engine.measure import kernel_notes as N
from engine.measure.kernels.common import (
    CheckResult,
    Ctx,
    best_time,
    exact_row,
    info_row,
    rel_err,
    timing_row,
    within_row,
)
from engine.measure.kernels.dims import KernelDims

CHECK = "dsa_indexer"


def indexer_flops(d: KernelDims, n: int) -> float:
    """q_h . k_n for every head and cached token (the ReLU and weighting are O(heads x N))."""
    return 2.0 * n * d.index_num_heads * d.index_head_dim


def attention_flops(d: KernelDims, n: int) -> float:
    """Absorbed MLA over n tokens: scores over (latent + rope), output over the latent."""
    return 2.0 * n * d.num_heads * (2 * d.kv_lora_rank + d.qk_rope_head_dim)


def _select(q_idx: torch.Tensor, w: torch.Tensor, keys: torch.Tensor, k: int) -> torch.Tensor:
    scores = (torch.relu(q_idx @ keys.T) * w[:, None]).sum(0)  # [N]
    return scores.topk(min(k, keys.shape[0])).indices


def _attend(q: torch.Tensor, latent: torch.Tensor, r: int, scale: float) -> torch.Tensor:
    p = torch.softmax((q @ latent.T).float() * scale, dim=-1).to(latent.dtype)
    return p @ latent[:, :r]


@dataclass(frozen=True)
class _Length:
    t_index: float
    t_sparse: float
    t_dense: float
    index_bytes: int
    sparse_bytes: int


def _measure_length(
    ctx: Ctx, n: int, q: torch.Tensor, q_idx: torch.Tensor, w: torch.Tensor, scale: float
) -> _Length:
    d = ctx.work
    g = ctx.generator(5 + n)
    latent = ctx.randn(n, d.mla_latent_dim, g=g, dtype=ctx.dtype)
    keys = ctx.randn(n, d.index_head_dim, g=g, dtype=ctx.dtype)
    k, r, reps = d.index_topk, d.kv_lora_rank, ctx.sizes.repeats
    sel = _select(q_idx, w, keys, k)
    picked = latent[sel]
    return _Length(
        t_index=best_time(lambda: _select(q_idx, w, keys, k), ctx.device, reps),
        t_sparse=best_time(lambda: _attend(q, latent[sel], r, scale), ctx.device, reps),
        t_dense=best_time(lambda: _attend(q, latent, r, scale), ctx.device, reps),
        index_bytes=keys.numel() * keys.element_size(),
        sparse_bytes=picked.numel() * picked.element_size(),
    )


def _sparse_matches_dense(
    ctx: Ctx,
    g: torch.Generator,
    q: torch.Tensor,
    q_idx: torch.Tensor,
    w: torch.Tensor,
    scale: float,
) -> CheckResult:
    """Correctness, fp32, at the longest N: sparse == dense with non-selected scores masked."""
    d = ctx.work
    r, width, k = d.kv_lora_rank, d.mla_latent_dim, d.index_topk
    n_max = ctx.sizes.dsa_lengths[-1]
    latent32 = ctx.randn(n_max, width, g=g)
    keys32 = ctx.randn(n_max, d.index_head_dim, g=g)
    top = _select(q_idx.float(), w.float(), keys32, k)
    sparse = _attend(q.float(), latent32[top], r, scale)
    scores = (q.float() @ latent32.T) * scale
    masked = torch.full_like(scores, -math.inf)
    masked[:, top] = scores[:, top]
    dense_masked = torch.softmax(masked, dim=-1) @ latent32[:, :r]
    err = rel_err(sparse, dense_masked)
    return within_row(
        CHECK,
        "dsa_sparse_matches_masked_dense",
        err,
        1e-5,
        "rel",
        N.DSA_MATCH(k=k, n=Tokens(n_max)),
    )


def _by_length(
    ctx: Ctx, q: torch.Tensor, q_idx: torch.Tensor, w: torch.Tensor, scale: float
) -> list[CheckResult]:
    """Bytes and times per decode step at each context length: the sparse read stays flat in N,
    the indexer's grows with it."""
    lengths = ctx.sizes.dsa_lengths
    k = ctx.work.index_topk
    measured = {n: _measure_length(ctx, n, q, q_idx, w, scale) for n in lengths}
    n_min, n_max = lengths[0], lengths[-1]
    rows = [
        exact_row(
            CHECK,
            "dsa_sparse_bytes_flat_in_n",
            measured[n_max].sparse_bytes / measured[n_min].sparse_bytes,
            1.0,
            "x",
            N.DSA_FLAT(k=k, n_max=Tokens(n_max), n_min=Tokens(n_min)),
        ),
        exact_row(
            CHECK,
            "dsa_indexer_bytes_linear_in_n",
            measured[n_max].index_bytes / measured[n_min].index_bytes,
            n_max / n_min,
            "x",
            N.DSA_LINEAR(),
        ),
    ]
    for n, m in measured.items():
        step = N.DSA_STEP(
            index=N.ms(m.t_index),
            k=k,
            sparse=N.ms(m.t_sparse),
            dense=N.ms(m.t_dense),
            speedup=Decimal(m.t_dense / (m.t_index + m.t_sparse), 2),
        )
        rows.append(timing_row(ctx, CHECK, f"dsa_step_ms_n{n}", m.t_index + m.t_sparse, step))
    return rows


def _flops(real: KernelDims) -> list[CheckResult]:
    """FLOPs per decode step and layer at the model's real dims, for contexts up to 1M."""
    k = real.index_topk
    rows = []
    for n in (8192, 32768, 131072, 2**20):
        cost_dsa = indexer_flops(real, n) + attention_flops(real, min(k, n))
        ratio = attention_flops(real, n) / cost_dsa
        name = f"dsa_flops_dense_over_dsa_{n}"
        rows.append(info_row(CHECK, name, ratio, "x", N.DSA_FLOPS(k=k, n=Tokens(n))))
    one_m = 2**20
    share = indexer_flops(real, one_m) / (indexer_flops(real, one_m) + attention_flops(real, k))
    crossover = attention_flops(real, k) / indexer_flops(real, 1)
    return [
        *rows,
        info_row(CHECK, "dsa_indexer_share_of_flops_1m", share, "fraction", N.DSA_SHARE()),
        info_row(CHECK, "dsa_indexer_crossover_tokens", crossover, "tokens", N.DSA_CROSSOVER()),
    ]


def run(ctx: Ctx) -> list[CheckResult]:
    d = ctx.work
    if not d.has_indexer:
        return [CheckResult(CHECK, "dsa_skipped", True, 0.0, None, "", N.DSA_SKIPPED())]
    scale = (d.qk_nope_head_dim + d.qk_rope_head_dim) ** -0.5
    g = ctx.generator(5)
    q = ctx.randn(d.num_heads, d.mla_latent_dim, g=g, dtype=ctx.dtype)
    q_idx = ctx.randn(d.index_num_heads, d.index_head_dim, g=g, dtype=ctx.dtype)
    w = ctx.randn(d.index_num_heads, g=g, dtype=ctx.dtype).abs()
    rows = [
        _sparse_matches_dense(ctx, g, q, q_idx, w, scale),
        *_by_length(ctx, q, q_idx, w, scale),
        *_flops(ctx.dims),
        *_index_share(ctx, q, q_idx, w, scale),
    ]
    if ctx.on_gpu:
        torch.cuda.empty_cache()
    return rows


def _index_share(
    ctx: Ctx, q: torch.Tensor, q_idx: torch.Tensor, w: torch.Tensor, scale: float
) -> list[CheckResult]:
    """One decode step through every layer, with an indexer per layer and shared."""
    real, d = ctx.dims, ctx.work
    layers, share = real.num_layers, max(real.index_share, 1)
    share_demo = share if share > 1 else 4  # DeepSeek-V3.2 has none: show GLM-5.2's 4
    n = ctx.sizes.dsa_lengths[1] if len(ctx.sizes.dsa_lengths) > 1 else ctx.sizes.dsa_lengths[0]
    g = ctx.generator(6)
    latent = ctx.randn(n, d.mla_latent_dim, g=g, dtype=ctx.dtype)
    keys = ctx.randn(n, d.index_head_dim, g=g, dtype=ctx.dtype)
    calls = {"n": 0}

    def step(every: int) -> None:
        top = None
        for layer in range(layers):
            if layer % every == 0:
                calls["n"] += 1
                top = _select(q_idx, w, keys, d.index_topk)
            assert top is not None
            _attend(q, latent[top], d.kv_lora_rank, scale)

    calls["n"] = 0
    step(1)
    unshared = calls["n"]
    calls["n"] = 0
    step(share_demo)
    shared = calls["n"]
    t_unshared = best_time(lambda: step(1), ctx.device, 1, warmup=0)
    t_shared = best_time(lambda: step(share_demo), ctx.device, 1, warmup=0)
    one_m = 2**20
    per_layer_attn = attention_flops(real, real.index_topk)
    flops_unshared = layers * (indexer_flops(real, one_m) + per_layer_attn)
    flops_shared = math.ceil(layers / share_demo) * indexer_flops(real, one_m) + (
        layers * per_layer_attn
    )
    return [
        exact_row(
            CHECK,
            "indexshare_indexer_calls",
            shared,
            math.ceil(layers / share_demo),
            "calls",
            N.SHARE_CALLS(layers=layers, share=share_demo, unshared=unshared),
        ),
        exact_row(
            CHECK,
            "indexshare_call_reduction",
            unshared / shared,
            layers / math.ceil(layers / share_demo),
            "x",
            N.SHARE_REDUCTION(share=share_demo),
        ),
        timing_row(
            ctx,
            CHECK,
            "indexshare_step_ms",
            t_shared,
            N.SHARE_STEP(
                layers=layers, n=Tokens(n), shared=N.ms(t_shared, 2), unshared=N.ms(t_unshared, 2)
            ),
        ),
        info_row(
            CHECK,
            "indexshare_attention_flops_reduction_1m",
            flops_unshared / flops_shared,
            "x",
            N.SHARE_FLOPS(),
        ),
    ]
