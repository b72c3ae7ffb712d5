"""The micro-kernel checks on a CUDA GPU at real model dims, as one JSON document.

    python -m tools.gpu_check [--out FILE] [--catalog-gbps N] [--only CHECK ...]
                              [--calibration FILE [--preset NAME] [--device cuda|cpu]]

Runs every check of ``engine.measure.kernels`` on ``cuda`` at DeepSeek-V3.2 dims (MLA, DSA indexer,
MoE), the GQA-side checks (paged, decode, torch.cat) at Llama-3.1-70B dims and the hybrid ones
(paged with the hybrid block, prefix caching) at Qwen3-Next dims, each preset built from its
bundled config (data/measure.yaml kernel_presets), then prints {device, torch, cuda,
catalog_gbps, runs: {preset: rows}, summary}. The catalog bandwidth comes from data/gpus.yaml
by the device name when the engine can resolve it. Exit 0 when every row passed, 1 otherwise,
2 without a GPU.

``--calibration FILE`` also measures what the speed model runs on (achieved HBM bandwidth, BF16
and FP8 GEMM throughput, the decode-attention kernel of ``--preset``'s model: see
``engine.measure.kernels.calibrate``) and writes it as an ``engine.perf.Calibration`` JSON file.
``--device cpu`` runs only that measurement, at small sizes, on the CPU (the tested path).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

from engine.errors import InputError
from engine.hardware.gpus import lookup_gpu
from engine.measure.kernels import CHECK_NAMES, preset_dims, run_all
from engine.measure.kernels.calibrate import calibrate
from engine.present.measure_words import check_dict

# (preset, checks to run: None for all)
RUNS: tuple[tuple[str, tuple[str, ...] | None], ...] = (
    ("deepseek-v3.2", None),
    ("llama-3.1-70b", ("paged_kv_layout", "decode_bandwidth", "kv_cat_vs_prealloc")),
    ("qwen3-next-80b", ("paged_kv_layout", "prefix_caching")),
)


def catalog_bandwidth(device_name: str) -> float | None:
    """GB/s from the GPU catalog, or None when the name does not resolve there."""
    try:
        return lookup_gpu(device_name).bandwidth_bytes_per_s / 1e9
    except InputError:
        return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.gpu_check")
    parser.add_argument("--out", help="also write the JSON here")
    parser.add_argument("--catalog-gbps", type=float, help="override the catalog bandwidth")
    parser.add_argument("--only", action="append", help="run only these checks")
    parser.add_argument("--calibration", help="write the speed model's calibration JSON here")
    parser.add_argument("--preset", default="default", help="model whose decode attention is timed")
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    args = parser.parse_args(argv)
    if args.device == "cpu":
        if not args.calibration:
            print("error: --device cpu runs only --calibration", file=sys.stderr)
            return 2
        return write_calibration(args.calibration, "cpu", args.preset)
    if not torch.cuda.is_available():
        print("error: device: no CUDA GPU visible to torch", file=sys.stderr)
        return 2
    name = torch.cuda.get_device_name(0)
    catalog = args.catalog_gbps or catalog_bandwidth(name)
    runs: dict[str, list[dict[str, object]]] = {}
    timings: dict[str, float] = {}
    for preset, only in RUNS:
        selected = list(only) if only else list(CHECK_NAMES)
        if args.only:
            selected = [c for c in selected if c in args.only]
            if not selected:
                continue

        def progress(i: int, total: int, check: str, preset: str = preset) -> None:
            print(f"[{preset}] {i}/{total} {check}", file=sys.stderr, flush=True)

        start = time.perf_counter()
        rows = run_all("cuda", preset_dims(preset), progress, catalog_gbps=catalog, only=selected)
        timings[preset] = round(time.perf_counter() - start, 2)
        runs[preset] = [check_dict(r) for r in rows]
    failed = [f"{p}:{r['name']}" for p, rows in runs.items() for r in rows if not r["passed"]]
    report = {
        "device": name,
        "capability": ".".join(map(str, torch.cuda.get_device_capability(0))),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "catalog_gbps": catalog,
        "seconds": timings,
        "runs": runs,
        "summary": {
            "rows": sum(len(r) for r in runs.values()),
            "failed": failed,
        },
    }
    text = json.dumps(report, indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n", encoding="utf-8")
    if args.calibration:
        write_calibration(args.calibration, "cuda", args.preset)
    return 0 if not failed else 1


def write_calibration(path: str, device: str, preset: str) -> int:
    """Measure the calibration on ``device`` and write it to ``path`` (JSON)."""
    try:
        result = calibrate(device, preset_dims(preset))
    except InputError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    text = result.model_dump_json(indent=2)
    Path(path).write_text(text + "\n", encoding="utf-8")
    print(text, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
