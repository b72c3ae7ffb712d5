"""What every micro-kernel check shares: its result row, its run context, and a timer."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch

from engine import errors as E
from engine.decision import Decision
from engine.errors import InputError
from engine.measure.kernel_notes import CPU_TARGET, GPU_TARGET
from engine.measure.kernels.dims import DEVICE, NO_CUDA, EngineKv, KernelDims, Sizes
from engine.measure.reading import as_printed


@dataclass(frozen=True)
class CheckResult:
    """One number a check measured, what it should be, and whether it is.

    ``expected`` is None for a number that is only reported. Timings are reported and, on
    CPU, only checked for being positive; their GPU targets are in the note. ``why`` is the
    note as a decision (engine.measure.kernel_notes), worded in the reader's language.
    """

    check: str
    name: str
    passed: bool
    measured: float
    expected: float | None
    unit: str
    why: Decision | None = None


@dataclass(frozen=True)
class Ctx:
    """Where and at what sizes a check runs."""

    device: torch.device
    dims: KernelDims  # the model's real dims: formula checks use these everywhere
    work: KernelDims  # dims for tensor-heavy checks: scaled on CPU, real on CUDA
    sizes: Sizes
    catalog_gbps: float | None
    seed: int = 0
    # The engine's own KV numbers for the model (engine.kv.sizing): the byte checks compare
    # real allocations with these, never with a formula of their own.
    kv: EngineKv | None = None

    @property
    def on_gpu(self) -> bool:
        return self.device.type == "cuda"

    @property
    def dtype(self) -> torch.dtype:
        """Timing dtype: bf16 as served on GPU; fp32 on CPU, where bf16 matmuls crawl."""
        return torch.bfloat16 if self.on_gpu else torch.float32

    def generator(self, offset: int = 0) -> torch.Generator:
        g = torch.Generator(device=self.device)
        g.manual_seed(self.seed + offset)
        return g

    def randn(
        self, *shape: int, g: torch.Generator, dtype: torch.dtype | None = None, scale: float = 1.0
    ) -> torch.Tensor:
        t = torch.randn(*shape, generator=g, device=self.device, dtype=torch.float32)
        if scale != 1.0:
            t.mul_(scale)
        return t.to(dtype or torch.float32)


def resolve_device(device: str) -> torch.device:
    if device not in ("cpu", "cuda"):
        raise InputError("device", DEVICE(got=E.got(device)))
    if device == "cuda" and not torch.cuda.is_available():
        raise InputError("device", NO_CUDA())
    return torch.device(device)


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def best_time(
    fn: Callable[[], object], device: torch.device, repeats: int, warmup: int = 1
) -> float:
    """Fastest of ``repeats`` runs after ``warmup``, in seconds (the least-disturbed run)."""
    for _ in range(warmup):
        fn()
    sync(device)
    best = math.inf
    for _ in range(max(1, repeats)):
        start = time.perf_counter()
        fn()
        sync(device)
        best = min(best, time.perf_counter() - start)
    return best


def timing_row(
    ctx: Ctx, check: str, name: str, seconds: float, note: Decision | None = None
) -> CheckResult:
    """A timing: reported, never asserted; passes when it is a positive finite number."""
    ms = seconds * 1e3
    return CheckResult(check, name, math.isfinite(ms) and ms > 0, ms, None, "ms", note)


def target_row(
    ctx: Ctx, check: str, name: str, measured: float, target: float, unit: str, note: Decision
) -> CheckResult:
    """A GPU performance target: asserted on CUDA, only "positive and finite" on CPU."""
    ok = math.isfinite(measured) and measured > 0
    if ctx.on_gpu:
        ok = ok and measured >= target
        why = GPU_TARGET(target=as_printed(target), note=note)
    else:
        why = CPU_TARGET(target=as_printed(target), note=note)
    return CheckResult(check, name, ok, measured, target, unit, why)


def exact_row(
    check: str, name: str, measured: float, expected: float, unit: str, note: Decision | None = None
) -> CheckResult:
    return CheckResult(
        check, name, measured == expected, float(measured), float(expected), unit, note
    )


def within_row(
    check: str,
    name: str,
    measured: float,
    tolerance: float,
    unit: str,
    note: Decision | None = None,
) -> CheckResult:
    """An error that must be at most ``tolerance`` (``expected`` holds the tolerance)."""
    ok = math.isfinite(measured) and measured <= tolerance
    return CheckResult(check, name, ok, float(measured), float(tolerance), unit, note)


def info_row(check: str, name: str, measured: float, unit: str, note: Decision) -> CheckResult:
    """A number worth seeing that has no pass/fail of its own."""
    return CheckResult(check, name, math.isfinite(measured), float(measured), None, unit, note)


def rel_err(a: torch.Tensor, b: torch.Tensor) -> float:
    """max |a - b| / max |b|, in float64."""
    a64, b64 = a.double(), b.double()
    scale = b64.abs().max().item() or 1.0
    return (a64 - b64).abs().max().item() / scale
