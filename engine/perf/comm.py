"""Collectives as latency + bytes over the link (ring algorithms, as NCCL runs them).

An all-reduce of ``m`` bytes over ``n`` GPUs sends 2(n − 1)/n · m per GPU; an all-gather or a
reduce-scatter (n − 1)/n · m; an all-to-all the bytes each GPU sends to the others. The link is
the scale-up domain's (NVLink, Infinity Fabric, PCIe) when the group fits in a node, the network
per GPU otherwise (``Rates.link``).
"""

from __future__ import annotations

from engine.perf.rates import Link
from engine.perf.terms import Term

ACTIVATION_BYTES = 2  # hidden states travel in BF16


def collective(code: str, sent_per_gpu: float, link: Link, count: int) -> Term:
    """``count`` collectives, each sending ``sent_per_gpu`` bytes from every GPU."""
    moving = count * sent_per_gpu / link.bytes_per_s
    seconds = count * link.latency_s + moving
    return Term(
        code, sent_per_gpu * count, 0.0, seconds, "communication", count, moving, cost=link.cost
    )


def all_reduce(code: str, message: float, group: int, link: Link, count: int) -> Term | None:
    if group <= 1 or count <= 0:
        return None
    return collective(code, 2 * (group - 1) / group * message, link, count)


def gather_scatter(code: str, message: float, group: int, link: Link, count: int) -> Term | None:
    """An all-gather before and a reduce-scatter after (DP-attention around the FFN): two
    collectives each of (n − 1)/n of the gathered message."""
    if group <= 1 or count <= 0:
        return None
    return collective(code, (group - 1) / group * message, link, 2 * count)
