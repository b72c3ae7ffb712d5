"""SGLang 0.5.23's KV accounting for the same model, shown beside vLLM's where they differ.

Differences that matter: SGLang picks the DSA KV dtype itself (bf16 on Hopper, fp8_e4m3
on Blackwell), keeps Mamba SSM state in float32 by default, and pages by single tokens
(no hybrid block padding). The rules are the SGLang adapter's (``engine.engines.sglang``);
sources: ``data/engine_rules.yaml`` (sglang).
"""

from __future__ import annotations

from engine.engines import adapter
from engine.engines.kvstore import KvDtype
from engine.engines.sglang import KV_ALIASES as SGLANG_ALIASES
from engine.kv.sizing import KvSizing, size_kv
from engine.model.architecture import Architecture
from engine.model.config import ModelConfig

__all__ = ["SGLANG_ALIASES", "sglang_kv_dtype", "sglang_sizing"]


def sglang_kv_dtype(requested: str, cfg: ModelConfig, gpu_arch: str | None) -> KvDtype:
    return adapter("sglang").kv_dtype(requested, cfg, gpu_arch)


def sglang_sizing(
    arch: Architecture, cfg: ModelConfig, requested: str, gpu_arch: str | None, tp: int
) -> KvSizing:
    return size_kv(arch, cfg, sglang_kv_dtype(requested, cfg, gpu_arch), tp, engine="sglang")
