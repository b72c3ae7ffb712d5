"""The speed model's few fitted fractions and fixed costs (``data/perf.yaml``), read once.

Physics plus a handful of global factors: the achieved share of HBM bandwidth and of dense
tensor throughput, a kernel floor per layer, the host's dispatch per layer of a prefill, the
engine's cost per step and per running request, a fixed cost per request's first token, and the
collectives' latency and bus efficiency. None is per model, per GPU, per engine or per row;
``tools/fit_perf.py`` fits them on ``data/perf/measured.jsonl`` (a copy of
shared/perf/measured.jsonl), each pulled toward a prior with its source, and writes them back
with the fit's errors and its leave-one-model-, GPU- and source-out checks. ``benchmark`` is how
the measured runs were driven (prompts per client), which TTFT depends on.
"""

from __future__ import annotations

from functools import cache
from typing import Literal

from pydantic import Field

from engine.perf.ranges import ErrorBand, Ranges
from engine.rules import Loose, Strict, load_data

SpecMethod = Literal["mtp", "eagle3"]


class Factor(Strict):
    """One number with its unit and where it comes from (``fitted``: by tools/fit_perf.py)."""

    value: float = Field(ge=0)
    unit: str
    fitted: bool
    source: str = Field(min_length=1)


class Factors(Strict):
    """``data/perf.yaml`` factors. Fractions are of the catalog's figures: the HBM bandwidth and
    the measured matmul ceiling."""

    hbm_fraction: Factor  # weights and KV streamed per step, of the HBM bandwidth
    tensor_fraction: Factor  # GEMMs and attention math, of the GPU's achievable matmul rate
    layer_seconds: Factor  # kernel floor per decoder layer per step (norms, RoPE, launches)
    moe_layer_seconds: Factor  # the MoE layer's own floor: routing, top-k, permute, combine
    prefill_layer_seconds: Factor  # host dispatch per layer of a compiled prefill (no graph)
    eager_prefill_layer_seconds: Factor  # the same for a prefill run eagerly, op by op
    step_seconds: Factor  # scheduler, sampler and launch cost of one step (both engines)
    request_step_seconds: Factor  # per running request per step (sampling, bookkeeping)
    request_seconds: Factor  # per request, once: tokenize, schedule, first sample, detokenize
    collective_latency_seconds: Factor  # one collective inside a node / NVLink domain
    network_latency_seconds: Factor  # one collective that crosses nodes
    bus_efficiency: Factor  # achieved share of the link bandwidth in a collective


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
    which even the current version falls back to eager."""

    prefill: PrefillMode
    eager_before: str | None = None
    eager_when: tuple[EagerWhen, ...] = ()
    source: str = Field(min_length=1)


def version_key(version: str) -> tuple[int, ...]:
    """``0.5.10.post1`` -> (0, 5, 10), ``0.5.3rc0`` -> (0, 5, 3): the release numbers, pre- and
    post-release suffixes dropped."""
    out: list[int] = []
    for part in version.split("."):
        digits = ""
        for ch in part:
            if not ch.isdigit():
                break
            digits += ch
        if not digits:
            break
        out.append(int(digits))
        if digits != part:
            break
    return tuple(out)


class Median(Loose):
    median: float = Field(ge=0)


class CheckRecord(Loose):
    """One leave-out check the fit recorded: the pooled held-out median |error| per metric."""

    tpot: Median
    ttft: Median
    tps_per_gpu: Median


class FitRecord(Loose):
    """What tools/fit_perf.py recorded of its fit (the pages quote the architecture check)."""

    leave_one_model_out: CheckRecord


class PerfFile(Loose):
    factors: Factors
    benchmark: Benchmark
    engines: dict[str, EngineRun]
    speculative: list[Acceptance] = Field(min_length=1)
    ranges: Ranges
    fit: FitRecord


def prefill_mode(
    engine: str, version: str | None, *, amd: bool, dp_attention: bool, pipeline: bool
) -> PrefillMode:
    """How ``engine`` at ``version`` (None: the pinned one) runs a prefill on this layout."""
    run = perf_facts().engines[engine]
    old = version is not None and run.eager_before is not None
    if old and version_key(version or "") < version_key(run.eager_before or ""):
        return "eager"
    when = {"amd": amd, "dp_attention": dp_attention, "pipeline": pipeline}
    if any(when[w] for w in run.eager_when):
        return "eager"
    return run.prefill


def prefill_layer_seconds(f: Factors, mode: PrefillMode) -> float:
    """Host dispatch per layer of a prefill step run ``mode``."""
    factor = f.eager_prefill_layer_seconds if mode == "eager" else f.prefill_layer_seconds
    return factor.value


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
