"""Check 1, paged KV layout: allocate a block pool per layer group; bytes must equal the formula.

A paged engine does not allocate "bytes per token": it allocates, per layer, ``num_blocks``
pages of ``block_size x bytes_per_token_per_layer`` (vLLM ``KVCacheTensor`` per layer,
``page_size_bytes = block_size x num_kv_heads x (K+V) x dtype``). Holding ``tokens`` needs
``cdiv(tokens, block_size)`` blocks per group. The check allocates exactly that with
``torch.empty(uint8)`` and compares the allocated bytes with
``num_layers x cdiv(tokens, block_size) x block_size x bytes_per_token_per_layer``.
"""

from __future__ import annotations

import math
import time

import torch

from engine.measure.kernels.common import CheckResult, Ctx, exact_row, info_row, sync, timing_row
from engine.measure.kernels.dims import KernelDims, LayerGroup

CHECK = "paged_kv_layout"


def default_groups(dims: KernelDims) -> list[LayerGroup]:
    """The model's layer groups with the engines' usual block sizes.

    MLA pages hold 64 tokens (FlashMLA's block); the DSA indexer keys share the MLA block
    table; standard attention uses vLLM's default 16.
    """
    if dims.has_mla:
        groups: list[LayerGroup] = [
            ("mla_latent", dims.num_layers, dims.mla_bytes_per_token_per_layer, 64)
        ]
        if dims.has_indexer:
            groups.append(
                ("dsa_indexer_keys", dims.num_layers, dims.indexer_bytes_per_token_per_layer, 64)
            )
        return groups
    return [("full_attention", dims.num_attention_layers, dims.gqa_bytes_per_token_per_layer, 16)]


def hybrid_alignment(ctx: Ctx) -> list[CheckResult]:
    """vLLM's hybrid page alignment (platforms/interface.py ``_align_hybrid_block_size``).

    The pool hands out equal pages, so a GDN layer's per-sequence state (one page) and an
    attention layer's block must be the same size: vLLM grows the attention block to
    ``16 x cdiv(state, 16 x attention bytes per token)`` tokens and pads the state page up.
    """
    d = ctx.dims
    elt = {1: torch.uint8, 2: torch.bfloat16, 4: torch.float32}[d.kv_dtype_bytes]
    conv_shape, ssm_shape = d.gdn_state_shapes
    state = [
        torch.empty(conv_shape, dtype=elt, device=ctx.device),
        torch.empty(ssm_shape, dtype=elt, device=ctx.device),
    ]
    state_bytes = sum(t.numel() * t.element_size() for t in state)
    conv_dim, (nv, hv, hk) = conv_shape[1], ssm_shape
    expected_state = (conv_shape[0] * conv_dim + nv * hv * hk) * d.kv_dtype_bytes
    attn_1tok = d.gqa_bytes_per_token_per_layer
    align = 16  # the attention backend's smallest kernel block (FLASH_ATTN: multiple of 16)
    block = align * math.ceil(state_bytes / (align * attn_1tok))
    page = torch.empty((block, attn_1tok), dtype=torch.uint8, device=ctx.device)
    page_bytes = page.numel()
    rows: list[CheckResult] = []
    if ctx.hybrid_block is not None:
        rows.append(
            exact_row(
                CHECK,
                "hybrid_block_matches_engine",
                block,
                ctx.hybrid_block,
                "tokens",
                "block from the allocated state and attention pages vs the engine's alignment",
            )
        )
    rows += [
        exact_row(
            CHECK,
            "gdn_state_bytes_per_layer",
            state_bytes,
            expected_state,
            "B",
            f"conv {conv_shape} + SSM {ssm_shape} per sequence, {d.kv_dtype_bytes}-byte",
        ),
        info_row(
            CHECK,
            "hybrid_attention_block_tokens",
            block,
            "tokens",
            f"attention page {attn_1tok} B/token x {block} tokens = {page_bytes:,} B >= "
            f"state page {state_bytes:,} B",
        ),
        info_row(
            CHECK,
            "hybrid_state_page_padding",
            page_bytes / state_bytes - 1,
            "fraction",
            "state page padded up to the attention page; prompts shorter than one block "
            "get no prefix-cache hit",
        ),
    ]
    return rows


def run(ctx: Ctx, groups: list[LayerGroup] | None = None) -> list[CheckResult]:
    if groups is None:
        groups = list(ctx.layer_groups) if ctx.layer_groups else default_groups(ctx.dims)
    tokens = ctx.sizes.paged_tokens
    rows: list[CheckResult] = []
    total_bytes = 0
    start = time.perf_counter()
    for name, num_layers, bytes_per_token, block_size in groups:
        blocks = math.ceil(tokens / block_size)
        page = block_size * bytes_per_token
        # One tensor per layer, as vLLM allocates a KVCacheTensor per layer.
        pool = [
            torch.empty((blocks, page), dtype=torch.uint8, device=ctx.device)
            for _ in range(num_layers)
        ]
        allocated = sum(t.numel() * t.element_size() for t in pool)
        expected = num_layers * blocks * block_size * bytes_per_token
        rows.append(
            exact_row(
                CHECK,
                f"paged_{name}_bytes",
                allocated,
                expected,
                "B",
                f"{num_layers} layers x {blocks} blocks x {block_size} tokens x "
                f"{bytes_per_token} B/token/layer for {tokens:,} tokens",
            )
        )
        total_bytes += allocated
        del pool
    sync(ctx.device)
    elapsed = time.perf_counter() - start
    per_token = sum(layers * bpt for _, layers, bpt, _ in groups)
    rounded = max(math.ceil(tokens / bs) * bs for *_, bs in groups) if groups else tokens
    rows.append(
        CheckResult(
            CHECK,
            "paged_bytes_per_token",
            total_bytes / tokens >= per_token
            and total_bytes / tokens <= per_token * rounded / tokens,
            total_bytes / tokens,
            float(per_token),
            "B/token",
            "sum over groups of num_layers x bytes/token/layer; above it only by block rounding",
        )
    )
    rows.append(timing_row(ctx, CHECK, "paged_alloc_ms", elapsed, "torch.empty, untouched pages"))
    if ctx.dims.num_linear_layers and ctx.dims.num_kv_heads:
        rows.extend(hybrid_alignment(ctx))
    if ctx.on_gpu:
        torch.cuda.empty_cache()
    return rows
