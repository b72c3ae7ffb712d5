"""What the fit of the speed model's factors pulls each factor toward, and within what bounds
(tools/fit_perf.py): every prior read from a source, every bound saying why.

A global factor has its own prior (``PRIORS``); a software stack's cost has the cost's prior
(``COST_PRIORS``) where the stack is fitted on runs of its own, times the scales of the stacks it
is derived from (``like`` and ``scales`` in data/perf.yaml, each scale with its source): the AMD
stacks start where their CUDA like times HIP's sourced scales puts them, the generic-kernel
stacks where their tuned like times AITER's sourced speed-ups puts them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from engine.perf.factors import perf_facts
from engine.perf.refit import split_name
from engine.perf.stack import STACK_COSTS
from tools.perf_rows import Case, row_prefill_mode


@dataclass(frozen=True)
class Prior:
    """Where a factor starts and is pulled: ``value`` from ``source``, ``sigma`` the spread of
    log(value) the source leaves (wide where it is only an order of magnitude)."""

    value: float
    sigma: float
    source: str


PRIORS: dict[str, Prior] = {
    "hbm_fraction": Prior(
        0.8,
        0.15,
        "aiconfigurator systems/*.yaml mem_bw_empirical_scaling_factor 0.8 ('nonofficial "
        "correction based on observations')",
    ),
    "tensor_fraction": Prior(
        0.75,
        0.35,
        "stas00/ml-engineering compute/accelerator: the rate is a share of the GPU's Maximum "
        "Achievable Matmul FLOPS (data/gpus.yaml matmul: the best shape's rate, 80.3 % of the "
        "BF16 peak on H100 SXM); serving GEMMs are smaller than the best shape and 'around 50 % "
        "MFU is considered a win' (0.62 of an H100's MAMF): 0.75 between them",
    ),
}

# the software stacks' costs (engine.perf.stack), each stack with measured runs pulled toward these
COST_PRIORS: dict[str, Prior] = {
    "kernel_seconds": Prior(
        3e-6,
        0.7,
        "one kernel of a replayed CUDA graph: its launch gap and a tiny kernel's own floor, a few "
        "us (aiconfigurator mem_empirical_constant_latency: 3 us per memory op; a graph replay "
        "costs ~0.58 us per node of submission, ahrefs/ocannl issue #488)",
    ),
    "eager_kernel_seconds": Prior(
        1e-4,
        0.7,
        "[order of magnitude] one fused kernel's worth of eager PyTorch: several unfused ops, "
        "each Python, the dispatcher and a launch (~6.4 us per individual CUDA launch + sync, "
        "ahrefs/ocannl issue #488)",
    ),
    "prefill_kernel_seconds": Prior(
        6.7e-5,
        0.5,
        "aiconfigurator vllm_backend._prefill_dispatch_overhead_ms: 0.8 ms x num_layers "
        "('calibrated against the full silicon corpus (947 vLLM agg entries)') over ~12 kernels "
        "per layer (data/perf.yaml kernels)",
    ),
    "step_seconds": Prior(
        1e-3,
        1.5,
        "[order of magnitude] one scheduler pass, sampler and output processing per step",
    ),
    "request_step_seconds": Prior(
        2e-5,
        1.5,
        "[order of magnitude] per running request per step: its sampling and bookkeeping",
    ),
    "request_seconds": Prior(
        1e-2,
        1.5,
        "[order of magnitude] tokenize, admit, sample and detokenize one request, once",
    ),
    "collective_latency_seconds": Prior(
        1e-5,
        0.7,
        "aiconfigurator systems/h800_sxm.yaml p2p_latency 0.00001 (10 us)",
    ),
    "efficiency": Prior(
        1.0,
        0.3,
        "the stacks the global fractions are fitted on reach them (x1); another vendor's tuned "
        "library is pulled toward the same share",
    ),
}

# name -> (lower, upper, why)
BOUNDS: dict[str, tuple[float, float, str]] = {
    "hbm_fraction": (0.3, 1.0, "a share of the datasheet's bandwidth"),
    "tensor_fraction": (0.1, 1.0, "a share of the GPU's measured matmul ceiling"),
    "kernel_seconds": (3e-7, 3e-5, "a graph-replayed kernel: 0.3 us to 30 us"),
    "eager_kernel_seconds": (3e-6, 1e-3, "a host-launched kernel: a launch (3 us) to 1 ms"),
    "prefill_kernel_seconds": (1e-7, 1e-3, "a compiled prefill's dispatch per kernel: to 1 ms"),
    "step_seconds": (1e-5, 0.02, "a scheduler pass: above 10 us, below a 20 ms stall"),
    "request_step_seconds": (1e-8, 2e-4, "below a decode step's own floor per request"),
    "request_seconds": (1e-4, 0.3, "a request's fixed cost: 0.1 ms to 300 ms"),
    "collective_latency_seconds": (1e-6, 1e-4, "NVLink / PCIe hop: 1 us to 100 us"),
    "efficiency": (
        0.1,
        1.25,
        "a share of the global fractions: a tenth of them to a quarter above (the global "
        "hbm_fraction times it stays a share of the datasheet's bandwidth)",
    ),
}
GLOBAL = ("hbm_fraction", "tensor_fraction")


def prior_of(name: str) -> Prior:
    """A factor's prior: a global one's, or a stack cost's times the scales of the stacks it is
    derived from (its like's, its like's like's, ...), each with its source."""
    key, cost = split_name(name)
    if key is None:
        return PRIORS[cost]
    p = COST_PRIORS[cost]
    stacks = {s.key: s for s in perf_facts().factors.stacks}
    value, sources = p.value, [p.source]
    stack = stacks.get(key)
    while stack is not None and stack.like is not None:
        scale = stack.scales.get(cost)
        if scale is not None:
            value *= scale.value
            sources.append(f"x {scale.value:g} ({stack.key} over {stack.like}): {scale.source}")
        stack = stacks.get(stack.like)
    return Prior(value, p.sigma, "; ".join(sources))


def clip(name: str, v: float) -> float:
    lo, hi, _ = BOUNDS[split_name(name)[1]]
    return min(max(v, lo), hi)


def fit_names(rows: Sequence[tuple[Case, str]]) -> list[str]:
    """The factors ``rows`` (each a run and the stack key it runs on) constrain: the global
    ones, and each factor of a stack its runs exercise: the kernel floor of the mode its decode
    steps run in (graphs, or eager), the dispatch of the mode its prefills run in (compiled, or
    eager), its step, request and collective costs, and, for a stack derived from another
    vendor's or kernel path's (``like``), its kernels' efficiency."""
    names = list(GLOBAL)
    used: dict[str, set[str]] = {}
    stacks = {s.key: s for s in perf_facts().factors.stacks}
    for c, key in rows:
        mine = used.setdefault(key, set())
        mine.add("eager_kernel_seconds" if c.eager else "kernel_seconds")
        mode = row_prefill_mode(c)
        mine.add("eager_kernel_seconds" if mode == "eager" else "prefill_kernel_seconds")
        if stacks[key].like is not None:
            mine.add("efficiency")
    always = ("step_seconds", "request_step_seconds", "request_seconds")
    for key in sorted(used):
        names += [
            f"{key}.{c}"
            for c in (*STACK_COSTS, "efficiency")
            if c in always or c == "collective_latency_seconds" or c in used[key]
        ]
    return names
