"""Check 5, prefix caching: attention K/V are a function of the prefix; GDN state is not bitwise.

Standard attention is causal: a token's K and V depend only on the tokens before it, so the
K/V of a prefix are the same whether the prefix is computed alone or inside a longer
sequence. With fixed-size tiles (every GEMM the same shape whatever the sequence length, as
batch-invariant kernels do) they are bit-identical: ``torch.equal`` holds, and a cached block
can stand in for a recomputed one. The plain dense path, where BLAS picks its blocking from
the sequence length, is reported too: it may differ in the last bits.

A Gated DeltaNet layer carries a d_v x d_k state updated token by token
(``S_t = a_t S_{t-1} + b_t (v_t - a_t S_{t-1} k_t) k_t^T``). Kernels compute it in chunks (a
triangular solve per chunk, the WY/UT form), which is the same mathematics in a different
summation order: the state restored from a prefix cache and the one computed sequentially
agree closely but are not bit-identical.
"""

from __future__ import annotations

import math

import torch

from engine.measure import kernel_notes as N
from engine.measure.kernels.common import CheckResult, Ctx, best_time, info_row, timing_row

CHECK = "prefix_caching"
LAYERS = 2


def _weights(ctx: Ctx, dim: int) -> list[list[torch.Tensor]]:
    g = ctx.generator(7)
    return [
        [ctx.randn(dim, dim, g=g, scale=dim**-0.5) for _ in range(4)]
        + [
            ctx.randn(dim, 4 * dim, g=g, scale=dim**-0.5),
            ctx.randn(4 * dim, dim, g=g, scale=(4 * dim) ** -0.5),
        ]
        for _ in range(LAYERS)
    ]


def _tiled_layer(
    x: torch.Tensor, w: list[torch.Tensor], tile: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One causal attention + MLP layer in which every GEMM has the same tile shape.

    Rows are padded to whole tiles and each tile is its own GEMM (not one batched call whose
    batch count would change with the sequence length and could change the library's kernel).
    """
    wq, wk, wv, wo, w1, w2 = w
    n, dim = x.shape
    tiles = math.ceil(n / tile)
    padded = torch.zeros(tiles * tile, dim, dtype=x.dtype, device=x.device)
    padded[:n] = x
    xt = list(padded.view(tiles, tile, dim).unbind(0))
    q = [t @ wq for t in xt]
    k = [t @ wk for t in xt]
    v = [t @ wv for t in xt]
    scale = dim**-0.5
    causal = torch.ones(tile, tile, dtype=torch.bool, device=x.device).tril()
    out = []
    for i in range(tiles):
        # Online softmax over key tiles 0..i, always in the same order and shapes.
        m = torch.full((tile, 1), -math.inf, dtype=x.dtype, device=x.device)
        s_sum = torch.zeros(tile, 1, dtype=x.dtype, device=x.device)
        acc = torch.zeros(tile, dim, dtype=x.dtype, device=x.device)
        for j in range(i + 1):
            s = (q[i] @ k[j].T) * scale
            if j == i:
                s = s.masked_fill(~causal, -math.inf)
            m_new = torch.maximum(m, s.max(dim=-1, keepdim=True).values)
            p = torch.exp(s - m_new)
            correction = torch.exp(m - m_new)
            s_sum = s_sum * correction + p.sum(dim=-1, keepdim=True)
            acc = acc * correction + p @ v[j]
            m = m_new
        h = xt[i] + (acc / s_sum) @ wo
        out.append(h + torch.relu(h @ w1) @ w2)
    return torch.cat(out)[:n], torch.cat(k)[:n], torch.cat(v)[:n]


def _dense_layer(
    x: torch.Tensor, w: list[torch.Tensor]
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The same layer as one sequence-long GEMM per projection and a masked softmax."""
    wq, wk, wv, wo, w1, w2 = w
    q, k, v = x @ wq, x @ wk, x @ wv
    n, dim = x.shape
    s = (q @ k.T) * dim**-0.5
    s = s.masked_fill(torch.ones(n, n, dtype=torch.bool, device=x.device).triu(1), -math.inf)
    h = x + (torch.softmax(s, dim=-1) @ v) @ wo
    return h + torch.relu(h @ w1) @ w2, k, v


def _kv_all_layers(
    x: torch.Tensor, weights: list[list[torch.Tensor]], tile: int | None
) -> list[tuple[torch.Tensor, torch.Tensor]]:
    kv = []
    h = x
    for w in weights:
        h, k, v = _tiled_layer(h, w, tile) if tile else _dense_layer(h, w)
        kv.append((k, v))
    return kv


def _bit_identical(
    prefix_kv: list[tuple[torch.Tensor, torch.Tensor]],
    full_kv: list[tuple[torch.Tensor, torch.Tensor]],
    n: int,
) -> bool:
    return all(
        torch.equal(kp, kf[:n]) and torch.equal(vp, vf[:n])
        for (kp, vp), (kf, vf) in zip(prefix_kv, full_kv, strict=True)
    )


def gdn_sequential(
    k: torch.Tensor, v: torch.Tensor, a: torch.Tensor, b: torch.Tensor
) -> torch.Tensor:
    """Gated delta rule, one token at a time: the reference recurrence."""
    state = torch.zeros(v.shape[1], k.shape[1], dtype=k.dtype, device=k.device)
    for t in range(k.shape[0]):
        state = a[t] * state + b[t] * torch.outer(v[t] - a[t] * (state @ k[t]), k[t])
    return state


def gdn_chunked(
    k: torch.Tensor, v: torch.Tensor, a: torch.Tensor, b: torch.Tensor, chunk: int
) -> torch.Tensor:
    """Gated delta rule by chunks: per chunk, solve (I + L) W = b (v - g K S0^T) for the
    written deltas W (L strictly lower: b_i g_i/g_j k_i.k_j), then S = g_C S0 + W^T diag(g_C/g) K.
    """
    state = torch.zeros(v.shape[1], k.shape[1], dtype=k.dtype, device=k.device)
    for start in range(0, k.shape[0], chunk):
        kc, vc = k[start : start + chunk], v[start : start + chunk]
        ac, bc = a[start : start + chunk], b[start : start + chunk]
        gamma = torch.cumprod(ac, 0)
        n = kc.shape[0]
        lower = (bc[:, None] * (gamma[:, None] / gamma[None, :]) * (kc @ kc.T)).tril(-1)
        rhs = bc[:, None] * (vc - gamma[:, None] * (kc @ state.T))
        eye = torch.eye(n, dtype=k.dtype, device=k.device)
        deltas = torch.linalg.solve_triangular(eye + lower, rhs, upper=False, unitriangular=True)
        state = gamma[-1] * state + (deltas * (gamma[-1] / gamma)[:, None]).T @ kc
    return state


def run(ctx: Ctx) -> list[CheckResult]:
    sizes = ctx.sizes
    dim, tile = sizes.prefix_dim, sizes.tile
    n_prefix = sizes.prefix_tokens - sizes.prefix_tokens % tile  # cached prefixes are whole blocks
    n_total = n_prefix + sizes.suffix_tokens
    weights = _weights(ctx, dim)
    g = ctx.generator(8)
    x = ctx.randn(n_total, dim, g=g)

    tiled_same = _bit_identical(
        _kv_all_layers(x[:n_prefix], weights, tile), _kv_all_layers(x, weights, tile), n_prefix
    )
    dense_same = _bit_identical(
        _kv_all_layers(x[:n_prefix], weights, None), _kv_all_layers(x, weights, None), n_prefix
    )

    rows = [
        CheckResult(
            CHECK,
            "attention_prefix_kv_bit_identical",
            tiled_same,
            float(tiled_same),
            1.0,
            "bool",
            N.PREFIX_TILED(layers=LAYERS, dim=dim, prefix=n_prefix, tile=tile, total=n_total),
        ),
        info_row(
            CHECK,
            "attention_prefix_kv_dense_bit_identical",
            float(dense_same),
            "bool",
            N.PREFIX_DENSE(),
        ),
    ]
    if not ctx.work.num_linear_layers:
        return [
            *rows,
            CheckResult(CHECK, "gdn_skipped", True, 0.0, None, "", N.GDN_SKIPPED()),
        ]
    return rows + _gdn_rows(ctx, g)


def _gdn_rows(ctx: Ctx, g: torch.Generator) -> list[CheckResult]:
    """A GDN layer's state restored from a prefix vs recomputed: close, not bitwise."""
    sizes = ctx.sizes
    d = ctx.work
    dk, dv = d.linear_key_head_dim, d.linear_value_head_dim
    tokens, chunk = sizes.gdn_tokens, sizes.gdn_chunk
    k = torch.nn.functional.normalize(ctx.randn(tokens, dk, g=g), dim=-1)  # GDN L2-normalizes
    v = ctx.randn(tokens, dv, g=g)
    a = torch.sigmoid(ctx.randn(tokens, g=g) + 4.0)  # decay gate, ~0.98
    b = torch.sigmoid(ctx.randn(tokens, g=g))  # write strength
    tf32 = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        seq = gdn_sequential(k, v, a, b)
        chunked = gdn_chunked(k, v, a, b, chunk)
        t_seq = best_time(lambda: gdn_sequential(k, v, a, b), ctx.device, 1, warmup=0)
        t_chunk = best_time(lambda: gdn_chunked(k, v, a, b, chunk), ctx.device, 1, warmup=0)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = tf32
    gdn_same = torch.equal(seq, chunked)
    diff = (seq.double() - chunked.double()).abs().max().item() / seq.double().abs().max().item()
    tolerance = 1e-4
    return [
        CheckResult(
            CHECK,
            "gdn_state_bit_identical",
            not gdn_same,
            float(gdn_same),
            0.0,
            "bool",
            N.GDN_BITWISE(tokens=tokens, chunk=chunk, dk=dk, dv=dv),
        ),
        CheckResult(
            CHECK,
            "gdn_state_max_rel_diff",
            0 < diff <= tolerance,
            diff,
            tolerance,
            "rel",
            N.GDN_CLOSE(),
        ),
        timing_row(
            ctx,
            CHECK,
            "gdn_chunked_ms",
            t_chunk,
            N.GDN_TIME(chunked=N.ms(t_chunk, 2), sequential=N.ms(t_seq, 2)),
        ),
    ]
