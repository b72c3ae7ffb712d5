"""Check 3, decode bandwidth: one decode step reads the whole KV cache once.

Decode is memory-bound: per step each request's query attends over every cached token, so a
step costs about (KV bytes) / (memory bandwidth). The check times one decode step of
attention over ``concurrency`` requests x ``context`` tokens, for GQA (K and V per KV head)
and for absorbed MLA (one latent per token), and compares the achieved GB/s with a measured
device copy (read + write) and with the catalog bandwidth when given. The full-model step
time is the per-layer time x num_layers, against the roofline KV bytes / copy bandwidth.
"""

from __future__ import annotations

import torch

from engine.decision import Name, Percent, Tokens
from engine.measure import kernel_notes as N
from engine.measure.kernels.common import (
    CheckResult,
    Ctx,
    best_time,
    exact_row,
    info_row,
    target_row,
    timing_row,
)
from engine.measure.reading import as_printed

CHECK = "decode_bandwidth"
TARGET_FRACTION_OF_COPY = 0.85


def copy_bandwidth(ctx: Ctx) -> float:
    """Bytes moved per second by a plain device copy (read + write), in GB/s."""
    n = ctx.sizes.copy_bytes // 4
    src = torch.ones(n, dtype=torch.float32, device=ctx.device)
    dst = torch.empty_like(src)
    seconds = best_time(lambda: dst.copy_(src), ctx.device, ctx.sizes.repeats)
    moved = 2 * src.numel() * src.element_size()
    return moved / seconds / 1e9


def gqa_step(ctx: Ctx, batch: int, context: int) -> tuple[float, int, int]:
    """(seconds, KV bytes read, formula bytes) for one GQA decode step of one layer."""
    d = ctx.work
    g = ctx.generator(3)
    kv, group, hd = d.num_kv_heads, d.num_heads // d.num_kv_heads, d.head_dim
    q = ctx.randn(batch, kv, group, hd, g=g, dtype=ctx.dtype)
    k = ctx.randn(batch, kv, context, hd, g=g, dtype=ctx.dtype)
    v = ctx.randn(batch, kv, context, hd, g=g, dtype=ctx.dtype)
    attend = torch.nn.functional.scaled_dot_product_attention
    seconds = best_time(lambda: attend(q, k, v), ctx.device, ctx.sizes.repeats)
    read = k.numel() * k.element_size() + v.numel() * v.element_size()
    formula = batch * context * 2 * kv * hd * k.element_size()
    return seconds, read, formula


def mla_step(ctx: Ctx, batch: int, context: int) -> tuple[float, int, int]:
    """(seconds, latent bytes read, formula bytes) for one absorbed-MLA decode step."""
    d = ctx.work
    g = ctx.generator(4)
    width, r = d.mla_latent_dim, d.kv_lora_rank
    q = ctx.randn(batch, d.num_heads, width, g=g, dtype=ctx.dtype)
    cache = ctx.randn(batch, context, width, g=g, dtype=ctx.dtype)
    scale = (d.qk_nope_head_dim + d.qk_rope_head_dim) ** -0.5

    def step() -> torch.Tensor:
        p = torch.softmax(torch.bmm(q, cache.transpose(1, 2)) * scale, dim=-1)
        return torch.bmm(p, cache[..., :r])

    seconds = best_time(step, ctx.device, ctx.sizes.repeats)
    read = cache.numel() * cache.element_size()
    formula = batch * context * width * cache.element_size()
    return seconds, read, formula


def run(ctx: Ctx) -> list[CheckResult]:
    batch, context = ctx.sizes.concurrency, ctx.sizes.context
    dims = ctx.dims
    copy_gbps = copy_bandwidth(ctx)
    rows: list[CheckResult] = []
    catalog = ctx.catalog_gbps
    rows.append(
        CheckResult(
            CHECK,
            "copy_bandwidth_gbps",
            copy_gbps > 0,
            copy_gbps,
            catalog,
            "GB/s",
            N.COPY_CATALOG(share=Percent(copy_gbps / catalog), catalog=as_printed(catalog))
            if catalog
            else N.COPY(),
        )
    )
    target = TARGET_FRACTION_OF_COPY * copy_gbps
    per_layer: dict[str, tuple[float, int]] = {}
    families = (["gqa"] if dims.num_kv_heads else []) + (["mla"] if dims.has_mla else [])
    for family in families:
        seconds, read, formula = (gqa_step if family == "gqa" else mla_step)(ctx, batch, context)
        gbps = read / seconds / 1e9
        per_layer[family] = (seconds, read)
        rows.append(
            exact_row(
                CHECK,
                f"{family}_decode_kv_bytes",
                read,
                formula,
                "B",
                N.DECODE_BYTES(batch=batch, context=Tokens(context)),
            )
        )
        rows.append(
            target_row(
                ctx,
                CHECK,
                f"{family}_decode_gbps",
                gbps,
                target,
                "GB/s",
                N.DECODE_GBPS_CATALOG(
                    copy=Percent(gbps / copy_gbps), catalog=Percent(gbps / catalog)
                )
                if catalog
                else N.DECODE_GBPS(copy=Percent(gbps / copy_gbps)),
            )
        )
    # The model's own attention decides the full-step estimate.
    family = "mla" if dims.has_mla else "gqa"
    if family in per_layer:
        seconds, read = per_layer[family]
        layers = dims.num_layers
        step = seconds * layers
        roofline = read * layers / (copy_gbps * 1e9)
        rows.append(
            timing_row(
                ctx,
                CHECK,
                "decode_step_ms_at_concurrency",
                step,
                N.DECODE_STEP(
                    family=Name(family),
                    layers=layers,
                    batch=batch,
                    context=Tokens(context),
                    roofline=N.ms(roofline),
                ),
            )
        )
        rows.append(
            info_row(
                CHECK,
                "decode_step_roofline_ms",
                roofline * 1e3,
                "ms",
                N.DECODE_ROOFLINE(),
            )
        )
    if ctx.on_gpu:
        torch.cuda.empty_cache()
    return rows
