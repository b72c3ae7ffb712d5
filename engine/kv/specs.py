"""One small frozen class per cache kind, after vLLM's ``v1/kv_cache_interface.py``.

Each spec describes ONE layer's cache on ONE tensor-parallel rank and owns its
arithmetic: bytes that grow with every token, bytes that stay constant per request,
and how many tokens it keeps at a given context. Totals are sums over layers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar


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

    def label(self) -> str:
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

    def formula(self) -> str:
        raise NotImplementedError


@dataclass(frozen=True)
class FullAttentionSpec(CacheSpec):
    """Standard MHA / GQA / MQA: K and V of every KV head on this rank, for every token
    (vLLM: ``num_kv_heads * (head_size + head_size_v) * dtype``)."""

    order: ClassVar[int] = 0
    aligns_state: ClassVar[bool] = True

    def label(self) -> str:
        return "full attention"

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

    def formula(self) -> str:
        return (
            f"{self.num_kv_heads} KV heads × ({self.head_size} K + {self.head_size_v} V) "
            f"× {self.dtype_bytes} B ({self.dtype}) = {self.bytes_per_token:,.0f} B/token"
        )


@dataclass(frozen=True)
class SlidingWindowSpec(FullAttentionSpec):
    """Same bytes per token as full attention, but only the last ``sliding_window`` tokens
    are kept: the layer stops growing once the context passes the window."""

    order: ClassVar[int] = 1

    def label(self) -> str:
        return f"sliding window ({self.sliding_window:,} tokens)"

    sliding_window: int

    @property
    def kind(self) -> str:
        return "sliding"

    @property
    def window(self) -> int | None:
        return self.sliding_window

    def formula(self) -> str:
        return super().formula() + f", kept for the last {self.sliding_window:,} tokens only"


@dataclass(frozen=True)
class ChunkedLocalSpec(FullAttentionSpec):
    """Chunked local attention (Llama 4): attends within its chunk, so at most
    ``attention_chunk_size`` tokens are kept."""

    order: ClassVar[int] = 2

    def label(self) -> str:
        return f"chunked local ({self.chunk_size:,} tokens)"

    chunk_size: int

    @property
    def kind(self) -> str:
        return "chunked"

    @property
    def window(self) -> int | None:
        return self.chunk_size

    def formula(self) -> str:
        return super().formula() + f", kept for at most one {self.chunk_size:,}-token chunk"


@dataclass(frozen=True)
class MLAAttentionSpec(CacheSpec):
    """MLA stores one compressed latent (``kv_lora_rank``) plus the decoupled RoPE key per
    token: a single copy, no per-head K/V. The latent is replicated on every TP rank
    (it cannot be split by heads); only DP-attention divides the requests. Packed
    layouts (``fp8_ds_mla``) store a fixed-size row instead."""

    order: ClassVar[int] = 3
    aligns_state: ClassVar[bool] = True
    latent: ClassVar[bool] = True

    def label(self) -> str:
        return "MLA latent"

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

    def formula(self) -> str:
        if self.packed_bytes is not None:
            return (
                f"packed {self.dtype} row: {self.kv_lora_rank} fp8 latent + "
                f"{self.kv_lora_rank // 128} fp32 scales + {self.qk_rope_head_dim} bf16 RoPE "
                f"= {self.packed_bytes} B/token"
            )
        return (
            f"({self.kv_lora_rank} latent + {self.qk_rope_head_dim} RoPE) × {self.dtype_bytes} B "
            f"({self.dtype}) = {self.bytes_per_token:,.0f} B/token (one copy, no V)"
        )


@dataclass(frozen=True)
class IndexerSpec(CacheSpec):
    """DSA lightning-indexer keys: fp8 keys plus one fp32 scale per 128 values, whatever
    the attention KV dtype is."""

    order: ClassVar[int] = 4

    def label(self) -> str:
        return "DSA indexer keys"

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

    def formula(self) -> str:
        return (
            f"{self.index_head_dim} fp8 key bytes + {self.index_head_dim // self.quant_block} × "
            f"{self.scale_bytes} B scale = {self.bytes_per_token:,.0f} B/token"
        )


@dataclass(frozen=True)
class CompressedSpec(CacheSpec):
    """DeepSeek-V4 compressed attention: one shared K=V entry of ``entry_dim`` values
    per ``ratio`` tokens (plus, on indexed layers, an indexer key per compressed entry)."""

    order: ClassVar[int] = 5
    row_per_token: ClassVar[bool] = False

    def label(self) -> str:
        return f"compressed 1/{self.ratio}"

    entry_dim: int
    ratio: int
    dtype_bytes: int
    indexer_dim: int = 0

    @property
    def kind(self) -> str:
        return "compressed"

    @property
    def entry_bytes(self) -> int:
        return (self.entry_dim + self.indexer_dim) * self.dtype_bytes

    @property
    def bytes_per_token(self) -> float:
        return self.entry_bytes / self.ratio

    def bytes_at(self, context: int) -> float:
        return float(math.ceil(context / self.ratio) * self.entry_bytes)

    def formula(self) -> str:
        idx = f" + {self.indexer_dim} indexer" if self.indexer_dim else ""
        return (
            f"({self.entry_dim} K=V{idx}) × {self.dtype_bytes} B per {self.ratio} tokens "
            f"= {self.bytes_per_token:,.2f} B/token"
        )


@dataclass(frozen=True)
class MambaSpec(CacheSpec):
    """Linear-attention / SSM state: constant per request, whatever the context
    (vLLM ``MambaSpec``: sum of prod(shape) × dtype over the conv and temporal states)."""

    order: ClassVar[int] = 6
    paged: ClassVar[bool] = False
    row_per_token: ClassVar[bool] = False

    def label(self) -> str:
        return f"{self.variant} state"

    variant: str
    shapes: tuple[tuple[int, ...], ...]
    dtypes: tuple[str, ...]
    dtype_sizes: tuple[int, ...]

    @property
    def kind(self) -> str:
        return "mamba"

    @property
    def state_bytes(self) -> int:
        return sum(math.prod(s) * b for s, b in zip(self.shapes, self.dtype_sizes, strict=True))

    def formula(self) -> str:
        parts = [
            f"{' × '.join(str(d) for d in s)} × {b} B ({dt})"
            for s, dt, b in zip(self.shapes, self.dtypes, self.dtype_sizes, strict=True)
        ]
        return f"{self.variant}: " + " + ".join(parts) + f" = {self.state_bytes:,} B per request"
