"""What the speed model answers: a ``Speed`` (TTFT, TPOT, tokens/s, each with the range the
model's own out-of-sample errors give it), the phases and terms under it, its formula."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engine.perf.ranges import ErrorBand, Metric, overlap
from engine.perf.terms import PhaseBound, Term


@dataclass(frozen=True)
class Phase:
    """One step of a phase: its terms, their sum and the bound that takes the most time."""

    seconds: float
    bound: PhaseBound
    terms: tuple[Term, ...]


@dataclass(frozen=True)
class Formula:
    """The numbers behind each result, as numbers, units and operators only (the pages word
    the left-hand sides per language): one decode step, one prefill chunk, TTFT, TPOT and the
    output tokens per second per GPU."""

    decode_step: str
    prefill_step: str
    ttft: str
    tpot: str
    per_gpu: str

    @property
    def text(self) -> str:
        return " ; ".join((self.decode_step, self.prefill_step, self.ttft, self.tpot, self.per_gpu))


def _terms_json(p: Phase | None) -> list[dict[str, Any]]:
    if p is None:
        return []
    return [
        {
            "op": t.code,
            "bytes": t.bytes,
            "flops": t.flops,
            "seconds": t.seconds,
            "bound": t.bound,
            "count": t.count,
        }
        for t in p.terms
    ]


@dataclass(frozen=True)
class Speed:
    ttft_ms: float
    tpot_ms: float
    output_tokens_per_s_per_user: float
    output_tokens_per_s_per_gpu: float
    output_tokens_per_s: float  # over every replica
    decode_bound: PhaseBound
    prefill_bound: PhaseBound
    decode: Phase  # one decode step (the verify pass with speculative decoding)
    draft: Phase | None  # one draft pass
    prefill: Phase  # one full prefill chunk
    accepted_tokens_per_step: float
    chunk_tokens: int
    gpus: int  # over every replica
    measured: bool  # rates from a Calibration, not catalog × fitted fractions
    formula: Formula
    band: ErrorBand  # the model's out-of-sample errors for this engine and vendor stack

    @property
    def bound(self) -> dict[str, PhaseBound]:
        return {"prefill": self.prefill_bound, "decode": self.decode_bound}

    @property
    def ttft_ms_range(self) -> tuple[float, float]:
        """Where the measured TTFT likely falls (``data/perf.yaml`` ranges)."""
        return self.band.around("ttft", self.ttft_ms)

    @property
    def tpot_ms_range(self) -> tuple[float, float]:
        return self.band.around("tpot", self.tpot_ms)

    @property
    def output_tokens_per_s_per_gpu_range(self) -> tuple[float, float]:
        return self.band.around("tps_per_gpu", self.output_tokens_per_s_per_gpu)

    def range_of(self, metric: Metric) -> tuple[float, float]:
        return {
            "ttft": self.ttft_ms_range,
            "tpot": self.tpot_ms_range,
            "tps_per_gpu": self.output_tokens_per_s_per_gpu_range,
        }[metric]

    def to_json(self) -> dict[str, Any]:
        return {
            "ttft_ms": self.ttft_ms,
            "ttft_ms_range": list(self.ttft_ms_range),
            "tpot_ms": self.tpot_ms,
            "tpot_ms_range": list(self.tpot_ms_range),
            "output_tokens_per_s_per_user": self.output_tokens_per_s_per_user,
            "output_tokens_per_s_per_gpu": self.output_tokens_per_s_per_gpu,
            "output_tokens_per_s_per_gpu_range": list(self.output_tokens_per_s_per_gpu_range),
            "output_tokens_per_s": self.output_tokens_per_s,
            "bound": self.bound,
            "formula": {
                "terms": _terms_json(self.prefill) + _terms_json(self.decode)
                + _terms_json(self.draft),
                "decode_step": self.formula.decode_step,
                "prefill_step": self.formula.prefill_step,
                "ttft": self.formula.ttft,
                "tpot": self.formula.tpot,
                "output_tokens_per_s_per_gpu": self.formula.per_gpu,
            },
        }  # fmt: skip


def speeds_overlap(a: Speed, b: Speed, metric: Metric) -> bool:
    """Whether the model cannot tell ``a`` from ``b`` on ``metric`` (``ttft``, ``tpot`` or
    ``tps_per_gpu``): their likely ranges overlap. The search treats such speeds as a tie."""
    return overlap(a.range_of(metric), b.range_of(metric))
