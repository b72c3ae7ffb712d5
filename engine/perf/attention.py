"""What attention reads and computes per request, per layer group, as the cache spec says.

The KV groups are the engine's own (``engine.kv.sizing``: bytes per TP rank). Decode reads each
request's cache once per step at its current context: full attention every token, a sliding or
chunked window at most its window, MLA its latent, DSA's MLA only the ``index_topk`` tokens the
indexer picks while the indexer scores every token, DeepSeek-V4's compressed entries, and a
linear mixer its constant state (read and written). Decode runs MLA absorbed (the query meets
the latent: (kv_lora_rank + rope) for scores, kv_lora_rank for values, per query head);
prefill runs it as plain attention over heads of (qk_nope + rope) keys and v_head_dim values.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from engine.kv.sizing import KvSizing, LayerGroup
from engine.model.architecture import Architecture
from engine.model.cache_specs import (
    CompressedSpec,
    FullAttentionSpec,
    IndexerSpec,
    MambaSpec,
    MLAAttentionSpec,
)
from engine.model.config import ModelConfig


@dataclass(frozen=True)
class GroupCost:
    """One layer group for one request: bytes read, FLOPs per query token, layers."""

    kind: str
    layers: int
    bytes: float
    flops_per_query: float


def _attended_sum(positions: float, window: int | None) -> float:
    """Sum over positions 1..x of the tokens each attends to: min(position, window)."""
    if positions <= 0:
        return 0.0
    w = positions if window is None else min(window, positions)
    return w * (w + 1) / 2 + (positions - w) * w


def mean_attended(prompt: int, window: int | None, past: int = 0) -> float:
    """Mean number of earlier tokens (itself included) a prompt token attends to, causally,
    with at most ``window`` of them, for the ``prompt`` tokens after ``past`` tokens already
    cached: (S(past + n) − S(past)) / n, S(x) = w(w+1)/2 + (x − w)·w, w = min(window, x)."""
    if prompt <= 0:
        return 0.0
    return (_attended_sum(past + prompt, window) - _attended_sum(past, window)) / prompt


def _q_heads(cfg: ModelConfig, arch: Architecture, g: LayerGroup, tp: int) -> float:
    layer = arch.layers[g.layers[0]]
    heads = layer.num_heads or cfg.num_attention_heads
    return heads / tp


def decode_costs(
    kv: KvSizing, cfg: ModelConfig, arch: Architecture, context: float
) -> list[GroupCost]:
    """Per request at ``context`` tokens, one decode step: per group its KV bytes on one TP
    rank and its attention FLOPs per query token."""
    topk = cfg.index_topk
    out = []
    for g in kv.groups:
        spec = g.spec
        n = g.num_layers
        if isinstance(spec, MLAAttentionSpec):
            kept = min(context, topk) if topk else context
            heads = cfg.num_attention_heads / kv.tp
            flops = 2 * heads * (spec.head_size + spec.kv_lora_rank) * kept
            out.append(GroupCost("mla", n, spec.bytes_per_token * kept * n, flops * n))
        elif isinstance(spec, IndexerSpec):
            heads = cfg.index_n_heads or 0
            flops = 2 * heads * spec.index_head_dim * context
            out.append(GroupCost("indexer", n, spec.bytes_per_token * context * n, flops * n))
        elif isinstance(spec, CompressedSpec):
            entries = math.ceil(context / spec.ratio)
            read = min(entries, topk) if (topk and spec.indexer_dim) else entries
            bytes_ = (read * spec.entry_dim + entries * spec.indexer_dim) * spec.dtype_bytes
            heads = cfg.num_attention_heads / kv.tp
            flops = 2 * heads * 2 * spec.entry_dim * read
            flops += 2 * (cfg.index_n_heads or 0) * spec.indexer_dim * entries
            out.append(GroupCost("compressed", n, bytes_ * n, flops * n))
        elif isinstance(spec, MambaSpec):
            # the state is read and written back each step; its update is a few FLOPs per element
            elements = sum(math.prod(s) for s in spec.shapes)
            out.append(GroupCost("linear", n, 2 * spec.state_bytes * n, 4 * elements * n))
        elif isinstance(spec, FullAttentionSpec):
            kept = spec.tokens_kept(int(context))
            heads = _q_heads(cfg, arch, g, kv.tp)
            flops = 2 * heads * (spec.head_size + spec.head_size_v) * kept
            out.append(GroupCost(spec.kind, n, spec.bytes_per_token * kept * n, flops * n))
    return out


def prefill_costs(
    kv: KvSizing, cfg: ModelConfig, arch: Architecture, prompt: int, past: int = 0
) -> list[GroupCost]:
    """Per prompt token on one TP rank: per group the KV bytes it writes and its attention
    FLOPs, the quadratic term (each token attends to the mean causal span of its group, the
    ``past`` tokens a prefix cache held included)."""
    topk = cfg.index_topk
    full = mean_attended(prompt, None, past)
    out = []
    for g in kv.groups:
        spec = g.spec
        n = g.num_layers
        written = spec.bytes_per_token * n
        if isinstance(spec, MLAAttentionSpec):
            span = mean_attended(prompt, topk, past)
            heads = cfg.num_attention_heads / kv.tp
            qk = (cfg.qk_nope_head_dim or 128) + spec.qk_rope_head_dim
            v = cfg.v_head_dim or (cfg.qk_nope_head_dim or 128)
            out.append(GroupCost("mla", n, written, 2 * heads * (qk + v) * span * n))
        elif isinstance(spec, IndexerSpec):
            flops = 2 * (cfg.index_n_heads or 0) * spec.index_head_dim * full * n
            out.append(GroupCost("indexer", n, written, flops))
        elif isinstance(spec, CompressedSpec):
            span = full / spec.ratio
            if topk and spec.indexer_dim:
                span = min(span, topk)
            heads = cfg.num_attention_heads / kv.tp
            out.append(
                GroupCost("compressed", n, written, 2 * heads * 2 * spec.entry_dim * span * n)
            )
        elif isinstance(spec, MambaSpec):
            elements = sum(math.prod(s) for s in spec.shapes)
            out.append(GroupCost("linear", n, 0.0, 4 * elements * n))
        elif isinstance(spec, FullAttentionSpec):
            span = mean_attended(prompt, spec.window, past)
            heads = _q_heads(cfg, arch, g, kv.tp)
            flops = 2 * heads * (spec.head_size + spec.head_size_v) * span * n
            out.append(GroupCost(spec.kind, n, written, flops))
    return out


def mla_context_flops(kv: KvSizing, cfg: ModelConfig, context: float) -> float:
    """FLOPs one prefill chunk spends re-expanding the latents of ``context`` earlier tokens of
    its prompt on one TP rank: the engines run MLA prefill un-absorbed (vLLM's MLA backend
    ``_compute_prefill_context``, SGLang's chunked-KV MHA path), so a chunk after the first
    up-projects every cached latent back to per-head keys and values (kv_b_proj: kv_lora_rank ×
    heads × (qk_nope + v) per layer) before attending to them."""
    out = 0.0
    for g in kv.groups:
        spec = g.spec
        if isinstance(spec, MLAAttentionSpec):
            heads = cfg.num_attention_heads / kv.tp
            nope = cfg.qk_nope_head_dim or 128
            v = cfg.v_head_dim or nope
            out += 2 * spec.kv_lora_rank * heads * (nope + v) * context * g.num_layers
    return out
