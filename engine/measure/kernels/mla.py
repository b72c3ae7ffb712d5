"""Check 2, MLA: naive decompression vs weight absorption, with decoupled RoPE.

The cache holds one latent ``c`` (kv_lora_rank) and one shared RoPE key (qk_rope_head_dim)
per token. Naive decode decompresses every cached token into per-head keys
``k_nope = W_UK c`` and values ``v = W_UV c`` and runs ordinary attention over them.
Absorption folds ``W_UK`` into the query (``q_nope^T W_UK c = (W_UK^T q_nope)^T c``) and ``W_UV``
into the output (``sum p v = W_UV sum p c``), so attention runs directly on the latent: the
cache is read once and nothing per head is materialized. Both give the same output; the bytes
and the time differ. The RoPE part cannot be absorbed (rotation depends on position), which is
why it is stored separately and concatenated to the latent.
"""

from __future__ import annotations

import torch

from engine.decision import Tokens
from engine.measure import kernel_notes as N
from engine.measure.kernels.common import (
    CheckResult,
    Ctx,
    best_time,
    exact_row,
    rel_err,
    target_row,
    timing_row,
    within_row,
)

CHECK = "mla_absorption"


def _tensors(ctx: Ctx, dtype: torch.dtype) -> dict[str, torch.Tensor]:
    d = ctx.work
    b, t, h = ctx.sizes.mla_batch, ctx.sizes.mla_tokens, d.num_heads
    r, rope, nope, dv = d.kv_lora_rank, d.qk_rope_head_dim, d.qk_nope_head_dim, d.v_head_dim
    g = ctx.generator(2)
    return {
        "cache": ctx.randn(b, t, r + rope, g=g, dtype=dtype),  # [latent c | rope key]
        "w_uk": ctx.randn(h, nope, r, g=g, dtype=dtype, scale=r**-0.5),
        "w_uv": ctx.randn(h, dv, r, g=g, dtype=dtype, scale=r**-0.5),
        "q_nope": ctx.randn(b, h, nope, g=g, dtype=dtype),
        "q_rope": ctx.randn(b, h, rope, g=g, dtype=dtype),
    }


def naive(x: dict[str, torch.Tensor], r: int) -> tuple[torch.Tensor, int]:
    """Decompress K and V for every cached token, then standard attention per head."""
    c, k_rope = x["cache"][..., :r], x["cache"][..., r:]
    k_nope = torch.einsum("btr,hnr->bhtn", c, x["w_uk"])
    v = torch.einsum("btr,hvr->bhtv", c, x["w_uv"])
    h = k_nope.shape[1]
    k = torch.cat([k_nope, k_rope.unsqueeze(1).expand(-1, h, -1, -1)], dim=-1)
    q = torch.cat([x["q_nope"], x["q_rope"]], dim=-1).unsqueeze(2)  # [b, h, 1, nope+rope]
    out = torch.nn.functional.scaled_dot_product_attention(q, k, v).squeeze(2)
    # HBM traffic beyond the latent: K and V are written once and read once.
    materialized = k.numel() * k.element_size() + v.numel() * v.element_size()
    return out, materialized


def absorbed(x: dict[str, torch.Tensor], r: int) -> torch.Tensor:
    """Fold W_UK into q and W_UV into the output; attend over the latent directly."""
    nope, rope = x["q_nope"].shape[-1], x["q_rope"].shape[-1]
    q_lat = torch.einsum("bhn,hnr->bhr", x["q_nope"], x["w_uk"])
    q = torch.cat([q_lat, x["q_rope"]], dim=-1)  # [b, h, r + rope]
    cache = x["cache"]
    # Same softmax scale as the naive path: the per-head key there is nope + rope wide.
    scores = torch.bmm(q, cache.transpose(1, 2)) * (nope + rope) ** -0.5
    p = torch.softmax(scores.float(), dim=-1).to(cache.dtype)
    o_lat = torch.bmm(p, cache[..., :r])  # [b, h, r]
    return torch.einsum("bhr,hvr->bhv", o_lat, x["w_uv"])


def _time_both(ctx: Ctx, r: int) -> tuple[float, float]:
    x = _tensors(ctx, ctx.dtype)
    t_naive = best_time(lambda: naive(x, r), ctx.device, ctx.sizes.repeats)
    t_abs = best_time(lambda: absorbed(x, r), ctx.device, ctx.sizes.repeats)
    return t_naive, t_abs


def run(ctx: Ctx) -> list[CheckResult]:
    d = ctx.work
    if not d.has_mla:
        return [CheckResult(CHECK, "mla_skipped", True, 0.0, None, "", N.MLA_SKIPPED())]
    r = d.kv_lora_rank
    # Correctness in fp32 (on GPU with TF32 off) so that agreement means the algebra is right.
    x32 = _tensors(ctx, torch.float32)
    tf32 = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        out_naive, materialized = naive(x32, r)
        out_abs = absorbed(x32, r)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = tf32
    err = rel_err(out_abs, out_naive)
    del x32, out_naive, out_abs

    b, t, h = ctx.sizes.mla_batch, ctx.sizes.mla_tokens, d.num_heads
    elt = 4
    latent_bytes = b * t * d.mla_latent_dim * elt
    expected_materialized = b * h * t * (d.qk_nope_head_dim + d.qk_rope_head_dim + d.v_head_dim)
    expected_ratio = 1 + 2 * expected_materialized * elt / latent_bytes
    measured_ratio = (latent_bytes + 2 * materialized) / latent_bytes

    t_naive, t_abs = _time_both(ctx, r)
    if ctx.on_gpu:
        torch.cuda.empty_cache()
    dims_note = N.MLA_DIMS(
        heads=h,
        rank=r,
        rope=d.qk_rope_head_dim,
        nope=d.qk_nope_head_dim,
        v=d.v_head_dim,
        batch=b,
        tokens=Tokens(t),
    )
    return [
        within_row(
            CHECK,
            "mla_absorbed_matches_naive",
            err,
            1e-4,
            "rel",
            N.MLA_MATCH(dims=dims_note),
        ),
        exact_row(
            CHECK,
            "mla_bytes_naive_over_absorbed",
            round(measured_ratio, 6),
            round(expected_ratio, 6),
            "x",
            N.MLA_BYTES(),
        ),
        timing_row(ctx, CHECK, "mla_naive_ms", t_naive, dims_note),
        timing_row(ctx, CHECK, "mla_absorbed_ms", t_abs, dims_note),
        target_row(
            ctx,
            CHECK,
            "mla_absorbed_speedup",
            t_naive / t_abs,
            3.0,
            "x",
            N.MLA_SPEEDUP(),
        ),
    ]
