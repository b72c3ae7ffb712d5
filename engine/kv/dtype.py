"""What ``--kv-cache-dtype`` the user asked for, and what the engine actually stores.

vLLM maps ``auto`` to the model dtype, stores every 8-bit mode as one byte, and for
DSA (sparse MLA) models lets the backend it picks rewrite the dtype: on Hopper the
FlashMLA-sparse backend stores any fp8 request as the packed 656-byte ``fp8_ds_mla``
row, on datacenter Blackwell FlashInfer keeps plain fp8 (576 B).
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.errors import InputError
from engine.model.config import ModelConfig, model_defaults
from engine.rules import engine_rules

DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2, "fp8": 1, "fp8_e4m3": 1, "fp8_e5m2": 1}

ALIASES = {
    "auto": "auto",
    "bf16": "bfloat16",
    "bfloat16": "bfloat16",
    "fp16": "float16",
    "float16": "float16",
    "half": "float16",
    "fp8": "fp8",
    "fp8_e4m3": "fp8_e4m3",
    "fp8_e5m2": "fp8_e5m2",
    "fp8_ds_mla": "fp8_ds_mla",
    "nvfp4_ds_mla": "nvfp4_ds_mla",
}
KV_DTYPE_CHOICES = tuple(ALIASES)


@dataclass(frozen=True)
class KvDtype:
    """The dtype the cache layers store. ``mla_packed_bytes`` is set for packed DSA rows."""

    requested: str
    stored: str
    bytes: int
    mla_packed_bytes: int | None
    note: str


def model_dtype(cfg: ModelConfig) -> str:
    d = cfg.dtype.replace("torch.", "").lower()
    if d in ("bfloat16", "bf16"):
        return "bfloat16"
    if d in ("float16", "fp16", "half"):
        return "float16"
    # vLLM serves float32 checkpoints in bfloat16 by default (dtype "auto").
    return "bfloat16"


def modelopt_kv_dtype(cfg: ModelConfig) -> str | None:
    """The KV dtype a ModelOpt checkpoint declares (kv_cache_quant_algo / kv_cache_scheme),
    as vLLM resolves ``--kv-cache-dtype auto`` for it; None when it declares none."""
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
        fp8 = algo.get("dynamic") is False and algo.get("num_bits") == 8
        algo = "fp8" if fp8 and algo.get("type") == "float" else None
    if not isinstance(algo, str):
        return None
    mapped = model_defaults()["modelopt_kv_cache_dtypes"].get(algo.lower())
    return str(mapped) if mapped else None


def is_dsa(cfg: ModelConfig) -> bool:
    return cfg.index_topk is not None and cfg.kv_lora_rank is not None


def resolve_kv_dtype(requested: str, cfg: ModelConfig, gpu_arch: str | None = None) -> KvDtype:
    """The dtype the layers store. Without a GPU the DSA layout assumed is Hopper's (sm_90),
    the most common deployment target."""
    key = requested.strip().lower()
    if key not in ALIASES:
        raise InputError("kv_dtype", f"one of {', '.join(KV_DTYPE_CHOICES)}; got {requested!r}")
    asked = ALIASES[key]
    name = asked
    sparse = engine_rules().sparse_mla_backends
    packed_bytes = engine_rules().ds_mla_packed_bytes.values
    arch = gpu_arch or "sm_90"
    note = ""
    declared = modelopt_kv_dtype(cfg) if name == "auto" else None
    if declared is not None:
        name = declared
        note = f"auto -> {name}: the checkpoint's ModelOpt kv_cache_quant_algo"
    elif name == "auto":
        name = model_dtype(cfg)
        note = f"auto -> model dtype {name}"
        auto_fp8 = sparse.auto_fp8_model_types
        if is_dsa(cfg) and cfg.model_type in auto_fp8.values and arch in auto_fp8.archs:
            name = "fp8_e4m3"
            note = f"auto -> fp8_e4m3: vLLM's {cfg.model_type} hook picks FP8 KV on {arch}"
    if name in packed_bytes and not is_dsa(cfg):
        raise InputError("kv_dtype", f"{name} is a DSA-only layout; this model has no indexer")
    if is_dsa(cfg):
        layout = sparse.fp8_layout.get(arch)
        if layout is not None and (asked in layout.packs or name in layout.packs):
            packed = packed_bytes["fp8_ds_mla"]
            return KvDtype(
                requested,
                "fp8_ds_mla",
                1,
                packed,
                f"{layout.backend} on {arch} stores {name} as fp8_ds_mla ({packed} B/token/layer)",
            )
        if name in packed_bytes:
            packed = packed_bytes[name]
            return KvDtype(requested, name, 1, packed, f"packed {name} row ({packed} B)")
        if DTYPE_BYTES[name] == 1 and layout is not None:
            note = f"{layout.backend} on {arch} keeps plain {name} (576 B latent row)"
    return KvDtype(requested, name, DTYPE_BYTES[name], None, note)
