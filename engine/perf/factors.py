"""The speed model's few fitted fractions and fixed costs (``data/perf.yaml``), read once.

Physics plus a handful of global factors: the achieved share of HBM bandwidth and of dense
tensor throughput, a kernel floor per layer, the engine's cost per step and per running request,
a fixed cost per request's first token, how bunched arrivals queue, and the collectives' latency
and bus efficiency. None is per model, per GPU or per row; ``tools/fit_perf.py`` fits them on
``data/perf/measured.jsonl`` (a copy of shared/perf/measured.jsonl) and writes them back with the
fit's errors and its leave-one-out check.
"""

from __future__ import annotations

from functools import cache
from typing import Literal

from pydantic import Field

from engine.launch.memory import Engine
from engine.rules import Loose, Strict, load_data

SpecMethod = Literal["mtp", "eagle3"]


class Factor(Strict):
    """One number with its unit and where it comes from (``fitted``: by tools/fit_perf.py)."""

    value: float = Field(ge=0)
    unit: str
    fitted: bool
    source: str = Field(min_length=1)


class Factors(Strict):
    """``data/perf.yaml`` factors. Fractions are of the catalog's peak figures."""

    hbm_fraction: Factor  # weights and KV streamed per step, of the HBM bandwidth
    tensor_fraction: Factor  # GEMMs and attention math, of the dense tensor throughput
    layer_seconds: Factor  # kernel floor per decoder layer per step (norms, RoPE, launches)
    moe_layer_seconds: Factor  # the MoE layer's own floor: routing, top-k, permute, combine
    prefill_layer_seconds: Factor  # host dispatch per layer of an eager (graph-less) prefill
    step_seconds: Factor  # scheduler, sampler and launch cost of one step (both engines)
    request_step_seconds: Factor  # per running request per step (sampling, bookkeeping)
    ttft_seconds_vllm: Factor  # per request, once: tokenize, schedule, first sample, detokenize
    ttft_seconds_sglang: Factor  # the same for SGLang (its tokenizer, scheduler, detokenizer
    # processes talk over ZMQ)
    burst_share: Factor  # share of a wave of arrivals that queues behind the others' prefill
    collective_latency_seconds: Factor  # one collective inside a node / NVLink domain
    network_latency_seconds: Factor  # one collective that crosses nodes
    bus_efficiency: Factor  # achieved share of the link bandwidth in a collective

    def ttft_seconds(self, engine: Engine) -> float:
        factor: Factor = getattr(self, f"ttft_seconds_{engine}")
        return factor.value


class Acceptance(Strict):
    """Tokens a speculative step commits on average (the bonus token included)."""

    method: SpecMethod
    draft_tokens: int = Field(ge=1)
    accepted_tokens_per_step: float = Field(ge=1)
    source: str = Field(min_length=1)


class PerfFile(Loose):
    factors: Factors
    speculative: list[Acceptance] = Field(min_length=1)


@cache
def perf_facts() -> PerfFile:
    """``data/perf.yaml``, validated once."""
    return load_data(PerfFile, "perf.yaml")


def acceptance(method: SpecMethod, draft_tokens: int) -> Acceptance:
    """The data row for ``method`` nearest ``draft_tokens`` (more drafts never accept fewer
    tokens than fewer drafts did, nor more than draft_tokens + 1)."""
    rows = [a for a in perf_facts().speculative if a.method == method]
    best = min(rows, key=lambda a: (abs(a.draft_tokens - draft_tokens), a.draft_tokens))
    return best
