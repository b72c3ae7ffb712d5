"""DSA, DeepSeek's sparse attention: a lightning indexer beside the attention picks the top-k
tokens each layer attends to, and caches its own fp8 keys (vLLM deepseek_v2.py
``Indexer`` / ``DeepseekV32IndexerCache``: ``index_head_dim`` fp8 values plus one fp32 scale
per 128, whatever the KV dtype). It rides on MLA layers (DeepSeek-V3.2, GLM-5) and on
DeepSeek-V4's finest-ratio compressed layers; those families call it."""

from __future__ import annotations

from engine.decision import Code, Decision
from engine.model.cache_specs import IndexerSpec
from engine.model.config import ModelConfig
from engine.model.evidence import Evidence
from engine.model.mixers.base import CacheContext

INDEXER_MLA = Code("family.evidence.dsa_indexer")
INDEXER_COMPRESSED = Code("family.evidence.dsa_indexer_compressed")


class SparseIndexer:
    """The indexer's rules: which layers carry one, its cache, its weights, its evidence."""

    LABEL = Code("mixer.dsa")

    def present(self, cfg: ModelConfig) -> bool:
        return cfg.index_topk is not None

    def label(self) -> Decision:
        return self.LABEL()

    def evidence(self, cfg: ModelConfig, on_compressed: bool = False) -> Evidence:
        rule = INDEXER_COMPRESSED() if on_compressed else INDEXER_MLA()
        return Evidence(
            "index_topk / index_head_dim", f"{cfg.index_topk} / {cfg.index_head_dim}", rule
        )

    def mla_layers(self, cfg: ModelConfig) -> list[bool]:
        """vLLM IndexCache: layer i skips its indexer when index_topk_pattern[i] == 'S', or
        (no pattern) when max(i - offset + 1, 0) % freq != 0 (defaults freq 1, offset 2)."""
        if not self.present(cfg):
            return [False] * cfg.num_hidden_layers
        raw = cfg.raw
        freq = raw.get("index_topk_freq") or 1
        offset = raw.get("index_skip_topk_offset", 2)
        pattern = raw.get("index_topk_pattern")
        out = []
        for i in range(cfg.num_hidden_layers):
            if isinstance(pattern, (str, list)) and i < len(pattern):
                skip = pattern[i] == "S"
            elif pattern is not None:
                skip = False
            else:
                skip = max(i - offset + 1, 0) % freq != 0
            out.append(not skip)
        return out

    def spec(self, ctx: CacheContext) -> IndexerSpec:
        assert ctx.cfg.index_head_dim is not None
        return IndexerSpec(
            "uint8", ctx.cfg.index_head_dim, ctx.indexer_quant_block, ctx.indexer_scale_bytes
        )

    def params(self, cfg: ModelConfig, q_rank: int, with_head_weights: bool = True) -> int:
        """The indexer's projections: its query heads from the q latent, one shared key from
        the hidden state (and on MLA layers the key norm and the per-head weights)."""
        if not (cfg.index_head_dim and cfg.index_n_heads):
            return 0
        h = cfg.hidden_size
        out = q_rank * cfg.index_n_heads * cfg.index_head_dim + h * cfg.index_head_dim
        if with_head_weights:
            out += 2 * cfg.index_head_dim + h * cfg.index_n_heads
        return out


DSA = SparseIndexer()
