"""What ``--kv-cache-dtype`` the user asked for, and what vLLM actually stores.

The storage rules are each engine adapter's (``engine.engines.vllm.VllmAdapter.kv_dtype``,
``engine.engines.sglang.SglangAdapter.kv_dtype``); this module keeps the names the KV sizing,
the gates and the pages have always imported. vLLM maps ``auto`` to the model dtype (or the
checkpoint's declared KV dtype), stores every 8-bit mode as one byte, and for DSA (sparse MLA)
models lets the backend it picks rewrite the dtype: on Hopper the FlashMLA-sparse backend stores
any fp8 request as the packed 656-byte ``fp8_ds_mla`` row, on datacenter Blackwell FlashInfer
keeps plain fp8 (576 B).
"""

from __future__ import annotations

from engine.engines import adapter
from engine.engines.kvstore import DTYPE_BYTES, KvDtype, is_dsa, model_dtype, modelopt_kv_dtype
from engine.engines.vllm import KV_ALIASES as ALIASES
from engine.model.config import ModelConfig

KV_DTYPE_CHOICES = tuple(ALIASES)

__all__ = [
    "ALIASES",
    "DTYPE_BYTES",
    "KV_DTYPE_CHOICES",
    "KvDtype",
    "is_dsa",
    "model_dtype",
    "modelopt_kv_dtype",
    "resolve_kv_dtype",
]


def resolve_kv_dtype(requested: str, cfg: ModelConfig, gpu_arch: str | None = None) -> KvDtype:
    """The dtype vLLM's layers store (without a GPU, Hopper's DSA layout is assumed)."""
    return adapter("vllm").kv_dtype(requested, cfg, gpu_arch)
