"""Disaggregated prefill and decode: a prefill pool and a decode pool sized for the scenario's
request rate within its targets, the KV transfer between them, and the launch plans that run
them. Computed once per scenario and rate from the Study's own layout search and speed model
(``workers``: one server of each pool; ``sizing``: the pools; ``candidate``: their speed)."""

from __future__ import annotations

import math

from engine.budget import Memo
from engine.capacity.replica import tpot_bound
from engine.disagg.candidate import Disaggregated, Targets, none_reason
from engine.disagg.sizing import pairs
from engine.disagg.workers import workers
from engine.scenario import Scenario
from engine.study import Study

__all__ = ["Disaggregated", "Targets", "disaggregate", "targets_of"]


def targets_of(s: Scenario) -> Targets:
    """The scenario's targets in seconds; without a TPOT target the balanced bound (none when
    throughput comes first), as the layout search and the capacity read them."""
    tpot = s.tpot_ms if s.tpot_ms is not None else tpot_bound(s)
    return Targets(
        s.ttft_ms / 1e3 if s.ttft_ms is not None else None,
        tpot / 1e3 if tpot is not None else math.inf,
    )


def _compute(st: Study, rate: float) -> Disaggregated:
    s, inp = st.scenario, st.search_inputs
    assert inp is not None
    isl, osl = s.workload(st.context or inp.context)
    targets = targets_of(s)
    prefill = workers(inp, s, "prefill")
    decode = workers(inp, s, "decode")
    found = pairs(prefill, decode, rate, targets.ttft_s, targets.tpot_s, inp.cfg, s.gpus_per_node)
    problem = None
    if not found:
        meets = any(d.most_within(targets.tpot_s) > 0 for d in decode)
        problem = none_reason(bool(prefill), bool(decode), meets, targets)
    best = found[0] if found else None
    return Disaggregated(rate, isl, osl, targets, best, problem, tuple(found[1 : MAX_OTHERS + 1]))


MAX_CACHED = 128
MAX_OTHERS = 12  # the next pairs the chart draws beside the pick
_cache: Memo[tuple[Scenario, float], Disaggregated] = Memo(MAX_CACHED)


def disaggregate(st: Study, rate: float) -> Disaggregated:
    """The disaggregated candidate of ``st``'s scenario at ``rate`` requests/s (computed once
    per scenario and rate)."""
    key = (st.scenario, rate)
    hit = _cache.get(key)
    return hit if hit is not None else _cache.put(key, _compute(st, rate))
