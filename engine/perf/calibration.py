"""Measured on your GPU: achieved rates that replace the fitted fractions.

``tools/gpu_check.py --calibration FILE`` (the torch micro-kernels) times a large device copy,
BF16 and FP8 GEMMs and the model's decode-attention kernel, and writes this model as JSON;
``estimate(..., calibration=...)`` then uses the measured rates instead of catalog peak × fitted
fraction. Fixed costs (per step, per layer, per request) stay the fitted ones: a micro-kernel
does not see the engine's scheduler.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field


class Calibration(BaseModel):
    """Rates measured on one GPU, in SI units."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    gpu_name: str = Field(min_length=1, max_length=200)  # as torch reports the device
    hbm_bytes_per_s: float = Field(gt=0)  # achieved copy bandwidth, read + write counted
    bf16_gemm_flops: float = Field(gt=0)
    fp8_gemm_flops: float | None = Field(default=None, gt=0)  # None: no FP8 GEMM on this GPU
    decode_attention_seconds: float | None = Field(default=None, gt=0)  # one layer's decode
    decode_attention_bytes: float | None = Field(default=None, gt=0)  # KV that step read
    how: str = Field(min_length=1, max_length=2000)  # sizes, dtypes, torch / CUDA versions

    @property
    def decode_attention_bytes_per_s(self) -> float | None:
        """Achieved KV bandwidth of the decode-attention kernel (None when not measured)."""
        if self.decode_attention_seconds is None or self.decode_attention_bytes is None:
            return None
        return self.decode_attention_bytes / self.decode_attention_seconds


def load_calibration(path: Path) -> Calibration:
    """A calibration JSON file, validated (a bad file raises pydantic's error naming the field)."""
    return Calibration.model_validate_json(path.read_text(encoding="utf-8"))
