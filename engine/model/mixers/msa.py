"""MiniMax-M3's block-sparse attention: GQA whose layers named by
``sparse_attention_config.sparse_attention_freq`` also run a lightning indexer that picks
the top-k KV blocks each query attends to. Such a layer keeps its full K/V (vLLM 0.33.0
vllm/models/minimax_m3 ``MiniMaxM3SparseAttention.get_kv_cache_spec``: ``FullAttentionSpec``)
plus one index key per token in a side cache (``MiniMaxM3IndexerCache``: ``MLAAttentionSpec``
with one head of ``sparse_index_dim``, so every TP rank holds it whole, stored in
``attention_config.resolve_indexer_kv_dtype("bf16")``: bf16 whatever ``--kv-cache-dtype``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from engine.decision import Code, Decision, Name
from engine.model.cache_specs import CacheSpec, FullAttentionSpec
from engine.model.config import ModelConfig
from engine.model.evidence import Evidence, short
from engine.model.mixers.base import CacheContext, LayerPlan, LayerShape
from engine.model.mixers.full import HeadAttention

EVIDENCE = Code("family.evidence.msa", "layers", "dim")
INDEX_LABEL = Code("kv.label.index_keys")
INDEX_FORMULA = Code("kv.formula.index_keys", "dim", "dtype_bytes", "dtype", "bytes")
INDEX_DTYPE, INDEX_DTYPE_BYTES = "bfloat16", 2  # resolve_indexer_kv_dtype("bf16")


def _sparse(cfg: ModelConfig) -> dict[str, Any] | None:
    sparse = cfg.field("sparse_attention_config")
    if not isinstance(sparse, dict) or sparse.get("use_sparse_attention") is False:
        return None
    freq, dim = sparse.get("sparse_attention_freq"), sparse.get("sparse_index_dim")
    if not isinstance(freq, list) or not isinstance(dim, int) or isinstance(dim, bool) or dim < 1:
        return None
    return sparse


@dataclass(frozen=True)
class IndexKeySpec(CacheSpec):
    """The indexer's side cache: one key of ``index_dim`` values per token, one copy on
    every TP rank (it has no heads to split)."""

    order: ClassVar[int] = 4

    index_dim: int
    dtype_bytes: int

    @property
    def kind(self) -> str:
        return "index_keys"

    @property
    def bytes_per_token(self) -> float:
        return float(self.index_dim * self.dtype_bytes)

    def label(self) -> Decision:
        return INDEX_LABEL()

    def formula(self) -> Decision:
        return INDEX_FORMULA(
            dim=self.index_dim,
            dtype_bytes=self.dtype_bytes,
            dtype=Name(self.dtype),
            bytes=round(self.bytes_per_token),
        )


class BlockSparseAttention(HeadAttention):
    key = "msa"

    def takes_layers(self, cfg: ModelConfig) -> list[bool] | None:
        sparse = _sparse(cfg)
        return None if sparse is None else [f != 0 for f in sparse["sparse_attention_freq"]]

    def layer(self, cfg: ModelConfig, shape: LayerShape) -> LayerPlan:
        return self.head_layer(shape, indexer=True)

    def layer_evidence(self, cfg: ModelConfig, layers: tuple[LayerPlan, ...]) -> list[Evidence]:
        sparse = _sparse(cfg)
        n = sum(1 for lay in layers if lay.mixer == self.key)
        if sparse is None or not n:
            return []
        freq = sparse["sparse_attention_freq"]
        rule = EVIDENCE(layers=n, dim=sparse["sparse_index_dim"])
        return [Evidence("sparse_attention_config.sparse_attention_freq", short(freq), rule)]

    def cache_specs(self, layer: LayerPlan, ctx: CacheContext) -> tuple[CacheSpec, ...]:
        sparse = _sparse(ctx.cfg)
        assert sparse is not None
        index = IndexKeySpec(INDEX_DTYPE, sparse["sparse_index_dim"], INDEX_DTYPE_BYTES)
        return FullAttentionSpec(*self.spec_args(layer, ctx)), index

    def params(self, cfg: ModelConfig, layer: LayerPlan) -> tuple[int, int]:
        """The q/k/v/o projections plus the index branch fused into qkv_proj (vLLM
        ``MinimaxM3QKVParallelLinearWithIndexer``: index_q of sparse_num_index_heads heads and
        one index key, each ``sparse_index_dim`` wide) and its two norms."""
        tp_part, rep = super().params(cfg, layer)
        sparse = _sparse(cfg)
        if sparse is None:
            return tp_part, rep
        dim = sparse["sparse_index_dim"]
        heads = sparse.get("sparse_num_index_heads") or layer.num_kv_heads or 1
        return tp_part + cfg.hidden_size * (heads + 1) * dim + 2 * dim, rep
