"""Measured on your GPU: the rates the speed model (``engine.perf``) runs on, timed here.

A large device copy (achieved HBM bandwidth, read + write counted), a square BF16 GEMM and,
where the GPU has FP8 tensor cores, an FP8 GEMM through ``torch._scaled_mm`` (achieved FLOP/s),
and one decode step of the model's own attention (absorbed MLA for an MLA model, else GQA) over
the micro-kernels' concurrency and context. CPU runs the same code at small sizes (float32
GEMMs: bf16 matmuls crawl there), so the path is tested without a GPU; its numbers describe the
CPU and are labelled so in ``how``.
"""

from __future__ import annotations

import torch

from engine.measure.kernels.common import best_time, sync
from engine.measure.kernels.decode import copy_bandwidth, gqa_step, mla_step
from engine.measure.kernels.dims import KernelDims
from engine.measure.kernels.runner import make_context
from engine.perf.calibration import Calibration

# square GEMM size per device
GEMM_SIZE = {"cpu": 256, "cuda": 8192}
FP8_MIN_CAPABILITY = (8, 9)


def gemm_flops(device: torch.device, n: int, dtype: torch.dtype, repeats: int) -> float:
    """FLOP/s of an n × n × n matmul in ``dtype``."""
    g = torch.Generator(device=device)
    g.manual_seed(0)
    a = torch.randn(n, n, generator=g, device=device).to(dtype)
    b = torch.randn(n, n, generator=g, device=device).to(dtype)
    seconds = best_time(lambda: torch.matmul(a, b), device, repeats)
    return 2 * n**3 / seconds


def fp8_gemm_flops(device: torch.device, n: int, repeats: int) -> float | None:
    """FLOP/s of an FP8 (e4m3) matmul with per-tensor scales, or None where the GPU has no FP8
    tensor cores (or torch no ``_scaled_mm``)."""
    if device.type != "cuda" or not hasattr(torch, "_scaled_mm"):
        return None
    if torch.cuda.get_device_capability(device) < FP8_MIN_CAPABILITY:
        return None
    fp8 = torch.float8_e4m3fn
    a = torch.randn(n, n, device=device).to(fp8)
    b = torch.randn(n, n, device=device).to(fp8).t()  # _scaled_mm wants B column-major
    one = torch.ones((), device=device, dtype=torch.float32)

    def run() -> torch.Tensor:
        return torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)

    try:
        run()
        sync(device)
    except RuntimeError:
        return None
    seconds = best_time(run, device, repeats)
    return 2 * n**3 / seconds


def calibrate(device: str, dims: KernelDims, *, gpu_name: str | None = None) -> Calibration:
    """Time the four rates on ``device`` (``cpu`` or ``cuda``) at the sizes of that device."""
    ctx = make_context(device, dims)
    dev = ctx.device
    n = GEMM_SIZE[dev.type]
    repeats = ctx.sizes.repeats
    with torch.no_grad():
        copy = copy_bandwidth(ctx) * 1e9
        bf16 = gemm_flops(dev, n, ctx.dtype, repeats)
        fp8 = fp8_gemm_flops(dev, n, repeats)
        batch, context = ctx.sizes.concurrency, ctx.sizes.context
        step = mla_step if dims.has_mla else gqa_step
        seconds, read, _ = step(ctx, batch, context)
    name = gpu_name or (torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu")
    family = "absorbed MLA" if dims.has_mla else "GQA"
    how = (
        f"torch {torch.__version__} on {dev.type}"
        + (f" (CUDA {torch.version.cuda})" if dev.type == "cuda" else "")
        + f": copy of {ctx.sizes.copy_bytes:,} B (read + write counted), best of {repeats}; "
        f"{n} x {n} x {n} GEMM in {str(ctx.dtype).removeprefix('torch.')}"
        + ("; FP8 e4m3 _scaled_mm" if fp8 else "; no FP8 GEMM")
        + f"; {family} decode attention of {dims.name}, one layer, {batch} requests x "
        f"{context:,} tokens at the kernels' dims"
        + ("" if dev.type == "cuda" else " (CPU-scaled dims)")
    )
    return Calibration(
        gpu_name=name,
        hbm_bytes_per_s=copy,
        bf16_gemm_flops=bf16,
        fp8_gemm_flops=fp8,
        decode_attention_seconds=seconds,
        decode_attention_bytes=float(read),
        how=how,
    )
