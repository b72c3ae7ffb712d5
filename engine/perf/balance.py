"""How unevenly work lands on ranks that wait for each other: the busiest DP-attention rank and
the busiest expert-parallel rank, as expected maxima.

A decode step of DP-attention ranks ends when the busiest rank has run its requests (they meet
at every MoE layer); a MoE layer under expert parallelism ends when the rank holding the most
routed tokens has run them. Both are maxima over ranks of counts that are not spread evenly:

* **Balls into bins.** ``b`` balls thrown independently into ``n`` bins: the fullest bin holds
  b/n + about sqrt(2 (b/n) ln n) for b >> n ln n (Raab & Steger, "Balls into Bins — A Simple
  and Tight Analysis", RANDOM 1998, Theorem 1), and ~ln n / ln ln n for b = n. Computed here
  by Poissonization (each bin's count ~ Poisson(b/n), independent: Gonnet, "Expected Length of
  the Longest Probe Sequence in Hash Code Searching", JACM 28(2), 1981): E[max] =
  Σ_{x>=1} (1 − F(x − 1)^n), F the Poisson CDF.
* **DP ranks.** How requests are spread over the ranks is the engine's (``data/perf.yaml``
  engines ``dp_balance``): vLLM's API server sends each request to the engine with the fewest
  waiting × 4 + running (``DPLBAsyncMPClient.get_core_engine_for_request``), so the busiest holds
  ceil(B / n); SGLang's default ``round_robin`` (``--load-balance-method auto``) deals requests
  out blind to how many each rank still runs, so as requests of different lengths finish the
  ranks' loads drift apart as balls into bins.
* **Expert popularity.** Routers do not pick experts uniformly: the serving playbook measured
  the hottest of DeepSeek's 256 experts at 7.2 × the mean (``data/perf.yaml`` routing). Taken as
  a lognormal popularity whose expected largest of E draws is that many times the mean, each
  expert's share is the quantile of its rank (expert i of E at 1 − (i + ½) / E). EPLB
  (``--enable-eplb``, R redundant experts) copies the hottest: each copy takes the expert with
  the most load per copy (DeepSeek's EPLB ``replicate_experts``), then packs the copies heaviest
  first onto the least loaded rank (``balanced_packing``). Without EPLB an expert's rank is
  fixed by its index (experts i·m … i·m + m − 1 on rank i), blind to popularity: the busiest of
  G ranks of m experts is the mean plus the spread of a sum of m draws times the expected
  largest of G standard normals, or the rank of the hottest expert, whichever is more.
"""

from __future__ import annotations

import heapq
import math
from functools import cache
from statistics import NormalDist
from typing import Literal

DpBalance = Literal["least_loaded", "round_robin"]
_N = NormalDist()


@cache
def poisson_max(mean: float, bins: int) -> float:
    """E[max of ``bins`` independent Poisson(``mean``) counts] = Σ_{x>=1} (1 − F(x − 1)^bins)."""
    if mean <= 0 or bins < 1:
        return 0.0
    if bins == 1:
        return mean
    if mean > 400:  # normal limit: the mean plus its spread times the largest of bins normals
        return mean + math.sqrt(mean) * normal_max(bins)
    pmf = math.exp(-mean)
    cdf = pmf
    total = 0.0
    x = 0
    while True:
        tail = 1.0 - cdf**bins  # P(max > x)
        total += tail
        x += 1
        if tail < 1e-12 and x > mean:
            return total
        pmf *= mean / x
        cdf += pmf


@cache
def normal_max(n: int) -> float:
    """E[max of n independent standard normals], by the midpoint rule on its density n φ Φ^(n−1)."""
    if n <= 1:
        return 0.0
    steps = 2000
    lo, hi = -8.0, 8.0
    h = (hi - lo) / steps
    total = 0.0
    for i in range(steps):
        z = lo + (i + 0.5) * h
        total += z * n * _N.pdf(z) * _N.cdf(z) ** (n - 1)
    return total * h


def busiest_rank(requests: float, ranks: int, balance: DpBalance) -> float:
    """Requests on the busiest of ``ranks`` DP-attention ranks running ``requests`` in all."""
    if ranks <= 1 or requests <= 0:
        return float(requests)
    even = math.ceil(requests / ranks)
    if balance == "least_loaded":
        return float(even)
    return min(float(requests), max(float(even), poisson_max(requests / ranks, ranks)))


def mean_ceil_share(arrivals: float, ranks: int) -> float:
    """E[ceil(A / ranks)] for A ~ Poisson(``arrivals``): the prompts the busiest rank prefills in
    a step when A arrive over the copy and are dealt out in turn (ranks = 1: the mean, A)."""
    if arrivals <= 0:
        return 0.0
    if ranks <= 1:
        return arrivals
    pmf = math.exp(-arrivals)
    total, a = 0.0, 0
    while True:
        total += pmf * math.ceil(a / ranks)
        a += 1
        pmf *= arrivals / a
        if pmf < 1e-12 and a > arrivals:
            return total


# --- expert parallelism ------------------------------------------------------------------------


def popularity_sigma(hottest_over_mean: float, experts: int) -> float:
    """The lognormal spread σ whose expected largest of ``experts`` draws is ``hottest_over_mean``
    times the mean: exp(σ z − σ² / 2) = s with z the 1 − ½ / E quantile, so σ = z − sqrt(z² − 2
    ln s)."""
    z = _N.inv_cdf(1 - 0.5 / experts)
    return z - math.sqrt(max(z * z - 2 * math.log(hottest_over_mean), 0.0))


@cache
def expert_loads(experts: int, sigma: float) -> tuple[float, ...]:
    """Each expert's share of the routed tokens, hottest first, normalised to a mean of 1."""
    raw = [math.exp(sigma * _N.inv_cdf(1 - (i + 0.5) / experts)) for i in range(experts)]
    mean = sum(raw) / experts
    return tuple(x / mean for x in raw)


@cache
def rank_skew(experts: int, ranks: int, redundant: int, sigma: float) -> float:
    """The busiest EP rank's routed load over the mean rank's, with enough tokens that only the
    router's popularity matters (1: even)."""
    if ranks <= 1 or sigma <= 0:
        return 1.0
    loads = expert_loads(experts, sigma)
    if redundant <= 0:
        m = experts / ranks
        n = len(loads)
        var = sum((x - 1) ** 2 for x in loads) / n
        spread = math.sqrt(m * var * (1 - (m - 1) / max(n - 1, 1)))
        random_rank = m + spread * normal_max(ranks)
        hot_rank = loads[0] + (m - 1) * (n - loads[0]) / max(n - 1, 1)
        return max(random_rank, hot_rank) / m
    return _packed_skew(loads, ranks, redundant)


def copy_loads(loads: tuple[float, ...], redundant: int) -> tuple[float, ...]:
    """EPLB's replication: ``redundant`` copies, each to the expert with the most load per copy
    (its copies share its load evenly); every copy's load, hottest first."""
    copies = [1] * len(loads)
    heap = [(-x, i) for i, x in enumerate(loads)]
    heapq.heapify(heap)
    for _ in range(redundant):
        _, i = heapq.heappop(heap)
        copies[i] += 1
        heapq.heappush(heap, (-loads[i] / copies[i], i))
    each = (loads[i] / copies[i] for i in range(len(loads)) for _ in range(copies[i]))
    return tuple(sorted(each, reverse=True))


def _packed_skew(loads: tuple[float, ...], ranks: int, redundant: int) -> float:
    """EPLB: the copies packed heaviest first onto the least loaded rank with room (each rank
    holds (E + R) / G of them): the busiest rank over the mean."""
    slots = copy_loads(loads, redundant)
    room = math.ceil(len(slots) / ranks)
    bins = [(0.0, 0, r) for r in range(ranks)]  # (load, slots held, rank)
    heapq.heapify(bins)
    for s in slots:
        held = []
        load, n, r = heapq.heappop(bins)
        while n >= room:
            held.append((load, n, r))
            load, n, r = heapq.heappop(bins)
        heapq.heappush(bins, (load + s, n + 1, r))
        for b in held:
            heapq.heappush(bins, b)
    busiest = max(b[0] for b in bins)
    return busiest / (sum(slots) / ranks)


def busiest_expert_rank(picks: float, ranks: int, skew: float) -> float:
    """Routed picks (tokens × top-k) on the busiest of ``ranks`` EP ranks: the statistical
    maximum of an even spread (balls into bins), or the popular rank's own share, whichever is
    more."""
    if ranks <= 1:
        return picks
    return max(poisson_max(picks / ranks, ranks), picks * skew / ranks)


def touched_on_rank(picks: float, experts_on_rank: float) -> float:
    """Distinct experts of a rank's ``experts_on_rank`` that ``picks`` routed picks touch, the
    picks spread over them evenly: m (1 − (1 − 1/m)^picks)."""
    m = experts_on_rank
    if picks <= 0 or m <= 0:
        return 0.0
    if m <= 1:
        return min(1.0, m)
    return float(m * (1.0 - (1.0 - 1.0 / m) ** picks))
