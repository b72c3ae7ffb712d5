"""What one copy of the model holds: the most requests it runs at once within the targets, the
request rate that is (Little's law through the speed model), and the load it runs at for a share
of the traffic.

A copy serving C requests at once finishes C requests per end-to-end time E2E(C) — the speed
model's closed loop: output tokens/s of the copy ÷ the output tokens of one request. Little's law
says the same from the other side: a copy given r requests/s has C = r × E2E(C) of them in
flight. The ceiling is the largest C whose speed still meets the scenario's targets (TTFT, TPOT),
the balanced bound on the time per output token when no target is given, and the requests the KV
pool (or the plan's --max-num-seqs) admits; TPOT and TTFT grow with C, so a bisection finds it.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.decision import Code, Decimal, Decision
from engine.launch.candidate import Candidate, SearchInputs
from engine.launch.layout import candidate_reuse, copies_speed
from engine.perf import Speed
from engine.reuse import Reuse
from engine.scenario import Scenario

LIMIT_KV = Code("capacity.limit.kv", "running")
LIMIT_TTFT = Code("capacity.limit.ttft", "target")
LIMIT_TPOT = Code("capacity.limit.tpot", "target")
LIMIT_BOUND = Code("capacity.limit.bound", "bound")
NONE_TTFT = Code("capacity.none.ttft", "target", "ttft")
NONE_TPOT = Code("capacity.none.tpot", "target", "tpot")
NONE_BOUND = Code("capacity.none.bound", "bound", "tpot")
NONE_SPEED = Code("capacity.none.speed")
MS = "ms"


def tpot_bound(s: Scenario) -> float | None:
    """The time per output token a copy must keep when no TPOT target is asked: the
    interactivity bound (latency and balanced priorities; the scenario's tpot_bound_ms);
    throughput first has none."""
    if s.tpot_ms is not None or s.latency == "throughput":
        return None
    return s.tpot_bound_ms


def speed_at(inp: SearchInputs, s: Scenario, c: Candidate, concurrency: int) -> Speed | None:
    """One copy of ``c``'s split at ``concurrency`` requests, priced as the search prices it
    (``engine.launch.layout.copies_speed``: its prefill chunk and context, the plan's engine
    version and execution mode, the factors, the requests the copy's KV admits at once) with the
    prefix cache's hits at that load."""
    admit = max(1, c.running // c.layout.replicas)
    reuse = reuse_at(inp, s, c, concurrency)
    return copies_speed(
        inp, s, 1, c.layout.split, c.chunk_tokens, c.context, concurrency, admit, reuse
    )


def reuse_at(inp: SearchInputs, s: Scenario, c: Candidate, concurrency: int) -> Reuse | None:
    """What each request finds in the prefix cache when every copy of ``c`` runs
    ``concurrency`` requests (engine.reuse, as the layout search counts it)."""
    copies = c.layout.replicas
    return candidate_reuse(
        inp, s, copies, c.layout.split, c.kv_space_per_gpu, c.context, concurrency * copies
    )


def missed(s: Scenario, sp: Speed) -> Decision | None:
    """The first target (or the bound) ``sp`` misses, as the limit it sets; None: all met."""
    if s.ttft_ms is not None and sp.ttft_ms > s.ttft_ms:
        return LIMIT_TTFT(target=Decimal(s.ttft_ms, 0, MS))
    if s.tpot_ms is not None and sp.tpot_ms > s.tpot_ms:
        return LIMIT_TPOT(target=Decimal(s.tpot_ms, 1, MS))
    bound = tpot_bound(s)
    if bound is not None and sp.tpot_ms > bound:
        return LIMIT_BOUND(bound=Decimal(bound, 0, MS))
    return None


def _none(s: Scenario, sp: Speed | None) -> Decision:
    """Why not even one request per copy meets the ask."""
    if sp is None:
        return NONE_SPEED()
    if s.ttft_ms is not None and sp.ttft_ms > s.ttft_ms:
        return NONE_TTFT(target=Decimal(s.ttft_ms, 0, MS), ttft=Decimal(sp.ttft_ms, 0, MS))
    if s.tpot_ms is not None and sp.tpot_ms > s.tpot_ms:
        return NONE_TPOT(target=Decimal(s.tpot_ms, 1, MS), tpot=Decimal(sp.tpot_ms, 1, MS))
    bound = tpot_bound(s) or 0.0
    return NONE_BOUND(bound=Decimal(bound, 0, MS), tpot=Decimal(sp.tpot_ms, 1, MS))


def requests_per_s(s: Scenario, c: Candidate, sp: Speed) -> float:
    """Requests one copy finishes per second at this speed: its output tokens/s ÷ one
    request's output tokens."""
    _, osl = s.workload(c.context)
    return sp.output_tokens_per_s / osl


@dataclass(frozen=True)
class Ceiling:
    """The most one copy holds: ``concurrency`` requests at ``speed``, ``requests_per_s``, and
    what stops it there (``limit``); ``concurrency`` 0 when not even one request meets the ask
    (``limit`` then says why)."""

    concurrency: int
    speed: Speed | None
    requests_per_s: float
    limit: Decision

    @property
    def serves(self) -> bool:
        return self.concurrency > 0 and self.speed is not None


def ceiling(inp: SearchInputs, s: Scenario, c: Candidate) -> Ceiling:
    """The largest concurrency at which one copy of ``c`` meets the targets and the bound,
    within the requests its KV pool admits."""
    most = max(0, c.running // c.layout.replicas)  # one copy's share of what the KV admits
    one = speed_at(inp, s, c, 1) if most else None
    if one is None or missed(s, one) is not None:
        return Ceiling(0, one, 0.0, _none(s, one))
    top = speed_at(inp, s, c, most)
    if top is not None and missed(s, top) is None:
        return Ceiling(most, top, requests_per_s(s, c, top), LIMIT_KV(running=most))
    lo, hi, best = 1, most, one  # lo meets, hi does not
    while hi - lo > 1:
        mid = (lo + hi) // 2
        sp = speed_at(inp, s, c, mid)
        if sp is not None and missed(s, sp) is None:
            lo, best = mid, sp
        else:
            hi = mid
    stop = speed_at(inp, s, c, hi)
    limit = missed(s, stop) if stop is not None else None
    return Ceiling(lo, best, requests_per_s(s, c, best), limit or NONE_SPEED())


@dataclass(frozen=True)
class Load:
    """One copy given ``rate`` requests/s: the requests in flight by Little's law
    (``concurrency`` = rate × E2E) and the speed it runs at (at ``running``, the whole number of
    requests at or above that)."""

    rate: float
    concurrency: float
    running: int
    speed: Speed
    e2e_s: float


def load_at(inp: SearchInputs, s: Scenario, c: Candidate, top: Ceiling, rate: float) -> Load:
    """The fewest requests in flight at which one copy finishes ``rate`` requests/s (at most the
    ceiling's); below one request in flight the copy is idle part of the time and runs alone."""
    assert top.speed is not None
    lo, hi = 1, top.concurrency
    sp_lo = speed_at(inp, s, c, 1) or top.speed
    if requests_per_s(s, c, sp_lo) >= rate:
        hi, best = 1, sp_lo
    else:
        best = top.speed
        while hi - lo > 1:
            mid = (lo + hi) // 2
            sp = speed_at(inp, s, c, mid)
            if sp is not None and requests_per_s(s, c, sp) >= rate:
                hi, best = mid, sp
            else:
                lo = mid
    e2e = hi / max(requests_per_s(s, c, best), 1e-12)
    return Load(rate, rate * e2e, hi, best, e2e)
