"""The speed model's few fitted fractions and fixed costs (``data/perf.yaml``), read once.

Physics, global: the achieved share of HBM bandwidth and of the matmul ceiling, the link's bus
efficiency and the network's latency. Fixed costs, per software stack (``engine.perf.stack``:
an engine on a vendor's stack): the kernel floor, the host's launch and dispatch, the engine's
cost per step, per running request and per request, the collectives' latency. None is per
model, per GPU or per row; ``tools/fit_perf.py`` fits them on ``data/perf/*.jsonl``, each pulled
toward a prior with its source, and writes them back with the fit's errors and its leave-one-
model-, GPU- and source-out checks. ``benchmark`` is how the measured runs were driven (prompts
per client), which TTFT depends on.
"""

from __future__ import annotations

from functools import cache
from typing import Literal

from pydantic import Field, model_validator

from engine.perf.balance import DpBalance
from engine.perf.ranges import ErrorBand, Ranges
from engine.perf.stack import Factor, KernelPath, Kernels, Stack
from engine.rules import Loose, Strict, load_data
from engine.versions import loose_version_key, version_key

SpecMethod = Literal["mtp", "eagle3"]


class Factors(Strict):
    """``data/perf.yaml`` factors: the physics, global (fractions of the catalog's figures: the
    HBM bandwidth and the measured matmul ceiling), and the fixed costs of each software stack.
    ``estimate(factors=...)`` runs the model on another set (a refit, a calibration on a user's
    benchmark: ``with_stack`` replaces one stack's costs)."""

    hbm_fraction: Factor  # weights and KV streamed per step, of the HBM bandwidth
    tensor_fraction: Factor  # GEMMs and attention math, of the GPU's achievable matmul rate
    network_latency_seconds: Factor  # one collective that crosses nodes
    bus_efficiency: Factor  # achieved share of the link bandwidth in a collective
    stacks: tuple[Stack, ...] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique_stacks(self) -> Factors:
        keys = [s.key for s in self.stacks]
        if len(set(keys)) != len(keys):
            raise ValueError(f"stacks listed twice: {sorted(k for k in keys if keys.count(k) > 1)}")
        for i, s in enumerate(self.stacks):
            if s.like is not None and s.like not in keys[:i]:
                raise ValueError(f"{s.key}: like {s.like} is no stack listed before it")
        kinds = [(s.engine, s.vendor, s.kernels) for s in self.stacks]
        if len(set(kinds)) != len(kinds):
            raise ValueError("two stacks of one engine, vendor and kernel path")
        return self

    def stack(self, engine: str, vendor: str, kernels: KernelPath = "tuned") -> Stack:
        """The stack of ``engine`` on ``vendor``'s GPUs running ``kernels`` (``kernel_path``); an
        engine with no row of its own (the bench's TensorRT-LLM rows run through the vLLM
        adapter) is never asked here."""
        for s in self.stacks:
            if s.engine == engine and s.vendor == vendor and s.kernels == kernels:
                return s
        raise KeyError(f"no software stack for {engine} on {vendor} ({kernels} kernels)")

    def with_stack(self, stack: Stack) -> Factors:
        """These factors with ``stack`` in place of the row of the same key (validated)."""
        if stack.key not in {s.key for s in self.stacks}:
            raise KeyError(f"no software stack {stack.key}")
        rows = [(stack if s.key == stack.key else s).model_dump() for s in self.stacks]
        return Factors.model_validate({**self.model_dump(), "stacks": rows})


class Acceptance(Strict):
    """Tokens a speculative step commits on average (the bonus token included)."""

    method: SpecMethod
    draft_tokens: int = Field(ge=1)
    accepted_tokens_per_step: float = Field(ge=1)
    source: str = Field(min_length=1)


class Benchmark(Strict):
    """How the measured runs drive an engine, so TTFT means what they measure: each of the B
    clients sends ``prompts_per_client`` requests one after the other (``--num-prompts`` =
    that × ``--max-concurrency``), all B first ones at once."""

    prompts_per_client: float = Field(ge=1)
    source: str = Field(min_length=1)


PrefillMode = Literal["compiled", "eager"]
EagerWhen = Literal["amd", "dp_attention", "pipeline"]


class EngineRun(Strict):
    """How an engine runs a prefill step, read from its own code: ``compiled`` (torch.compile'd
    model code or captured piecewise CUDA graphs: a few launches per layer) or ``eager`` (the
    model's Python runs op by op, every kernel launched by the host). ``eager_before``: the
    version from which ``prefill`` holds (older ones ran eagerly); ``eager_when``: the cases in
    which even the current version falls back to eager. ``dp_balance``: how it spreads requests
    over DP-attention ranks (``engine.perf.balance``)."""

    prefill: PrefillMode
    eager_before: str | None = None
    eager_when: tuple[EagerWhen, ...] = ()
    source: str = Field(min_length=1)
    dp_balance: DpBalance
    dp_balance_source: str = Field(min_length=1)
    # ROCm: the release from which the engine routes a GPU architecture (gfx942, ...) to its
    # tuned AITER kernels; an architecture not listed is routed there in every release read
    rocm_tuned_since: dict[str, str] = Field(default_factory=dict)
    rocm_tuned_source: str | None = None


class Routing(Strict):
    """How unevenly a MoE router picks its experts: the hottest expert's load over the mean, as
    measured on a model of ``experts`` experts (``engine.perf.balance.popularity_sigma``)."""

    hottest_over_mean: float = Field(ge=1)
    experts: int = Field(ge=2)
    source: str = Field(min_length=1)


class Median(Loose):
    median: float = Field(ge=0)


class CheckRecord(Loose):
    """One leave-out check the fit recorded: the pooled held-out median |error| per metric."""

    tpot: Median
    ttft: Median
    tps_per_gpu: Median


class Counted(Median):
    rows: int = Field(ge=1)


class UnseenRecord(Loose):
    """The median |error| per metric on the published runs the fit never saw, and where from."""

    source: str = Field(min_length=1)
    tpot: Counted
    ttft: Counted
    tps_per_gpu: Counted


class FitRecord(Loose):
    """What tools/fit_perf.py recorded of its fit (the pages quote the source check: issue 27's
    measure, each source's runs predicted by a fit that never saw them)."""

    leave_one_source_out: CheckRecord
    # the recorded factors on every published run of the fitted engines they never saw
    unseen: UnseenRecord


class PerfFile(Loose):
    factors: Factors
    benchmark: Benchmark
    engines: dict[str, EngineRun]
    speculative: list[Acceptance] = Field(min_length=1)
    kernels: Kernels
    routing: Routing
    ranges: Ranges
    fit: FitRecord


def prefill_mode(
    engine: str, version: str | None, *, amd: bool, dp_attention: bool, pipeline: bool
) -> PrefillMode:
    """How ``engine`` at ``version`` (None: the pinned one) runs a prefill on this layout."""
    run = perf_facts().engines[engine]
    if version is not None and run.eager_before is not None:
        key = loose_version_key(version)
        if key is None or key < version_key(run.eager_before):
            return "eager"
    when = {"amd": amd, "dp_attention": dp_attention, "pipeline": pipeline}
    if any(when[w] for w in run.eager_when):
        return "eager"
    return run.prefill


def kernel_path(
    engine: str, version: str | None, *, vendor: str, arch: str, aiter: bool = True
) -> KernelPath:
    """The kernels ``engine`` at ``version`` (None: the pinned one) runs on a GPU of ``vendor``
    and ``arch``: tuned (CUDA's; ROCm's AITER where the launch turns it on, ``aiter``, and the
    release routes the architecture to it, ``rocm_tuned_since``) or the generic fallbacks."""
    if vendor != "amd":
        return "tuned"
    if not aiter:
        return "generic"
    since = perf_facts().engines[engine].rocm_tuned_since.get(arch)
    key = loose_version_key(version) if version is not None else None
    if since is not None and key is not None and key < version_key(since):
        return "generic"
    return "tuned"


@cache
def perf_facts() -> PerfFile:
    """``data/perf.yaml``, validated once."""
    return load_data(PerfFile, "perf.yaml")


def error_band(engine: str, vendor: str) -> ErrorBand:
    """The out-of-sample error band of ``engine`` on ``vendor``'s stack (``data/perf.yaml``
    ranges)."""
    return perf_facts().ranges.band(engine, vendor)


def acceptance(method: SpecMethod, draft_tokens: int) -> Acceptance:
    """The data row for ``method`` nearest ``draft_tokens`` (more drafts never accept fewer
    tokens than fewer drafts did, nor more than draft_tokens + 1)."""
    rows = [a for a in perf_facts().speculative if a.method == method]
    best = min(rows, key=lambda a: (abs(a.draft_tokens - draft_tokens), a.draft_tokens))
    return best
