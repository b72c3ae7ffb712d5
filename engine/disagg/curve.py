"""The pools' speed as their load grows, on the plane the aggregated layouts are drawn on
(tokens/s per GPU against tokens/s per user): each decode worker at c requests, the rate it
serves by Little's law, and the prefill GPUs that rate takes at the pick's TTFT budget, counted
as a share of a prefill worker (the ratio the workers' counts round)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from engine.disagg.candidate import Targets
from engine.disagg.sizing import Sized

MAX_POINTS = 16


@dataclass(frozen=True)
class CurvePoint:
    running: int  # requests on each decode worker
    per_user: float  # output tokens/s a user sees (1 / TPOT)
    per_gpu: float  # output tokens/s over the decode worker and its share of prefill GPUs
    rate: float  # requests/s one decode worker serves


def _grid(most: int) -> list[int]:
    out, c = [], 1
    while c < most:
        out.append(c)
        c *= 2
    return sorted({*out, max(1, most)})[-MAX_POINTS:]


def pools_curve(z: Sized, targets: Targets) -> tuple[CurvePoint, ...]:
    """One point per load of a decode worker, up to what it runs within the TPOT target."""
    pw, dw = z.prefill.worker, z.decode.worker
    out = []
    for c in _grid(z.most):
        tpot = dw.tpot(c)
        residency = z.transfer.seconds + (z.osl - 1) * tpot
        rate = c / residency
        budget = None
        if targets.ttft_s is not None:
            budget = targets.ttft_s - z.transfer.seconds - 1.5 * dw.pass_seconds(c)
        slack = math.inf if budget is None else budget - pw.latency_seconds - pw.prompt_seconds
        if slack <= 0:
            continue
        # the prefill pool's highest utilisation within the budget (below 1 without one)
        k = slack / pw.stage_seconds
        rho = 1.0 if math.isinf(k) else 2 * k / (1 + 2 * k)
        prefill_gpus = rate * pw.stage_seconds / (pw.scheduler.dp * rho) * pw.gpus
        per_gpu = rate * z.osl / (dw.gpus + prefill_gpus)
        out.append(CurvePoint(c, 1.0 / tpot, per_gpu, rate))
    return tuple(out)
