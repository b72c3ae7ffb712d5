"""Torch micro-kernels that check the KV and routing model of steps 1-2 on the machine at hand.

Seven checks (paged KV layout, MLA absorption, decode bandwidth, DSA indexer, prefix caching,
MoE routing, torch.cat vs preallocated KV); each returns ``CheckResult`` rows
{name, passed, measured, expected, unit}. CPU runs small sizes in seconds; CUDA runs the
model's dims, built from a config through the engine (``from_model``); the byte checks compare
against the engine's own sizing. ``python -m engine.measure.kernels [--device cpu|cuda] [--json]
[--model SOURCE | --preset NAME] [--model-dims JSON]``.

The torch- and engine-backed names load on first use: the sizing and back-calculation paths
import from here and must not pay torch's import for them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from engine.measure.kernels.dims import EngineKv, KernelDims, Sizes

if TYPE_CHECKING:
    from engine.measure.kernels.common import CheckResult
    from engine.measure.kernels.from_model import (
        PRESETS,
        kernel_dims,
        kernel_layer_groups,
        preset_dims,
    )
    from engine.measure.kernels.runner import CHECK_NAMES, run_all
    from engine.measure.kernels.spec import dims_from_json

_LAZY = {
    "CheckResult": "engine.measure.kernels.common",
    "CHECK_NAMES": "engine.measure.kernels.runner",
    "run_all": "engine.measure.kernels.runner",
    "PRESETS": "engine.measure.kernels.from_model",
    "kernel_dims": "engine.measure.kernels.from_model",
    "kernel_layer_groups": "engine.measure.kernels.from_model",
    "preset_dims": "engine.measure.kernels.from_model",
    "dims_from_json": "engine.measure.kernels.spec",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "CHECK_NAMES",
    "PRESETS",
    "CheckResult",
    "EngineKv",
    "KernelDims",
    "Sizes",
    "dims_from_json",
    "kernel_dims",
    "kernel_layer_groups",
    "preset_dims",
    "run_all",
]
