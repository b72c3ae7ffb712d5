"""KV-shared layers (Gemma 3n, Gemma 4): the last ``num_kv_shared_layers`` attention layers
read the KV cache of an earlier layer of the same kind and allocate none (vLLM
``kv_sharing_target_layer_name``: such a layer has no ``KVCacheSpec`` of its own). Not a
mixer of its own: a property of attention layers, applied after the mixers built them."""

from __future__ import annotations

from dataclasses import replace

from engine.decision import Code
from engine.model.cache_specs import CacheSpec
from engine.model.config import ModelConfig
from engine.model.evidence import Evidence
from engine.model.mixers.base import LayerPlan

EVIDENCE = Code("family.evidence.kv_shared", "shared")


class KvSharing:
    def mark(self, cfg: ModelConfig, layers: list[LayerPlan]) -> list[LayerPlan]:
        """The layers, the shared ones marked."""
        if not cfg.num_kv_shared_layers:
            return layers
        first = cfg.num_hidden_layers - cfg.num_kv_shared_layers
        return [
            replace(lay, kv_shared=True) if lay.mixer.is_attention and i >= first else lay
            for i, lay in enumerate(layers)
        ]

    def evidence(self, cfg: ModelConfig, layers: list[LayerPlan]) -> list[Evidence]:
        n = sum(1 for lay in layers if lay.kv_shared)
        if not n:
            return []
        return [Evidence("num_kv_shared_layers", str(cfg.num_kv_shared_layers), EVIDENCE(shared=n))]

    def specs(self, layer: LayerPlan, own: tuple[CacheSpec, ...]) -> tuple[CacheSpec, ...]:
        """What the layer's mixer would keep, unless it reads another layer's cache."""
        return () if layer.kv_shared else own


KV_SHARING = KvSharing()
