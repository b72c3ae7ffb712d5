"""Check 7, why engines preallocate: a torch.cat KV cache copies O(N^2) bytes.

Appending one token with ``cache = torch.cat([cache, new])`` allocates a new tensor and copies
the whole cache every step: after N steps, row x N(N+1)/2 bytes. A preallocated buffer
written in place copies row x N. The check counts bytes written (deterministic) and times both.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import torch

from engine.decision import Decimal
from engine.measure import kernel_notes as N
from engine.measure.kernels.common import CheckResult, Ctx, exact_row, sync, timing_row

CHECK = "kv_cat_vs_prealloc"


def naive(rows: torch.Tensor) -> tuple[torch.Tensor, int]:
    cache = rows[:0].clone()
    copied = 0
    for t in range(rows.shape[0]):
        cache = torch.cat([cache, rows[t : t + 1]])
        copied += cache.numel() * cache.element_size()
    return cache, copied


def preallocated(rows: torch.Tensor) -> tuple[torch.Tensor, int]:
    cache = torch.empty_like(rows)
    copied = 0
    for t in range(rows.shape[0]):
        cache[t] = rows[t]
        copied += rows[t].numel() * rows[t].element_size()
    return cache, copied


def _timed(
    fn: Callable[[torch.Tensor], tuple[torch.Tensor, int]], rows: torch.Tensor, device: torch.device
) -> tuple[torch.Tensor, int, float]:
    sync(device)
    start = time.perf_counter()
    cache, copied = fn(rows)
    sync(device)
    return cache, copied, time.perf_counter() - start


def run(ctx: Ctx) -> list[CheckResult]:
    d = ctx.work
    steps = ctx.sizes.cat_steps
    g = ctx.generator(10)
    # One token's K and V for one layer: 2 x num_kv_heads x head_dim (or one MLA latent).
    width = 2 * d.num_kv_heads * d.head_dim if d.num_kv_heads else d.mla_latent_dim
    rows = ctx.randn(2 * steps, width, g=g, dtype=ctx.dtype)
    row_bytes = width * rows.element_size()
    out_naive, copied_naive, t_naive = _timed(naive, rows[:steps], ctx.device)
    out_pre, copied_pre, t_pre = _timed(preallocated, rows[:steps], ctx.device)
    _, copied_naive_2n, _ = _timed(naive, rows, ctx.device)
    same = torch.equal(out_naive, out_pre)
    return [
        exact_row(
            CHECK,
            "kvcat_naive_bytes_copied",
            copied_naive,
            row_bytes * steps * (steps + 1) // 2,
            "B",
            N.CAT_NAIVE(steps=steps, row=row_bytes),
        ),
        exact_row(
            CHECK,
            "kvcat_prealloc_bytes_copied",
            copied_pre,
            row_bytes * steps,
            "B",
            N.CAT_PREALLOC(),
        ),
        exact_row(
            CHECK,
            "kvcat_naive_growth_2n_over_n",
            copied_naive_2n / copied_naive,
            (2 * steps) * (2 * steps + 1) / (steps * (steps + 1)),
            "x",
            N.CAT_GROWTH(),
        ),
        CheckResult(
            CHECK,
            "kvcat_contents_equal",
            same,
            float(same),
            1.0,
            "bool",
            N.CAT_EQUAL(),
        ),
        timing_row(ctx, CHECK, "kvcat_naive_ms", t_naive, N.CAT_STEPS(steps=steps)),
        timing_row(
            ctx,
            CHECK,
            "kvcat_prealloc_ms",
            t_pre,
            N.CAT_STEPS_RATIO(steps=steps, ratio=Decimal(t_naive / t_pre, 1)),
        ),
    ]
