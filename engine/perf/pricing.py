"""Pricing an op model's terms again at other factors, without building them again: what a refit
of ``data/perf.yaml``'s factors asks thousands of times of the same runs (``tools/fit_perf.py``,
``engine.perf.user_fit``).

Every term of a step records how its seconds were priced (``engine.perf.terms.Term``): the two
sides of its roofline, bytes over HBM and FLOPs over the tensor rate, each inversely proportional
to a fitted fraction; or a multiple of one factor (a kernel's floor, a step's pass, a collective's
latency). A model traced at unit factors (``unit_factors``: both fractions and every stack's
efficiency 1, every cost 1 s) holds those multiples as its seconds; ``Pricing`` then prices each
term at any factors: max(memory / (hbm_fraction × efficiency), compute / (tensor_fraction ×
efficiency)) for a roofline, the multiple × the cost for a
fixed term, the bytes over the link plus the latency's multiple × the cost for a collective. The
scheduler's questions of a copy (which decode steps, which prefill chunks) do not depend on the
factors, so a traced copy answers them all from the passes it already built.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from engine.perf.factors import Factors
from engine.perf.stack import STACK_COSTS, STACK_FACTORS, Factor, Stack
from engine.perf.terms import Term

UNIT_GLOBALS = ("hbm_fraction", "tensor_fraction", "network_latency_seconds")


def unit_factors(f: Factors) -> Factors:
    """``f`` with the fitted fractions at 1 and every cost at 1 s (the link's bus efficiency, a
    measured share, kept): the factors a model is traced at."""

    def one(x: Factor) -> Factor:
        return x.model_copy(update={"value": 1.0})

    stacks = [s.model_copy(update={c: one(getattr(s, c)) for c in STACK_FACTORS}) for s in f.stacks]
    update = {name: one(getattr(f, name)) for name in UNIT_GLOBALS}
    return f.model_copy(update={**update, "stacks": tuple(stacks)})


@dataclass(frozen=True)
class Pricing:
    """What one unit of each traced quantity costs now: seconds per unit-priced second of HBM
    traffic (1 / (hbm_fraction × the stack's efficiency)) and of tensor work (likewise), and
    each cost's value."""

    hbm: float
    tensor: float
    costs: Mapping[str, float]

    @classmethod
    def of(cls, f: Factors, stack: Stack) -> Pricing:
        """Prices at ``f`` for a copy on ``stack`` (one of ``f.stacks``)."""
        costs = {c: stack.cost(c) for c in STACK_COSTS}
        costs["network_latency_seconds"] = f.network_latency_seconds.value
        eff = stack.cost("efficiency")
        return cls(1.0 / (f.hbm_fraction.value * eff), 1.0 / (f.tensor_fraction.value * eff), costs)

    def cost(self, name: str) -> float:
        return self.costs[name]

    def seconds(self, t: Term) -> float:
        """``t``'s seconds at these prices (``t`` traced at unit factors)."""
        if t.bound == "overhead":
            return t.seconds * self.costs[t.cost] if t.cost else t.seconds
        if t.bound == "communication":
            latency = t.seconds - t.memory_s
            return t.memory_s + (latency * self.costs[t.cost] if t.cost else latency)
        return max(t.memory_s * self.hbm, t.compute_s * self.tensor)

    def total(self, terms: tuple[Term, ...]) -> float:
        return sum(self.seconds(t) for t in terms)
