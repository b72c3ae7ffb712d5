"""One small frozen class per cache kind, after vLLM's ``v1/kv_cache_interface.py``.

Each spec describes ONE layer's cache on ONE tensor-parallel rank and owns its
arithmetic: bytes that grow with every token, bytes that stay constant per request,
and how many tokens it keeps at a given context. Totals are sums over layers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from engine.decision import Code, Decimal, Decision, Name, Tokens

# how each cache family is named and counted (worded in data/i18n/<lang>/kv.yaml)
FULL_LABEL = Code("kv.label.full")
SLIDING_LABEL = Code("kv.label.sliding", "window")
CHUNKED_LABEL = Code("kv.label.chunked", "chunk")
MLA_LABEL = Code("kv.label.mla")
INDEXER_LABEL = Code("kv.label.indexer")
COMPRESSED_LABEL = Code("kv.label.compressed", "ratio")
STATE_LABEL = Code("kv.label.state", "variant")
HEADS = Code("kv.formula.heads", "heads", "k", "v", "dtype_bytes", "dtype", "bytes")
SLIDING = Code("kv.formula.sliding", "base", "window")
CHUNKED = Code("kv.formula.chunked", "base", "chunk")
MLA = Code("kv.formula.mla", "rank", "rope", "dtype_bytes", "dtype", "bytes")
MLA_PACKED = Code("kv.formula.mla_packed", "dtype", "rank", "scales", "rope", "bytes")
INDEXER = Code("kv.formula.indexer", "dim", "blocks", "scale", "bytes")
COMPRESSED = Code("kv.formula.compressed", "entry", "dtype_bytes", "ratio", "bytes")
COMPRESSED_INDEXED = Code(
    "kv.formula.compressed_indexed", "entry", "indexer", "dtype_bytes", "ratio", "bytes"
)
# DeepSeek-V4's packed fp8 row (vLLM): NoPE fp8 + RoPE bf16 + scale bytes + pad
V4_ROW = Code("kv.formula.v4_row", "nope", "rope", "scales", "pad", "bytes")
SLIDING_PACKED = Code("kv.formula.sliding_packed", "row", "window")
COMPRESSED_PACKED = Code("kv.formula.compressed_packed", "row", "ratio", "bytes")
STATE = Code("kv.formula.state", "variant", "parts", "bytes")
STATE_PART = Code("kv.formula.state_part", "dims", "dtype_bytes", "dtype")
PLUS = Code("kv.formula.plus", "a", "b")


def plus(parts: tuple[Decision, ...]) -> Decision:
    """``a + b + …`` as one decision (each term worded by its own code)."""
    out = parts[0]
    for p in parts[1:]:
        out = PLUS(a=out, b=p)
    return out


def _n(x: float) -> int:
    """A whole byte count as shown (rounded)."""
    return round(x)


@dataclass(frozen=True)
class CacheSpec:
    """Base: a cache that grows by ``bytes_per_token`` for every token it keeps.

    Each family says, as class attributes, what the sizing needs to know about it instead of
    being compared by name: ``order`` (its place among the layer groups), ``paged`` (it grows
    with the tokens, in pages; False for a constant per-request state), ``row_per_token`` (one
    stored row per token, as a paged-KV kernel allocates it), ``aligns_state`` (its page is the
    one vLLM pads a linear-attention state to) and ``latent`` (MLA's block-size rule)."""

    dtype: str

    order: ClassVar[int] = 0
    paged: ClassVar[bool] = True
    row_per_token: ClassVar[bool] = True
    aligns_state: ClassVar[bool] = False
    latent: ClassVar[bool] = False

    @property
    def kind(self) -> str:
        raise NotImplementedError

    def label(self) -> Decision:
        """A short name for tables and charts."""
        raise NotImplementedError

    def page_size_bytes(self, block_size: int) -> int:
        """Bytes of one page of ``block_size`` tokens (vLLM: ``page_size_bytes``); a constant
        state takes one page whatever the block."""
        if not self.paged:
            return self.state_bytes
        return math.ceil(self.bytes_per_token * block_size)

    @property
    def bytes_per_token(self) -> float:
        return 0.0

    @property
    def state_bytes(self) -> int:
        return 0

    @property
    def window(self) -> int | None:
        """Tokens kept at most (None: every token of the context)."""
        return None

    def tokens_kept(self, context: int) -> float:
        return float(context if self.window is None else min(context, self.window))

    def bytes_at(self, context: int) -> float:
        return self.bytes_per_token * self.tokens_kept(context) + self.state_bytes

    def formula(self) -> Decision:
        """How one layer's bytes are counted, with the numbers plugged in."""
        raise NotImplementedError


@dataclass(frozen=True)
class FullAttentionSpec(CacheSpec):
    """Standard MHA / GQA / MQA: K and V of every KV head on this rank, for every token
    (vLLM: ``num_kv_heads * (head_size + head_size_v) * dtype``)."""

    order: ClassVar[int] = 0
    aligns_state: ClassVar[bool] = True

    def label(self) -> Decision:
        return FULL_LABEL()

    num_kv_heads: int
    head_size: int
    head_size_v: int
    dtype_bytes: int

    @property
    def kind(self) -> str:
        return "full"

    @property
    def bytes_per_token(self) -> float:
        return float(self.num_kv_heads * (self.head_size + self.head_size_v) * self.dtype_bytes)

    def formula(self) -> Decision:
        return HEADS(
            heads=self.num_kv_heads,
            k=self.head_size,
            v=self.head_size_v,
            dtype_bytes=self.dtype_bytes,
            dtype=Name(self.dtype),
            bytes=_n(self.bytes_per_token),
        )


@dataclass(frozen=True)
class SlidingWindowSpec(FullAttentionSpec):
    """Same bytes per token as full attention, but only the last ``sliding_window`` tokens
    are kept: the layer stops growing once the context passes the window."""

    order: ClassVar[int] = 1

    def label(self) -> Decision:
        return SLIDING_LABEL(window=Tokens(self.sliding_window))

    sliding_window: int
    packed: Decision | None = None  # a packed row (DeepSeek-V4 fp8): its formula
    packed_bytes: int | None = None

    @property
    def kind(self) -> str:
        return "sliding"

    @property
    def window(self) -> int | None:
        return self.sliding_window

    @property
    def bytes_per_token(self) -> float:
        if self.packed_bytes is not None:
            return float(self.num_kv_heads * self.packed_bytes)
        return super().bytes_per_token

    def formula(self) -> Decision:
        if self.packed is not None:
            return SLIDING_PACKED(row=self.packed, window=Tokens(self.sliding_window))
        return SLIDING(base=super().formula(), window=Tokens(self.sliding_window))


@dataclass(frozen=True)
class ChunkedLocalSpec(FullAttentionSpec):
    """Chunked local attention (Llama 4): attends within its chunk, so at most
    ``attention_chunk_size`` tokens are kept."""

    order: ClassVar[int] = 2

    def label(self) -> Decision:
        return CHUNKED_LABEL(chunk=Tokens(self.chunk_size))

    chunk_size: int

    @property
    def kind(self) -> str:
        return "chunked"

    @property
    def window(self) -> int | None:
        return self.chunk_size

    def formula(self) -> Decision:
        return CHUNKED(base=super().formula(), chunk=Tokens(self.chunk_size))


@dataclass(frozen=True)
class MLAAttentionSpec(CacheSpec):
    """MLA stores one compressed latent (``kv_lora_rank``) plus the decoupled RoPE key per
    token: a single copy, no per-head K/V. The latent is replicated on every TP rank
    (it cannot be split by heads); only DP-attention divides the requests. Packed
    layouts (``fp8_ds_mla``) store a fixed-size row instead."""

    order: ClassVar[int] = 3
    aligns_state: ClassVar[bool] = True
    latent: ClassVar[bool] = True

    def label(self) -> Decision:
        return MLA_LABEL()

    kv_lora_rank: int
    qk_rope_head_dim: int
    dtype_bytes: int
    packed_bytes: int | None = None

    @property
    def kind(self) -> str:
        return "mla"

    @property
    def head_size(self) -> int:
        return self.kv_lora_rank + self.qk_rope_head_dim

    @property
    def bytes_per_token(self) -> float:
        if self.packed_bytes is not None:
            return float(self.packed_bytes)
        return float(self.head_size * self.dtype_bytes)

    def formula(self) -> Decision:
        if self.packed_bytes is not None:
            return MLA_PACKED(
                dtype=Name(self.dtype),
                rank=self.kv_lora_rank,
                scales=self.kv_lora_rank // 128,
                rope=self.qk_rope_head_dim,
                bytes=self.packed_bytes,
            )
        return MLA(
            rank=self.kv_lora_rank,
            rope=self.qk_rope_head_dim,
            dtype_bytes=self.dtype_bytes,
            dtype=Name(self.dtype),
            bytes=_n(self.bytes_per_token),
        )


@dataclass(frozen=True)
class IndexerSpec(CacheSpec):
    """DSA lightning-indexer keys: fp8 keys plus one fp32 scale per 128 values, whatever
    the attention KV dtype is."""

    order: ClassVar[int] = 4

    def label(self) -> Decision:
        return INDEXER_LABEL()

    index_head_dim: int
    quant_block: int = 128
    scale_bytes: int = 4

    @property
    def kind(self) -> str:
        return "indexer"

    @property
    def bytes_per_token(self) -> float:
        return float(
            self.index_head_dim + self.index_head_dim // self.quant_block * self.scale_bytes
        )

    def formula(self) -> Decision:
        return INDEXER(
            dim=self.index_head_dim,
            blocks=self.index_head_dim // self.quant_block,
            scale=self.scale_bytes,
            bytes=_n(self.bytes_per_token),
        )


@dataclass(frozen=True)
class CompressedSpec(CacheSpec):
    """DeepSeek-V4 compressed attention: one shared K=V entry of ``entry_dim`` values
    per ``ratio`` tokens (plus, on indexed layers, an indexer key per compressed entry)."""

    order: ClassVar[int] = 5
    row_per_token: ClassVar[bool] = False

    def label(self) -> Decision:
        return COMPRESSED_LABEL(ratio=self.ratio)

    entry_dim: int
    ratio: int
    dtype_bytes: int
    indexer_dim: int = 0
    packed: Decision | None = None  # a packed row (DeepSeek-V4 fp8): its formula
    packed_bytes: int | None = None
    indexer_row: Decision | None = None  # with a packed row: the indexer's own row
    indexer_bytes: int = 0

    @property
    def kind(self) -> str:
        return "compressed"

    @property
    def entry_bytes(self) -> int:
        if self.packed_bytes is not None:
            return self.packed_bytes + self.indexer_bytes
        return (self.entry_dim + self.indexer_dim) * self.dtype_bytes

    @property
    def bytes_per_token(self) -> float:
        return self.entry_bytes / self.ratio

    def bytes_at(self, context: int) -> float:
        return float(math.ceil(context / self.ratio) * self.entry_bytes)

    def formula(self) -> Decision:
        per_token = Decimal(self.bytes_per_token, 2)
        if self.packed is not None:
            row = self.packed if self.indexer_row is None else plus((self.packed, self.indexer_row))
            return COMPRESSED_PACKED(row=row, ratio=self.ratio, bytes=per_token)
        if self.indexer_dim:
            return COMPRESSED_INDEXED(
                entry=self.entry_dim,
                indexer=self.indexer_dim,
                dtype_bytes=self.dtype_bytes,
                ratio=self.ratio,
                bytes=per_token,
            )
        return COMPRESSED(
            entry=self.entry_dim, dtype_bytes=self.dtype_bytes, ratio=self.ratio, bytes=per_token
        )


@dataclass(frozen=True)
class MambaSpec(CacheSpec):
    """Linear-attention / SSM state: constant per request, whatever the context
    (vLLM ``MambaSpec``: sum of prod(shape) × dtype over the conv and temporal states).
    ``variant`` names the mixer that keeps it (its mixer family's label)."""

    order: ClassVar[int] = 6
    paged: ClassVar[bool] = False
    row_per_token: ClassVar[bool] = False

    def label(self) -> Decision:
        return STATE_LABEL(variant=self.variant)

    variant: Decision
    shapes: tuple[tuple[int, ...], ...]
    dtypes: tuple[str, ...]
    dtype_sizes: tuple[int, ...]

    @property
    def kind(self) -> str:
        return "mamba"

    @property
    def state_bytes(self) -> int:
        return sum(math.prod(s) * b for s, b in zip(self.shapes, self.dtype_sizes, strict=True))

    def formula(self) -> Decision:
        parts = tuple(
            STATE_PART(dims=Name(" × ".join(str(d) for d in s)), dtype_bytes=b, dtype=Name(dt))
            for s, dt, b in zip(self.shapes, self.dtypes, self.dtype_sizes, strict=True)
        )
        return STATE(variant=self.variant, parts=plus(parts), bytes=self.state_bytes)
