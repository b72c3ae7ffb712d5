"""`make bench`: median time to diagnose each bundled config (target < 2 ms per config),
plus a 3 MB ModelOpt config that lists every quantized module (diagnose timed on the loaded
config; its load time reported apart), plus the app benchmarks when tools/bench_app.py is
present."""

from __future__ import annotations

import gc
import importlib.util
import json
import statistics
import time

from engine.diagnose import Options, diagnose
from engine.model.config import ModelConfig
from engine.model.loader import MODELS_DIR, catalog_names, load_model

TARGET_MS = 2.0
BIG_CONFIG = "3 MB NVFP4 config (22,422 quantized_layers)"


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


def _median_ms(cfg: ModelConfig, repeats: int) -> float:
    diagnose(cfg, Options())  # warm the rule tables
    gc.collect()  # garbage of the loads before is not diagnose's time
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        diagnose(cfg, Options(context=32_768))
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def bench_diagnose(repeats: int = 50) -> dict[str, float]:
    out: dict[str, float] = {}
    for name in catalog_names():
        out[name] = _median_ms(load_model(name).config, repeats)
    big, _ = bench_big_config(repeats)
    out[BIG_CONFIG] = big
    return out


def bench_big_config(repeats: int = 50) -> tuple[float, float]:
    """(median diagnose ms, median load ms) of the 3 MB config."""
    data = nvfp4_config_bytes()
    loads = []
    for _ in range(5):
        t0 = time.perf_counter()
        loaded = load_model(data)
        loads.append((time.perf_counter() - t0) * 1000)
    return _median_ms(loaded.config, repeats), statistics.median(loads)


def main() -> int:
    res = bench_diagnose()
    width = max(len(n) for n in res)
    for name, ms in res.items():
        print(f"diagnose {name:<{width}}  {ms:7.3f} ms")
    worst = max(res.values())
    print(
        f"diagnose: median over configs {statistics.median(res.values()):.3f} ms, "
        f"worst {worst:.3f} ms (target < {TARGET_MS} ms): {'OK' if worst < TARGET_MS else 'SLOW'}"
    )
    _, load_ms = bench_big_config(5)
    print(f"load {BIG_CONFIG} ({len(nvfp4_config_bytes()):,} bytes): median {load_ms:.1f} ms")
    if importlib.util.find_spec("tools.bench_app") is not None:
        from tools import bench_app

        bench_app.main()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
