"""Check 1, paged KV layout: allocate a block pool per layer group; bytes must equal the engine's.

A paged engine does not allocate "bytes per token": it allocates, per layer, ``num_blocks``
pages of ``block_size x bytes_per_token_per_layer`` (vLLM ``KVCacheTensor`` per layer,
``page_size_bytes = block_size x num_kv_heads x (K+V) x dtype``). Holding ``tokens`` needs
``cdiv(tokens, block_size)`` blocks per group. The check allocates exactly that with
``torch.empty(uint8)`` for the groups, block size and bytes the engine's sizing gives
(``EngineKv``), and compares the allocated bytes with
``num_layers x cdiv(tokens, block_size) x block_size x bytes_per_token_per_layer``. For a hybrid
model it also allocates one layer's recurrent state at the kernel's own shapes and checks it
against the engine's state bytes and hybrid block.
"""

from __future__ import annotations

import math
import time

import torch

from engine.decision import Name, Tokens
from engine.measure import kernel_notes as N
from engine.measure.kernels.common import CheckResult, Ctx, exact_row, info_row, sync, timing_row
from engine.measure.kernels.dims import EngineKv, LayerGroup

CHECK = "paged_kv_layout"
_ELEMENT = {1: torch.uint8, 2: torch.bfloat16, 4: torch.float32}


def hybrid_alignment(ctx: Ctx, kv: EngineKv) -> list[CheckResult]:
    """vLLM's hybrid page alignment (platforms/interface.py ``_align_hybrid_block_size``).

    The pool hands out equal pages, so a GDN layer's per-sequence state (one page) and an
    attention layer's block must be the same size: vLLM grows the attention block to
    ``align x cdiv(state, align x attention bytes per token)`` tokens and pads the state page
    up. The state is allocated at the kernel's shapes in the engine's state dtypes; the block
    follows from the allocated bytes and is compared with the engine's.
    """
    assert kv.state_bytes is not None and kv.hybrid_block is not None
    assert kv.hybrid_align is not None and kv.attention_bytes_per_token is not None
    d = ctx.dims
    conv_shape, ssm_shape = d.gdn_state_shapes
    conv_bytes, ssm_bytes = kv.state_dtype_bytes or (d.kv_dtype_bytes, d.kv_dtype_bytes)
    state = [
        torch.empty(conv_shape, dtype=_ELEMENT[conv_bytes], device=ctx.device),
        torch.empty(ssm_shape, dtype=_ELEMENT[ssm_bytes], device=ctx.device),
    ]
    state_bytes = sum(t.numel() * t.element_size() for t in state)
    attn_1tok, align = kv.attention_bytes_per_token, kv.hybrid_align
    block = align * math.ceil(state_bytes / (align * attn_1tok))
    page = torch.empty((block, attn_1tok), dtype=torch.uint8, device=ctx.device)
    page_bytes = page.numel()
    return [
        exact_row(
            CHECK,
            "gdn_state_bytes_per_layer",
            state_bytes,
            kv.state_bytes,
            "B",
            N.GDN_STATE(
                conv_shape=Name(str(conv_shape)),
                conv_bytes=conv_bytes,
                ssm_shape=Name(str(ssm_shape)),
                ssm_bytes=ssm_bytes,
            ),
        ),
        exact_row(
            CHECK,
            "hybrid_block_matches_engine",
            block,
            kv.hybrid_block,
            "tokens",
            N.HYBRID_BLOCK(),
        ),
        info_row(
            CHECK,
            "hybrid_attention_block_tokens",
            block,
            "tokens",
            N.HYBRID_ATTENTION_BLOCK(
                attn=attn_1tok, block=block, page=page_bytes, state=state_bytes
            ),
        ),
        info_row(
            CHECK,
            "hybrid_state_page_padding",
            page_bytes / state_bytes - 1,
            "fraction",
            N.HYBRID_PADDING(),
        ),
    ]


def run(ctx: Ctx, groups: list[LayerGroup] | None = None) -> list[CheckResult]:
    kv = ctx.kv
    if groups is None:
        if kv is None:
            return [
                CheckResult(
                    CHECK,
                    "paged_skipped",
                    True,
                    0.0,
                    None,
                    "",
                    N.PAGED_SKIPPED(),
                )
            ]
        groups = list(kv.groups)
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
                N.PAGED_GROUP(
                    layers=num_layers,
                    blocks=blocks,
                    block=block_size,
                    bytes=bytes_per_token,
                    tokens=Tokens(tokens),
                ),
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
            N.PAGED_PER_TOKEN(),
        )
    )
    rows.append(timing_row(ctx, CHECK, "paged_alloc_ms", elapsed, N.PAGED_ALLOC()))
    if (
        kv is not None
        and ctx.dims.num_linear_layers
        and kv.hybrid_block is not None
        and kv.state_bytes is not None
        and kv.attention_bytes_per_token is not None
    ):
        rows.extend(hybrid_alignment(ctx, kv))
    if ctx.on_gpu:
        torch.cuda.empty_cache()
    return rows
