"""Ranked like the measurements: pairs of layouts of one model, on one GPU, engine and workload,
measured side by side, and whether the speed model orders each pair as measured.

A pair is two rows of ``data/perf/*.jsonl`` (``tools.perf_rows.cases``) with the same bundled
config and weight precision, GPU, engine, input and output tokens, and a different layout (TP,
DP-attention, EP, PP). Each pair is compared on TPOT and on output tokens/s per GPU; a metric
whose two measurements lie within ``TIE`` of each other is a tie the measurement cannot order, and
is left out. Pairs at the same concurrency are what a layout search decides between; pairs at
different loads are counted apart.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from engine.perf import Speed
from tools.perf_rows import Case

TIE = 0.05  # measurements closer than 5 % are not ordered
MEASURED: dict[str, Callable[[Case], float | None]] = {
    "tpot": lambda c: c.tpot_ms,
    "tps_per_gpu": lambda c: c.tps_per_gpu,
}
PREDICTED: dict[str, Callable[[Speed], float]] = {
    "tpot": lambda s: s.tpot_ms,
    "tps_per_gpu": lambda s: s.output_tokens_per_s_per_gpu,
}


@dataclass(frozen=True)
class Pair:
    a: Case
    b: Case
    metric: str
    same_load: bool
    agree: bool


def _key(c: Case) -> tuple[object, ...]:
    return (c.config, c.precision, c.gpu, c.engine, c.isl, c.osl)


def _layout(c: Case) -> tuple[int, int, bool, int]:
    return (c.tp, c.dp, c.ep, c.pp)


def pairs(used: Sequence[Case], predict: Callable[[Case], Speed]) -> list[Pair]:
    """Every pair of layouts measured side by side, per metric the measurement orders."""
    groups: dict[tuple[object, ...], list[Case]] = {}
    for c in used:
        groups.setdefault(_key(c), []).append(c)
    out = []
    for rows in groups.values():
        for a, b in itertools.combinations(rows, 2):
            if _layout(a) == _layout(b):
                continue
            sa, sb = predict(a), predict(b)
            for metric, measured in MEASURED.items():
                ma, mb = measured(a), measured(b)
                if not ma or not mb or abs(ma - mb) / max(ma, mb) < TIE:
                    continue
                pa, pb = PREDICTED[metric](sa), PREDICTED[metric](sb)
                agree = (pa > pb) == (ma > mb)
                out.append(Pair(a, b, metric, a.concurrency == b.concurrency, agree))
    return out


def agreement(found: Sequence[Pair]) -> float | None:
    """The share of pairs the model orders as measured (None: no pair)."""
    return sum(p.agree for p in found) / len(found) if found else None
