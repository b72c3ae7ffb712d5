"""The largest real config shape we know, built on demand: a ModelOpt NVFP4 checkpoint's
config.json listing every quantized module (the benchmarks' and the upload tests' input)."""

from __future__ import annotations

import json

from engine.model.loader import MODELS_DIR


def nvfp4_config_bytes(n_modules: int = 22_422) -> bytes:
    """A config.json shaped like a ModelOpt NVFP4 checkpoint's that lists every quantized
    module in quantization_config.quantized_layers (22,422 entries are about 3 MB)."""
    raw = json.loads((MODELS_DIR / "meta-llama__Llama-3.3-70B-Instruct.json").read_text())
    projs = ("gate_proj", "up_proj", "down_proj")
    layers = {
        f"model.language_model.layers.{i % 80}.mlp.experts.{i // 3}.{projs[i % 3]}": {
            "quant_algo": "NVFP4",
            "group_size": 16,
        }
        for i in range(n_modules)
    }
    raw["quantization_config"] = {
        "quant_method": "modelopt",
        "quant_algo": "MIXED_PRECISION",
        "kv_cache_quant_algo": "FP8",
        "producer": {"name": "modelopt", "version": "0.37.0"},
        "quantized_layers": layers,
    }
    return json.dumps(raw, indent=4).encode()
