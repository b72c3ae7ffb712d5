"""Which serves the rate for less: the disaggregated pools or the best aggregated fleet of the
same GPU, and by how much, with the speed model's ranges.

At one rate and one GPU price the cost per token follows the GPUs, so the pools win when they
need fewer GPUs than the aggregated fleet by more than the model's out-of-sample error on an
unseen model family (``data/launch.yaml`` speed_tie_fraction, the tie the layout search uses):
within it the two cannot be told apart and the aggregated plan is kept (one pool, no KV
transfer, no router between phases). Both figures' tokens/s per GPU ranges are quoted beside.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.decision import Code, Decimal, Decision, Percent
from engine.disagg.candidate import Disaggregated
from engine.launch.ranking import layout_rules
from engine.perf.speed import Speed

WINS = Code("disagg.verdict.wins", "gpus", "aggregated", "saving", "tps", "agg_tps", "tie")
TIE = Code("disagg.verdict.tie", "gpus", "aggregated", "saving", "tps", "agg_tps", "tie")
LOSES = Code("disagg.verdict.loses", "gpus", "aggregated", "tps", "agg_tps")
AGG_NONE = Code("disagg.verdict.aggregated_none", "gpus")
NONE = Code("disagg.verdict.none", "why")
TPS_RANGE = Code("disagg.tps_range", "value", "low", "high")
UNIT = "tok/s"


@dataclass(frozen=True)
class Aggregated:
    """The best aggregated fleet of the same GPU at the same rate: its GPUs, one copy's layout
    and the speed a request sees."""

    gpus: int
    layout: Decision
    speed: Speed


@dataclass(frozen=True)
class Verdict:
    """Whether the pools win, why (the comparison with both figures), and the share of the
    aggregated fleet's GPUs they save (negative: they need more; None: nothing to compare)."""

    wins: bool
    reason: Decision
    saving: float | None


def tps_range(speed: Speed) -> Decision:
    """Tokens/s per GPU with the range the measurement likely falls in."""
    low, high = speed.output_tokens_per_s_per_gpu_range
    return TPS_RANGE(
        value=Decimal(speed.output_tokens_per_s_per_gpu, 0, UNIT),
        low=Decimal(low, 0, UNIT),
        high=Decimal(high, 0, UNIT),
    )


def compare(d: Disaggregated, agg: Aggregated | None) -> Verdict:
    """The pools against the aggregated fleet at ``d``'s rate."""
    speed = d.speed
    if d.sized is None or speed is None:
        assert d.problem is not None
        return Verdict(False, NONE(why=d.problem), None)
    gpus = d.sized.gpus
    if agg is None:
        return Verdict(True, AGG_NONE(gpus=gpus), None)
    saving = 1 - gpus / agg.gpus
    tie = layout_rules().speed_tie_fraction
    both = {"tps": tps_range(speed), "agg_tps": tps_range(agg.speed)}
    if gpus * (1 + tie) < agg.gpus:
        why = WINS(gpus=gpus, aggregated=agg.gpus, saving=Percent(saving), tie=Percent(tie), **both)
        return Verdict(True, why, saving)
    if gpus < agg.gpus:
        why = TIE(gpus=gpus, aggregated=agg.gpus, saving=Percent(saving), tie=Percent(tie), **both)
        return Verdict(False, why, saving)
    return Verdict(False, LOSES(gpus=gpus, aggregated=agg.gpus, **both), saving)
