"""SGLang 0.5.23's KV accounting for the same model, shown beside vLLM's where they differ.

Differences that matter: SGLang picks the DSA KV dtype itself (bf16 on Hopper, fp8_e4m3
on Blackwell), keeps Mamba SSM state in float32 by default, and pages by single tokens
(no hybrid block padding). Sources: ``data/engine_rules.yaml`` (sglang).
"""

from __future__ import annotations

from engine.errors import InputError
from engine.kv.dtype import KvDtype, is_dsa, model_dtype
from engine.kv.sizing import KvSizing, size_kv
from engine.model.architecture import Architecture
from engine.model.config import ModelConfig
from engine.rules import engine_rules

SGLANG_ALIASES = {
    "auto": "auto",
    "bf16": "bfloat16",
    "bfloat16": "bfloat16",
    "fp16": "float16",
    "float16": "float16",
    "fp8": "fp8_e4m3",
    "fp8_e4m3": "fp8_e4m3",
    "fp8_e5m2": "fp8_e5m2",
    "fp8_ds_mla": "fp8_e4m3",
}


def _blackwell(arch: str | None) -> bool:
    """SGLang's DSA passes test ``major >= 10`` (sm_100, sm_103, sm_120 ...; not sm_90)."""
    return arch is not None and arch.startswith("sm_") and int(arch[3:]) >= 100


def sglang_kv_dtype(requested: str, cfg: ModelConfig, gpu_arch: str | None) -> KvDtype:
    key = requested.strip().lower()
    if key not in SGLANG_ALIASES:
        raise InputError("kv_dtype", f"a KV dtype SGLang accepts; got {requested!r}")
    name = SGLANG_ALIASES[key]
    rules = engine_rules().sglang
    note = ""
    if name == "auto":
        if is_dsa(cfg):
            name = rules.dsa_auto_dtype["blackwell" if _blackwell(gpu_arch) else "hopper"]
            gen = "Blackwell" if _blackwell(gpu_arch) else "Hopper"
            note = f"SGLang picks {name} for DSA on {gen}"
        else:
            q = cfg.quantization_config or {}
            if str(q.get("kv_cache_quant_algo", "")).upper() == "FP8":
                name, note = "fp8_e4m3", "checkpoint declares FP8 KV (kv_cache_quant_algo)"
            else:
                name = model_dtype(cfg)
    if is_dsa(cfg) and name.startswith("fp8") and not _blackwell(gpu_arch):
        cell = rules.dsa_fp8_cell_on_hopper_bytes
        return KvDtype(
            requested, name, 1, cell, f"flashmla_kv on Hopper packs fp8 MLA into {cell} B"
        )
    size = 2 if name in ("bfloat16", "float16") else 1
    return KvDtype(requested, name, size, None, note)


def sglang_sizing(
    arch: Architecture, cfg: ModelConfig, requested: str, gpu_arch: str | None, tp: int
) -> KvSizing:
    return size_kv(arch, cfg, sglang_kv_dtype(requested, cfg, gpu_arch), tp, engine="sglang")
