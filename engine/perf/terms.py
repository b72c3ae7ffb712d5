"""One operation of a step: what it moves and computes, the time it takes and what bounds it.

A step is a sum of terms, the way a request's KV is a sum of cache specs. Each term owns its
bytes (read from HBM, or sent over a link), its FLOPs and its seconds; ``roofline`` turns bytes
and FLOPs into seconds at the achieved rates: the slower of reading and computing wins.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Bound = Literal["memory", "compute", "communication", "overhead"]
PhaseBound = Literal["memory", "compute", "communication"]


@dataclass(frozen=True)
class Term:
    """One operation of a step, summed over the layers it runs in.

    ``code`` is a short stable name ("decode.attention.mla", "prefill.comm.tp_allreduce"); the
    app words it per language. ``bytes`` are HBM bytes for memory and compute terms and bytes on
    the link for communication terms; ``count`` is how many times the operation runs per step
    (layers, collectives). How its seconds were priced, so a refit can price it again at other
    factors (``engine.perf.pricing``): ``memory_s`` and ``compute_s`` the two sides of its
    roofline (a collective: its bytes over the link), ``cost`` the factor its fixed seconds are a
    multiple of (an overhead: all of them; a collective: its latency)."""

    code: str
    bytes: float
    flops: float
    seconds: float
    bound: Bound
    count: int = 1
    memory_s: float = 0.0
    compute_s: float = 0.0
    cost: str = ""

    def scaled(self, factor: float) -> Term:
        """The same operation run ``factor`` times (a step repeated, draft passes)."""
        return Term(
            self.code,
            self.bytes * factor,
            self.flops * factor,
            self.seconds * factor,
            self.bound,
            self.count,
            self.memory_s * factor,
            self.compute_s * factor,
            self.cost,
        )


def roofline(
    code: str, bytes_: float, flops: float, bandwidth: float, throughput: float, count: int = 1
) -> Term:
    """``max(bytes / bandwidth, FLOPs / throughput)``: an operation streams its operands from
    HBM while its math runs; whichever takes longer is the time and the bound."""
    memory = bytes_ / bandwidth if bytes_ else 0.0
    compute = flops / throughput if flops else 0.0
    if compute > memory:
        return Term(code, bytes_, flops, compute, "compute", count, memory, compute)
    return Term(code, bytes_, flops, memory, "memory", count, memory, compute)


def fixed(code: str, seconds: float, count: int = 1, cost: str = "") -> Term:
    """A cost that is neither bytes nor FLOPs (kernel launches, the engine's scheduler): a
    multiple of the factor ``cost`` names."""
    return Term(code, 0.0, 0.0, seconds, "overhead", count, cost=cost)


def total(terms: tuple[Term, ...]) -> float:
    return sum(t.seconds for t in terms)


def phase_bound(terms: tuple[Term, ...]) -> PhaseBound:
    """Which of memory, compute and communication takes the most of the step's time."""
    shares: dict[PhaseBound, float] = {"memory": 0.0, "compute": 0.0, "communication": 0.0}
    for t in terms:
        if t.bound != "overhead":
            shares[t.bound] += t.seconds
    return max(shares, key=lambda b: shares[b])
