"""The disaggregated candidate of a scenario: the pools sized for its request rate within its
targets (``engine.disagg.sizing``), their speed as one ``Speed`` (TTFT through the prefill pool,
the KV transfer and the decode worker's first step; TPOT of the decode pool; tokens/s per GPU
over both pools), with the range of the speed model's own error and every number's formula; or
why there is none.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

from engine.decision import Code, Decimal, Decision
from engine.disagg.sizing import Sized
from engine.perf.factors import error_band
from engine.perf.speed import Formula, Phase, Speed

# why there is no disaggregated candidate
NONE_WORKERS = Code("disagg.none.workers", "role")
NONE_TPOT = Code("disagg.none.tpot", "target")
NONE_TTFT = Code("disagg.none.ttft", "target")
ROLE = {"prefill": Code("disagg.role.prefill"), "decode": Code("disagg.role.decode")}
MS = "ms"


@dataclass(frozen=True)
class Targets:
    """What the pools are sized to: the TTFT target (None: none asked; the prefill queue need
    only drain), the TPOT target or bound (inf: none, throughput first)."""

    ttft_s: float | None
    tpot_s: float


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.4g} ms"


def _sum(p: Phase) -> str:
    return " + ".join(_ms(t.seconds) for t in p.terms) + f" = {_ms(p.seconds)}"


def _formula(z: Sized) -> Formula:
    """The numbers behind each figure, operators and units only (the pages word them)."""
    pw, dw = z.prefill.worker, z.decode.worker
    rate = z.rate / z.prefill.workers
    rho = rate * pw.stage_seconds / pw.scheduler.dp
    wait = z.prefill_ttft - pw.latency_seconds - pw.prompt_seconds
    ttft = (
        f"{_ms(z.prefill_ttft)} + {_ms(z.transfer.seconds)} + 1.5 × {_ms(z.step)}"
        f" = {_ms(z.ttft)} ; {_ms(z.prefill_ttft)} = {_ms(pw.latency_seconds)}"
        f" + {_ms(pw.prompt_seconds)} + {rho:.3f} / (2 × (1 − {rho:.3f})) × {_ms(pw.stage_seconds)}"
        f" ({_ms(wait)}) ; ρ = {z.rate:g} /s / {z.prefill.workers} × {_ms(pw.stage_seconds)}"
        f" / {pw.scheduler.dp} ; {z.transfer.formula}"
    )
    residency = z.transfer.seconds + (z.osl - 1) * z.tpot
    tpot = (
        f"TPOT({z.running}) = {_ms(z.tpot)} ;"
        f" c = {z.rate:g} /s / {z.decode.workers} × ({_ms(z.transfer.seconds)} + ({z.osl} − 1)"
        f" × {_ms(z.tpot)}) = {z.rate / z.decode.workers * residency:.3g}"
        f" ≤ C* = {z.most}"
    )
    per_gpu = z.output_tokens_per_s / z.gpus
    return Formula(
        decode_step=_sum(dw.model.decode_pass(*_micro(z))),
        prefill_step=_sum(pw.model.prefill_chunk()),
        ttft=ttft,
        tpot=tpot,
        per_gpu=(
            f"{z.rate:g} /s × {z.osl} / ({z.prefill.workers} × {pw.gpus} + {z.decode.workers}"
            f" × {dw.gpus}) = {per_gpu:.4g} /s"
        ),
    )


def _micro(z: Sized) -> tuple[int, int]:
    """(the busiest rank's micro-batch, every rank's) of a decode worker's step."""
    s = z.decode.worker.scheduler
    micro = math.ceil(math.ceil(z.running / s.dp) / s.pp)
    return micro, micro * s.dp


def pools_speed(z: Sized) -> Speed:
    """The pools' speed as one figure a user sees: TTFT and TPOT of a request, tokens/s per
    user, per GPU over both pools and in all at the rate."""
    pw, dw = z.prefill.worker, z.decode.worker
    decode = dw.model.decode_pass(*_micro(z))
    prefill = pw.model.prefill_chunk()
    inp = dw.model.inp
    return Speed(
        ttft_ms=z.ttft * 1e3,
        ttft_median_ms=z.ttft * 1e3,  # the pools' steady state at the rate: no first wave
        tpot_ms=z.tpot * 1e3,
        output_tokens_per_s_per_user=1.0 / z.tpot,
        output_tokens_per_s_per_gpu=z.output_tokens_per_s / z.gpus,
        output_tokens_per_s=z.output_tokens_per_s,
        decode_bound=decode.bound,
        prefill_bound=prefill.bound,
        decode=decode,
        draft=dw.model.draft_pass(_micro(z)[0]),
        prefill=prefill,
        accepted_tokens_per_step=dw.model.accepted,
        chunk_tokens=pw.model.budget,
        gpus=z.gpus,
        measured=dw.model.rates.measured,
        formula=_formula(z),
        band=error_band(inp.engine, inp.gpu.vendor),
    )


@dataclass(frozen=True)
class Disaggregated:
    """The scenario's disaggregated candidate at ``rate`` requests/s: the sized pools and their
    speed, or ``problem``: why none serves the rate within the targets."""

    rate: float
    isl: int
    osl: int
    targets: Targets
    sized: Sized | None
    problem: Decision | None
    others: tuple[Sized, ...] = ()  # the next pairs that serve the rate, fewest GPUs first

    @cached_property
    def speed(self) -> Speed | None:
        return pools_speed(self.sized) if self.sized is not None else None

    @property
    def gpus(self) -> int | None:
        return self.sized.gpus if self.sized is not None else None

    @property
    def ratio(self) -> float | None:
        """Prefill GPUs per decode GPU."""
        z = self.sized
        return z.prefill.gpus / z.decode.gpus if z is not None else None


def none_reason(found_prefill: bool, found_decode: bool, decode_meets: bool,
                targets: Targets) -> Decision:  # fmt: skip
    """Why no pair of pools serves the rate: no worker layout fits, no decode worker meets the
    TPOT target with one request, or no prefill worker meets the TTFT target's budget."""
    if not found_prefill:
        return NONE_WORKERS(role=ROLE["prefill"]())
    if not found_decode:
        return NONE_WORKERS(role=ROLE["decode"]())
    if not decode_meets or targets.ttft_s is None:
        return NONE_TPOT(target=Decimal(targets.tpot_s * 1e3, 1, MS))
    return NONE_TTFT(target=Decimal(targets.ttft_s * 1e3, 0, MS))
