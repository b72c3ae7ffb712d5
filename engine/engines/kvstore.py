"""The KV dtype an engine stores, and the facts of a config both engines' storage rules read:
the model dtype, the KV dtype a quantized checkpoint declares, whether the model is DSA.

Each adapter turns a requested ``--kv-cache-dtype`` into a ``KvDtype`` with its own rules
(``engine.engines.vllm.VllmAdapter.kv_dtype``, ``engine.engines.sglang.SglangAdapter.kv_dtype``).
Where the two engines store the same checkpoint differently, ``data/engine_rules.yaml``
``kv_dtype_differences`` says so with the source; tests/test_engine_adapters.py holds them to it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from engine.decision import Code, Decision
from engine.model.config import ModelConfig, model_defaults

DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2, "fp8": 1, "fp8_e4m3": 1, "fp8_e5m2": 1}


@dataclass(frozen=True)
class KvDtype:
    """The dtype the cache layers store. ``mla_packed_bytes`` is set for packed DSA rows;
    ``why`` says how the engine came to store it (None: as asked)."""

    requested: str
    stored: str
    bytes: int
    mla_packed_bytes: int | None
    why: Decision | None = None


# How ``--kv-cache-dtype auto`` resolves in both engines (each adapter adds its own rules).
KV_MODELOPT = Code("kv.dtype.modelopt", "stored")
KV_MODEL_DTYPE = Code("kv.dtype.model_dtype", "stored")


def model_dtype(cfg: ModelConfig) -> str:
    d = cfg.dtype.replace("torch.", "").lower()
    if d in ("bfloat16", "bf16"):
        return "bfloat16"
    if d in ("float16", "fp16", "half"):
        return "float16"
    # Both engines serve float32 checkpoints in bfloat16 by default (dtype "auto").
    return "bfloat16"


def is_dsa(cfg: ModelConfig) -> bool:
    return cfg.index_topk is not None and cfg.kv_lora_rank is not None


def _fp8_scheme(scheme: Mapping[str, Any], static_only: bool) -> bool:
    """A ``kv_cache_scheme`` that reads as FP8: 8-bit float (vLLM also wants it static)."""
    static = scheme.get("dynamic") is False or not static_only
    return static and scheme.get("num_bits") == 8 and scheme.get("type") == "float"


def modelopt_kv_dtype(cfg: ModelConfig, static_only: bool = True) -> str | None:
    """The KV dtype a ModelOpt checkpoint declares, as ``--kv-cache-dtype auto`` resolves it: the
    flat ``kv_cache_scheme`` of config.json's quantization_config, or ``kv_cache_quant_algo`` at
    the top or nested in ``quantization`` (hf_quant_config.json); None when it declares none.

    Both engines read the same fields (vLLM 0.33.0 ``resolve_kv_cache_dtype_string``; SGLang
    ``ModelOptFp8Config.from_config`` + ``configure_kv_cache_dtype``, data/engine_rules.yaml
    ``sglang.modelopt_kv``); ``static_only``: vLLM reads a scheme as FP8 only when it is not
    dynamic, SGLang checks type and bits only."""
    qc = cfg.quantization_config or {}
    if not str(qc.get("quant_method") or "").startswith("modelopt"):
        return None
    inner = qc.get("quantization")
    inner = inner if isinstance(inner, dict) else qc
    algo = (
        inner.get("kv_cache_scheme")
        or qc.get("kv_cache_scheme")
        or inner.get("kv_cache_quant_algo")
        or qc.get("kv_cache_quant_algo")
    )
    if isinstance(algo, dict):
        algo = "fp8" if _fp8_scheme(algo, static_only) else None
    if not isinstance(algo, str):
        return None
    mapped = model_defaults()["modelopt_kv_cache_dtypes"].get(algo.lower())
    return str(mapped) if mapped else None
