"""Capacity and cost for a traffic: the fewest GPUs (and nodes) of each GPU compared that serve
the scenario's request rate within its targets, replicas counted, headroom stated, and what an
hour and a million tokens cost. Computed once per scenario from the Study's own search (each
copy size re-run through ``study()``), like the alternatives."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engine.budget import Memo
from engine.capacity.fleet import Fleet, Option, fleet, given
from engine.capacity.prices import Price, listed_prices, price_for
from engine.decision import Code, Decimal
from engine.errors import InputError
from engine.scenario import Scenario

__all__ = [
    "Capacity",
    "Fleet",
    "Option",
    "Price",
    "capacity",
    "capacity_of",
    "given",
    "listed_prices",
    "price_for",
]

UNSERVED = Code("error.rate_unserved", "rate")


@dataclass(frozen=True)
class Capacity:
    """Every GPU compared (the scenario's first), each with its options; ``best``: the GPU
    whose pick costs least per million tokens (fewest GPUs where a price is missing)."""

    rate: float
    fleets: tuple[Fleet, ...]

    @property
    def primary(self) -> Fleet:
        return self.fleets[0]

    @property
    def best(self) -> Fleet | None:
        served = [f for f in self.fleets if f.pick is not None]
        priced = [f for f in served if f.pick and f.pick.cost_per_million_tokens is not None]

        def cost(f: Fleet) -> float:
            assert f.pick is not None and f.pick.cost_per_million_tokens is not None
            return f.pick.cost_per_million_tokens

        if priced:
            return min(priced, key=cost)
        return min(served, key=lambda f: f.pick.gpus if f.pick else 0, default=None)

    def to_json(self) -> dict[str, Any]:
        """``study --json``'s ``capacity``: the scenario's GPU's pick at the top level, then one
        entry per GPU compared, and the GPU that serves the rate for least."""
        best = self.best
        return {
            "request_rate": self.rate,
            **{k: v for k, v in self.primary.to_json().items() if k != "options"},
            "best_gpu": best.gpu if best else None,
            "by_gpu": [f.to_json() for f in self.fleets],
        }


MAX_CACHED = 256
_cache: Memo[Scenario, Capacity] = Memo(MAX_CACHED)


def capacity_of(s: Scenario, rate: float) -> Capacity:
    """The options of every GPU ``s`` compares for ``rate`` requests/s, whether or not any
    serves it (computed once per scenario and rate)."""
    key = s.model_copy(update={"request_rate": rate})
    hit = _cache.get(key)
    if hit is not None:
        return hit
    return _cache.put(key, Capacity(rate, tuple(fleet(key, gpu) for gpu in key.compared)))


def capacity(s: Scenario) -> Capacity | None:
    """The capacity of ``s``'s request rate (None without one). Raises InputError naming
    ``request_rate`` when no count of any GPU compared serves it."""
    if s.request_rate is None:
        return None
    result = capacity_of(s, s.request_rate)
    if result.best is None:
        raise InputError("request_rate", UNSERVED(rate=Decimal(s.request_rate, 2, "/s")))
    return result
