"""The fewest GPUs of one kind that serve a traffic: every layout of one copy the GPUs allow
(copy sizes that divide a node, then whole nodes), each copy's ceiling within the targets, the
copies (replicas) the rate needs, the GPUs and nodes that takes, and what it costs.

For one kind of GPU the price per GPU is one number, so the fewest GPUs is also the cheapest: a
price changes the cost, never the layout picked for that GPU (across GPUs the cost decides).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from engine.capacity.prices import Price, price_for
from engine.capacity.replica import Ceiling, Load, ceiling, load_at, reuse_at
from engine.decision import Code, Decision, Name
from engine.errors import InputError
from engine.launch.candidate import Candidate, Layout, SearchInputs
from engine.launch.layout import largest_context, stage_share
from engine.reuse import Reuse
from engine.scenario import MAX_NODES, Scenario
from engine.study import Study, study
from engine.text.words import say

# the most copies of a node's size tried when a copy does not fit one node (8 × 8 = 64 GPUs a
# copy; beyond that a capacity is not the question, fitting the model is)
_NODE_MULTIPLES = (2, 4, 8)
# a copy's users when its layouts are sized for capacity: enough that no plan caps its requests
# below what the KV pool admits (vLLM's sampler-reserve cap applies to a few users)
_PROBE_USERS = 65_536
_PINS = ("tp", "dp", "pp", "ep")

NO_COPY = Code("capacity.none.fit", "gpu")
NO_PRICE = Code("capacity.no_price", "gpu")


@dataclass(frozen=True)
class Option:
    """One layout of one copy, replicated to serve the rate."""

    gpu: str
    layout: Layout  # one copy
    copy_gpus: int
    per_node: int
    top: Ceiling
    replicas: int
    load: Load  # one copy's share of the traffic
    rate: float
    isl: int
    osl: int
    price: Price | None
    context: int  # the context the plan sets (the workload's: only copies it fits are options)
    longest_context: int  # the longest one request can have on this copy
    reuse: Reuse | None = None  # what each request finds in the prefix cache at the load

    @property
    def gpus(self) -> int:
        return self.replicas * self.copy_gpus

    @property
    def nodes(self) -> int:
        """Whole nodes: copies inside a node pack ``per_node // copy_gpus`` to a node."""
        if self.copy_gpus >= self.per_node:
            return self.replicas * math.ceil(self.copy_gpus / self.per_node)
        return math.ceil(self.replicas / (self.per_node // self.copy_gpus))

    @property
    def requests_per_s_per_replica(self) -> float:
        return self.top.requests_per_s

    @property
    def utilization(self) -> float:
        """The share of the copies' ceiling the traffic uses (1 − headroom)."""
        return self.rate / (self.replicas * self.top.requests_per_s)

    @property
    def cost_per_hour(self) -> float | None:
        return None if self.price is None else self.gpus * self.price.usd_per_hour

    def cost_per_million(self, tokens_per_request: int) -> float | None:
        """USD per million tokens served: the hour's cost over the tokens the traffic brings in
        an hour (``rate`` × tokens per request × 3,600 s)."""
        hourly = self.cost_per_hour
        if hourly is None:
            return None
        return hourly / (self.rate * tokens_per_request * 3600) * 1e6

    @property
    def cost_per_million_output_tokens(self) -> float | None:
        return self.cost_per_million(self.osl)

    @property
    def cost_per_million_tokens(self) -> float | None:
        return self.cost_per_million(self.isl + self.osl)

    @property
    def formula(self) -> str:
        """The numbers behind the option, operators and units only (words are the pages')."""
        top, load = self.top, self.load
        parts = [
            f"r = {top.concurrency} / {top.concurrency / top.requests_per_s:.4g} s"
            f" = {top.requests_per_s:.4g} /s",
            f"replicas = ceil({self.rate:g} / {top.requests_per_s:.4g}) = {self.replicas}",
            f"GPUs = {self.replicas} × {self.copy_gpus} = {self.gpus}",
            f"C = {self.rate / self.replicas:.4g} /s × {load.e2e_s:.4g} s = {load.concurrency:.3g}",
            f"utilization = {self.rate:g} / ({self.replicas} × {top.requests_per_s:.4g})"
            f" = {self.utilization:.3f}",
        ]
        if self.price is not None and self.cost_per_hour is not None:
            per_m = self.cost_per_million_tokens or 0.0
            parts += [
                f"cost = {self.gpus} × {self.price.usd_per_hour:g} $/h"
                f" = {self.cost_per_hour:.4g} $/h",
                f"$/M tokens = {self.cost_per_hour:.4g} / ({self.rate:g} × "
                f"{self.isl + self.osl} × 3600) × 10^6 = {per_m:.4g}",
            ]
        return " ; ".join(parts)

    def to_json(self) -> dict[str, Any]:
        """The ``capacity`` keys of ``study --json`` for this option."""
        sp = self.load.speed
        return {
            "gpu": self.gpu,
            "gpus": self.gpus,
            "nodes": self.nodes,
            "replicas": self.replicas,
            "layout": self.layout.describe(),
            "gpus_per_replica": self.copy_gpus,
            "requests_per_s_per_replica": self.requests_per_s_per_replica,
            "concurrency_per_replica": self.top.concurrency,
            "limit": say(self.top.limit),
            "limit_code": self.top.limit.to_json(),
            "utilization": self.utilization,
            "headroom": 1.0 - self.utilization,
            "concurrency": self.load.concurrency * self.replicas,
            "ttft_ms": sp.ttft_ms,
            "ttft_ms_range": list(sp.ttft_ms_range),
            "tpot_ms": sp.tpot_ms,
            "tpot_ms_range": list(sp.tpot_ms_range),
            "context": self.context,
            "longest_context": self.longest_context,
            "output_tokens_per_s_per_user": sp.output_tokens_per_s_per_user,
            "gpu_price": self.price.usd_per_hour if self.price else None,
            "price_source": (self.price.source or "user") if self.price else None,
            "price_date": self.price.date if self.price else None,
            "cost_per_hour": self.cost_per_hour,
            "cost_per_million_output_tokens": self.cost_per_million_output_tokens,
            "cost_per_million_tokens": self.cost_per_million_tokens,
            "formula": self.formula,
            "prefix_reuse": self.reuse.to_json() if self.reuse is not None else None,
        }


@dataclass(frozen=True)
class Fleet:
    """One GPU kind's answer: every option that serves the rate (fewest GPUs first) and the
    pick, or why none does."""

    gpu: str
    options: tuple[Option, ...]
    problem: Decision | None  # why no copy of this GPU serves the rate (None: some does)
    price: Price | None

    @property
    def pick(self) -> Option | None:
        return self.options[0] if self.options else None

    @property
    def price_missing(self) -> Decision:
        """What the cost says when no price of this GPU is known."""
        return NO_PRICE(gpu=Name(self.gpu))

    def to_json(self) -> dict[str, Any]:
        """The pick's keys (None where no copy serves), why not, and every option."""
        pick = self.pick.to_json() if self.pick else {"gpu": self.gpu}
        return {
            **pick,
            "serves": self.pick is not None,
            "problem": say(self.problem) if self.problem else None,
            "problem_code": self.problem.to_json() if self.problem else None,
            "options": [o.to_json() for o in self.options],
        }


def copy_sizes(per_node: int, pinned: int | None) -> list[int]:
    """GPUs one copy may take: the divisors of a node, then whole nodes (2, 4, 8 of them)."""
    sizes = [d for d in range(1, per_node + 1) if per_node % d == 0]
    sizes += [per_node * m for m in _NODE_MULTIPLES if m <= MAX_NODES]
    return [n for n in sizes if pinned is None or n % pinned == 0]


def _copy_scenario(s: Scenario, gpu: str, n: int) -> Scenario:
    """One copy of ``n`` GPUs of ``gpu`` (the scenario's node size), its users left to the pool."""
    per_node = min(n, s.gpus_per_node)
    return s.model_copy(
        update={
            "gpu": gpu,
            "gpus_per_node": per_node,
            "nodes": n // per_node,
            "replicas": 1,
            "users": _PROBE_USERS,
            "request_rate": None,
            "gpu_price": None,
            "compare_gpus": None,
        }
    )


def _copies(s: Scenario, gpu: str) -> tuple[list[tuple[Study, Candidate]], Decision | None]:
    """Every candidate layout of one copy, at each copy size that the model's weights and one
    request of its context fit; or the gate that no count of this GPU passes (a kernel, a
    format)."""
    pinned = 1
    for name in ("tp", "dp", "pp"):
        pinned *= getattr(s, name) or 1
    out: list[tuple[Study, Candidate]] = []
    for n in copy_sizes(s.gpus_per_node, pinned if pinned > 1 else None):
        try:
            st = study(_copy_scenario(s, gpu, n))
        except InputError:
            continue
        failed = st.gates.failed(memory=False)
        if failed:
            return [], failed[0].reason
        out += [
            (st, c)
            for c in st.search.candidates
            if c.layout.replicas == 1 and c.weights_fit and c.context_fits and c.running > 0
        ]
    return out, None


def _option(s: Scenario, gpu: str, st: Study, c: Candidate, price: Price | None) -> Option | None:
    inp: SearchInputs | None = st.search_inputs
    rate = s.request_rate
    if inp is None or rate is None:
        return None
    top = ceiling(inp, s, c)
    if not top.serves:
        return None
    replicas = math.ceil(rate / top.requests_per_s - 1e-9)
    load = load_at(inp, s, c, top, rate / replicas)
    isl, osl = s.workload(c.context)
    kv = inp.kv_at(c.layout.tp)
    stage = stage_share(inp.cfg, c.layout.pp)
    longest = largest_context(kv, c.kv_space_per_gpu, stage, inp.limit)
    reuse = reuse_at(inp, s, c, load.running)
    return Option(gpu, c.layout, c.layout.gpus, s.gpus_per_node, top, replicas, load, rate,
                  isl, osl, price, c.context, longest, reuse)  # fmt: skip


def given(st: Study, rate: float) -> Option | None:
    """The Study's own GPUs, laid out as its pick, at ``rate``: what they hold (each copy's
    ceiling × the copies) and how much of it the rate uses (over 1: they do not hold it, and
    each copy runs at its ceiling)."""
    inp, c, s = st.search_inputs, st.fit, st.scenario
    if inp is None or not (c.weights_fit and c.running > 0):
        return None
    top = ceiling(inp, s, c)
    if not top.serves:
        return None
    replicas = c.layout.replicas
    load = load_at(inp, s, c, top, min(rate / replicas, top.requests_per_s))
    isl, osl = s.workload(c.context)
    copy = Layout(1, c.layout.split)
    price = price_for(s.gpu, s.gpu_price)
    reuse = reuse_at(inp, s, c, load.running)
    return Option(s.gpu, copy, c.layout.split.gpus, s.gpus_per_node, top, replicas, load, rate,
                  isl, osl, price, c.context, c.context, reuse)  # fmt: skip


def fleet(s: Scenario, gpu: str) -> Fleet:
    """The options of ``gpu`` for ``s.request_rate``, fewest GPUs first (then fewest nodes,
    then the lower time per output token at the load)."""
    own = s.gpu_price if gpu == s.gpu else None
    price = price_for(gpu, own)
    options: list[Option] = []
    pairs, why = _copies(s, gpu)
    for st, c in pairs:
        opt = _option(s, gpu, st, c, price)
        if opt is not None:
            options.append(opt)
        elif why is None and st.search_inputs is not None:
            why = ceiling(st.search_inputs, s, c).limit
    options.sort(key=lambda o: (o.gpus, o.nodes, o.load.speed.tpot_ms, o.copy_gpus))
    if options:
        return Fleet(gpu, tuple(options), None, price)
    return Fleet(gpu, (), why or NO_COPY(gpu=Name(gpu)), price)
