"""Torch micro-kernels that check the KV and routing model of steps 1-2 on the machine at hand.

Seven checks (paged KV layout, MLA absorption, decode bandwidth, DSA indexer, prefix caching,
MoE routing, torch.cat vs preallocated KV); each returns ``CheckResult`` rows
{name, passed, measured, expected, unit}. CPU runs small sizes in seconds; CUDA runs the
model's dims. ``python -m engine.kernels [--device cpu|cuda] [--json] [--model-dims JSON]``.
"""

from engine.kernels.common import CheckResult
from engine.kernels.dims import PRESETS, KernelDims, Sizes, dims_from_json
from engine.kernels.runner import CHECK_NAMES, run_all

__all__ = [
    "CHECK_NAMES",
    "PRESETS",
    "CheckResult",
    "KernelDims",
    "Sizes",
    "dims_from_json",
    "run_all",
]
