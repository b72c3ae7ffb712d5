"""Torch micro-kernels that check the KV and routing model of steps 1-2 on the machine at hand.

Seven checks (paged KV layout, MLA absorption, decode bandwidth, DSA indexer, prefix caching,
MoE routing, torch.cat vs preallocated KV); each returns ``CheckResult`` rows
{name, passed, measured, expected, unit}. CPU runs small sizes in seconds; CUDA runs the
model's dims. ``python -m engine.measure.kernels [--device cpu|cuda] [--json] [--model-dims JSON]``.

The torch-backed names load on first use: ``engine.facts`` imports ``KernelDims`` from here,
and the sizing and back-calculation paths must not pay torch's import for it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from engine.measure.kernels.dims import PRESETS, KernelDims, Sizes, dims_from_json

if TYPE_CHECKING:
    from engine.measure.kernels.common import CheckResult
    from engine.measure.kernels.runner import CHECK_NAMES, run_all

_LAZY = {
    "CheckResult": "engine.measure.kernels.common",
    "CHECK_NAMES": "engine.measure.kernels.runner",
    "run_all": "engine.measure.kernels.runner",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "CHECK_NAMES",
    "PRESETS",
    "CheckResult",
    "KernelDims",
    "Sizes",
    "dims_from_json",
    "run_all",
]
