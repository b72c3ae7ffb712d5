"""Measured on your GPU: achieved rates that replace the fitted fractions.

``tools/gpu_check.py --calibration FILE`` (the torch micro-kernels) times a large device copy,
BF16 and FP8 GEMMs and the model's decode-attention kernel, and writes this model as JSON;
``estimate(..., calibration=...)`` then uses the measured rates instead of catalog figure × fitted
fraction. Fixed costs (per step, per layer, per request) stay the fitted ones: a micro-kernel
does not see the engine's scheduler.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from engine import errors as E
from engine.decision import Code, Name
from engine.errors import InputError
from engine.hardware.gpus import Gpu
from engine.perf.held import Held
from engine.perf.physics import measured


class Calibration(BaseModel):
    """Rates measured on one GPU, in SI units."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    gpu_name: str = Field(min_length=1, max_length=200)  # as torch reports the device
    # achieved copy bandwidth, read + write counted; finite (JSON's Infinity and NaN, and a
    # 1e309 that reads as infinity, are refused); physics against the GPU in ``check``
    hbm_bytes_per_s: float = Field(gt=0, allow_inf_nan=False)
    bf16_gemm_flops: float = Field(gt=0, allow_inf_nan=False)
    # None: no FP8 GEMM on this GPU
    fp8_gemm_flops: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    # one layer's decode, and the KV that step read
    decode_attention_seconds: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    decode_attention_bytes: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    how: str = Field(min_length=1, max_length=2000)  # sizes, dtypes, torch / CUDA versions

    @property
    def decode_attention_bytes_per_s(self) -> float | None:
        """Achieved KV bandwidth of the decode-attention kernel (None when not measured)."""
        if self.decode_attention_seconds is None or self.decode_attention_bytes is None:
            return None
        return self.decode_attention_bytes / self.decode_attention_seconds


MAX_CALIBRATION_BYTES = 65_536  # a calibration is a few hundred bytes of JSON
MAX_HELD = 256

# what a calibration must be (data/i18n/<lang>/errors.yaml)
CAL_SIZE = Code("error.calibration.size", "most")
CAL_JSON = Code("error.calibration.json", "where", "problem")
CAL_HELD = Code("error.calibration.held")

_held: Held[Calibration] = Held(MAX_HELD)


def parse_calibration(data: bytes | str) -> Calibration:
    """A calibration from JSON text, validated; bad input is an InputError naming the field."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    if len(raw) > MAX_CALIBRATION_BYTES:
        raise InputError("calibration", CAL_SIZE(most=MAX_CALIBRATION_BYTES))
    try:
        return Calibration.model_validate_json(raw)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(x) for x in first["loc"]) or "calibration"
        problem = E.VALID(kind=Name(first["type"]), got=E.got(first.get("input")))
        raise InputError("calibration", CAL_JSON(where=Name(where), problem=problem)) from None


def check(cal: Calibration, gpu: Gpu) -> Calibration:
    """``cal`` when every rate it measured is physics on ``gpu`` (engine.perf.physics: within
    ``FACTOR`` of the catalog's figure for it); else ``InputError`` naming the rate."""
    bandwidth = gpu.bandwidth_bytes_per_s
    measured("calibration.hbm_bytes_per_s", cal.hbm_bytes_per_s, bandwidth, "B/s")
    measured("calibration.bf16_gemm_flops", cal.bf16_gemm_flops, gpu.bf16_tflops * 1e12, "FLOP/s")
    if cal.fp8_gemm_flops is not None:
        peak = (gpu.fp8_tflops or gpu.bf16_tflops) * 1e12  # no FP8 units: emulated, at most BF16
        measured("calibration.fp8_gemm_flops", cal.fp8_gemm_flops, peak, "FLOP/s")
    attention = cal.decode_attention_bytes_per_s
    if attention is not None:
        measured("calibration.decode_attention_bytes_per_s", attention, bandwidth, "B/s")
    return cal


def load_calibration(path: Path) -> Calibration:
    """A calibration JSON file, validated. Opened without blocking and read only when it is a
    regular file: a FIFO, a terminal or /dev/stdin would wait for a writer that never comes."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except OSError as err:
        raise InputError("calibration", E.readable(err)) from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise InputError("calibration", E.REGULAR_FILE())
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(MAX_CALIBRATION_BYTES + 1)
    except OSError as err:
        raise InputError("calibration", E.readable(err)) from None
    finally:
        os.close(fd)
    return parse_calibration(data)


def put(cal: Calibration) -> str:
    """Hold ``cal`` and return its digest (a Scenario names a calibration by it)."""
    return _held.put(cal)


def get(digest: str) -> Calibration:
    cal = _held.get(digest)
    if cal is None:
        raise InputError("calibration", CAL_HELD())
    return cal
