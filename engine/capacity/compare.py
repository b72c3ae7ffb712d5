"""Models × GPUs for one traffic: each model's capacity on every GPU compared, side by side —
GPUs and nodes needed, $/M tokens, TTFT / TPOT at the load, the context that fits — so "the same
traffic on a small-active MoE" is one table. Each cell is the capacity of that model's scenario
(engine.capacity.fleet), so the comparison and a model's own capacity never disagree."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engine.capacity import Capacity, capacity_of
from engine.decision import Code, Decision
from engine.errors import InputError
from engine.scenario import Scenario
from engine.text.words import say

RATE_NEEDED = Code("error.rate_needed")


@dataclass(frozen=True)
class Column:
    """One model: its scenario and its capacity on every GPU, or why it cannot be studied."""

    scenario: Scenario
    capacity: Capacity | None
    problem: Decision | None

    @property
    def model(self) -> str:
        return self.scenario.model

    def to_json(self) -> dict[str, Any]:
        cap = self.capacity
        return {
            "model": self.model,
            "problem": say(self.problem) if self.problem else None,
            "best_gpu": cap.best.gpu if cap and cap.best else None,
            "by_gpu": [
                {k: v for k, v in f.to_json().items() if k != "options"}
                for f in (cap.fleets if cap else ())
            ],
        }


def compare(scenarios: list[Scenario], rate: float) -> tuple[Column, ...]:
    """Each scenario (one per model; the same GPUs, workload and targets) at ``rate``."""
    out: list[Column] = []
    for s in scenarios:
        try:
            out.append(Column(s, capacity_of(s, rate), None))
        except InputError as err:
            out.append(Column(s, None, err.decision))
    return tuple(out)


def compare_json(columns: tuple[Column, ...], rate: float) -> dict[str, Any]:
    return {"request_rate": rate, "models": [c.to_json() for c in columns]}
