"""How the layout search ranks what fits, smaller is better, part by part.

A candidate's rank is a tuple of named parts: the weights fit (or how far they are from
fitting), one request of the asked context fits (or the longest that does), every user fits (or
how many do), a copy of the model stays inside one node, DSA's kernels, pipeline stages; then
speed: the scenario's targets met, the balanced priority's interactivity bound, and the
objective. Speeds whose ranges overlap are a tie, which the serving playbook's preferences
(seed 004) break — the shape it wants for this model and workload, expert parallelism, the size
of a copy — before the speed model's own figure does; a speed outside the other's range ranks
before any preference.

The three objectives (``objective_figure``), each its own:

- latency first: the lowest time per output token at the asked load, then the lowest TTFT;
- throughput first: the most output tokens/s per GPU at the load the layout holds (every
  request its KV holds at once);
- balanced: the most output tokens/s per GPU at the highest load whose time per output token
  stays within the interactivity bound (``Scenario.tpot_bound_ms``) — throughput under an
  interactivity floor, the point NVIDIA aiconfigurator reads off its Pareto front.

Why the pick won, in words, is ``engine.launch.layout_reasons``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from functools import cache

from pydantic import Field

from engine.engines.memory import Split
from engine.launch.candidate import Candidate, SearchInputs
from engine.launch.topology import nvlink_gpus
from engine.model.family import AttentionFamily
from engine.perf import Speed, speeds_overlap
from engine.perf.ranges import Metric
from engine.rules import Strict, load_data
from engine.scenario import Scenario


class LayoutRules(Strict):
    """``data/launch.yaml`` ``layout``: the thresholds the ranking uses, each with a source."""

    dp_attention_min_users: int = Field(ge=1)
    dp_attention_min_users_source: str
    dsa_prefers_dp_attention: bool
    dsa_source: str
    replicate_source: str
    latency_tp_source: str
    expert_parallel_with_tp: bool
    expert_parallel_source: str
    fp8_block_divisibility_source: str
    context_round_tokens: int = Field(ge=1)
    speed_tie_fraction: float = Field(ge=0, lt=1)
    speed_tie_source: str
    decode_graph_bs_step: int = Field(ge=1)
    decode_graph_bs_source: str = Field(min_length=1)


@cache
def layout_rules() -> LayoutRules:
    return load_data(LayoutRules, "launch.yaml", "layout")


def nvlink_domain(inp: SearchInputs, scenario: Scenario) -> int:
    """GPUs of one NVLink domain: a node's, or the rack's where its trays share one."""
    return nvlink_gpus(inp.gpu, scenario.gpus_per_node)


def prefers_dp_attention(inp: SearchInputs, scenario: Scenario) -> bool:
    """The playbook's shape for a MoE model with latent KV: DP-attention for DSA, or above the
    concurrency where it pays; never latency first."""
    rules = layout_rules()
    fam = inp.family.attention_family
    if not inp.family.moe or not fam.latent or scenario.latency == "latency":
        return False
    return (fam == AttentionFamily.DSA and rules.dsa_prefers_dp_attention) or (
        scenario.users > rules.dp_attention_min_users
    )


# the playbook's preferences, in the order they break a speed tie
PREFERENCES = ("style", "ep", "size")


def rank_parts(
    inp: SearchInputs,
    scenario: Scenario,
    replicas: int,
    s: Split,
    weights_fit: bool,
    context_fits: bool,
    users_fit: bool,
    users: int,
    context: int,
    deficit: int,
) -> tuple[tuple[str, float], ...]:
    """One candidate's rank before speed, part by part (smaller is better); ``with_speed``
    adds the speed parts once every candidate's speed is known."""
    # a node, or the rack's NVLink domain where its trays share one (GB200 / GB300 NVL72)
    per_node = nvlink_domain(inp, scenario)
    want_dp = prefers_dp_attention(inp, scenario)
    moe = inp.family.moe
    # style: 0 = the shape the playbook wants for this model and workload
    if moe and want_dp:
        style = 0 if s.dp > 1 else 1  # expert parallelism is the "ep" part's to rank
    elif moe and inp.family.attention_family.latent:
        style = 0 if s.dp == 1 else 1
    else:
        style = 0
    ep_pref = 0
    if moe and s.tp * s.dp > 1:
        want_ep = s.dp > 1 or layout_rules().expert_parallel_with_tp
        ep_pref = 0 if s.ep == want_ep else 1
    # TP size: latency first wants the largest TP inside a node; otherwise the smallest copy
    # that serves the workload, so the rest of the GPUs replicate
    size_pref = -min(s.tp, per_node) if scenario.latency == "latency" else s.gpus
    # experts sliced over GPUs of different nodes all-reduce every MoE layer over InfiniBand;
    # across nodes the experts go whole (EP) and tokens travel (data/advisors.yaml all_to_all)
    sliced_across_nodes = moe and not s.ep and s.moe_group > per_node
    # DSA's sparse kernels are built for DP-attention at TP 1-2 (the engines' own docs): a
    # kernel fact, ranked before speed, not a preference the speed model may overrule
    fam = inp.family.attention_family
    dsa = (
        want_dp
        and fam == AttentionFamily.DSA
        and layout_rules().dsa_prefers_dp_attention
        and not (s.dp > 1 and s.tp <= 2)
    )
    return (
        ("weights_fit", 0 if weights_fit else 1),
        ("deficit", 0 if weights_fit else deficit),
        ("context_fits", 0 if context_fits else 1),
        ("context", -context if not context_fits else 0),
        ("users_fit", 0 if users_fit else 1),
        ("sliced_across_nodes", 1 if sliced_across_nodes else 0),
        ("users", -users if not users_fit else 0),
        ("tp_in_node", 1 if s.tp > per_node else 0),
        ("copy_in_node", 1 if s.gpus > per_node else 0),
        ("dsa_kernels", 1 if dsa else 0),
        # pipeline stages only where nothing without them does as well: no measured run with PP
        # backs the speed model's estimate of the bubbles (data/perf.yaml fit), so speed is not
        # allowed to choose them
        ("pp", s.pp),
        ("style", style),
        ("ep", ep_pref),
        ("size", size_pref),
        ("replicas", -replicas),
    )


# --- figures and their ranges ----------------------------------------------------------------


def figure(sp: Speed, metric: Metric) -> float:
    if metric == "ttft":
        return sp.ttft_ms
    if metric == "tpot":
        return sp.tpot_ms
    return sp.output_tokens_per_s_per_gpu


def figure_range(sp: Speed, metric: Metric) -> tuple[float, float]:
    """Where the measured figure likely lies: the speed model's own range for it (the 10th to
    90th percentile of its out-of-sample errors, engine/perf ranges)."""
    return sp.range_of(metric)


def overlap(a: Speed, b: Speed, metric: Metric) -> bool:
    """Whether the two figures' ranges overlap: the speed model cannot tell them apart."""
    return speeds_overlap(a, b, metric)


def lower_is_better(metric: Metric) -> bool:
    return metric != "tps_per_gpu"


# --- the objectives ------------------------------------------------------------------------


def objective_metric(scenario: Scenario) -> Metric:
    """What the objective ranks: the time per output token latency first, else tokens/s per
    GPU."""
    return "tpot" if scenario.latency == "latency" else "tps_per_gpu"


OPERATING_POINT_STEPS = 8  # loads tried between the last within the bound and the first above
OPERATING_POINT_PRECISION = 64  # stop once the load is known within 1/64 of itself


def operating_point(
    scenario: Scenario,
    most: int,
    at: Callable[[int], Speed | None],
    unit: int = 1,
    tpot_at: Callable[[int], float] | None = None,
) -> tuple[int, Speed | None]:
    """The load the objective ranks a layout at, and its speed there (``at(n)``: the layout's
    speed with ``n`` requests at once; ``most``: the requests its KV holds at once). Throughput
    first: ``most``. Balanced: the most requests, up to ``most``, whose time per output token
    stays within the interactivity bound (none when one request per rank is above it). Latency
    first: none (it ranks at the asked load).

    Balanced tries whole multiples of ``unit`` (the attention ranks over every copy): a step
    waits for its busiest rank, so a load between two multiples has the TPOT of the next one
    and less output. ``tpot_at(n)``: the TPOT alone at such a load, cheaper than ``at`` (the
    search asks it; ``at`` is asked once, at the load found)."""
    if most < 1 or scenario.latency == "latency":
        return 0, None
    if scenario.latency == "throughput":
        return most, at(most)

    def tpot(n: int) -> float:
        if tpot_at is not None:
            return tpot_at(n)
        sp = at(n)
        return sp.tpot_ms if sp is not None else math.inf

    bound = scenario.tpot_bound_ms
    top = tpot(most)
    if top <= bound:
        return most, at(most)
    unit = unit if most >= unit else 1
    first = tpot(unit)
    if first > bound or not math.isfinite(top):
        return 0, None
    k = _last_within(bound, lambda k: tpot(k * unit), (1, first), (most // unit + 1, top))
    return k * unit, at(k * unit)


def _last_within(
    bound: float, tpot: Callable[[int], float], low: tuple[int, float], high: tuple[int, float]
) -> int:
    """The largest ``k`` whose ``tpot(k)`` stays within ``bound``, between ``low`` (within it)
    and ``high`` (above it), by regula falsi: the time per output token grows about linearly
    with the load (each request adds its KV reads to the step)."""
    (lo, t_lo), (hi, t_hi) = low, high
    for _ in range(OPERATING_POINT_STEPS):
        if hi - lo <= max(1, lo // OPERATING_POINT_PRECISION):
            break  # within about 2 % of the load: far inside the speed model's own range
        slope = (t_hi - t_lo) / (hi - lo)
        guess = lo + int((bound - t_lo) / slope) if slope > 0 else (lo + hi) // 2
        mid = min(max(guess, lo + 1), hi - 1)
        t = tpot(mid)
        if t <= bound:
            lo, t_lo = mid, t
        else:
            hi, t_hi = mid, t if math.isfinite(t) else t_hi
    return lo


def objective_speed(scenario: Scenario, c: Candidate) -> Speed | None:
    """The speed the objective ranks: at the operating point where there is one (throughput
    first, balanced), else at the asked load."""
    if scenario.latency != "latency" and c.peak is not None:
        return c.peak
    return c.speed


def objective_cost(scenario: Scenario, c: Candidate) -> float | None:
    """Smaller is better: the objective's figure (tokens/s per GPU negated)."""
    sp = objective_speed(scenario, c)
    if sp is None:
        return None
    metric = objective_metric(scenario)
    return figure(sp, metric) if lower_is_better(metric) else -figure(sp, metric)


def speed_cost(scenario: Scenario, speed: Speed) -> float:
    """Smaller is better, of one speed: latency first, the time per output token; otherwise the
    GPU-seconds per output token (1 / tokens/s per GPU)."""
    if scenario.latency == "latency":
        return speed.tpot_ms
    return 1.0 / max(speed.output_tokens_per_s_per_gpu, 1e-9)


def targets_missed(scenario: Scenario, speed: Speed | None) -> int:
    """How many of the scenario's TTFT / TPOT targets ``speed`` misses (a layout with no speed
    misses every target it has)."""
    wanted = [t for t in (scenario.ttft_ms, scenario.tpot_ms) if t is not None]
    if speed is None:
        return len(wanted)
    missed = 0
    if scenario.ttft_ms is not None and speed.ttft_ms > scenario.ttft_ms:
        missed += 1
    if scenario.tpot_ms is not None and speed.tpot_ms > scenario.tpot_ms:
        missed += 1
    return missed


def target_gap(scenario: Scenario, speed: Speed | None) -> float:
    """How far ``speed`` is from the targets it misses: its worst figure over its target (0
    when it meets them all). Where no layout meets a target, the nearest one ranks first: a
    target changes the pick even when no layout meets it."""
    if speed is None or not targets_missed(scenario, speed):
        return 0.0
    asked = ((scenario.ttft_ms, speed.ttft_ms), (scenario.tpot_ms, speed.tpot_ms))
    return max(value / target for target, value in asked if target is not None)


def over_bound(scenario: Scenario, speed: Speed | None) -> int:
    """Balanced: 1 when the time per output token at the asked load is above the interactivity
    bound by more than its range (the bound is the app's, not the user's target)."""
    if scenario.latency != "balanced" or speed is None:
        return 0
    low, _ = figure_range(speed, "tpot")
    return 1 if low > scenario.tpot_bound_ms else 0


# --- speed in the rank -----------------------------------------------------------------------

SPEED_PARTS = ("targets", "target_gap", "speed_bound", "speed", "ttft", "objective")


def _tie_class(
    group: list[Candidate], speed_of: Callable[[Candidate], Speed | None], metric: Metric
) -> dict[int, float]:
    """Per candidate (by id): 0 when its figure's range overlaps the best one's, else how far
    its figure is from the best (smaller is better), so that only a speed outside the best's
    range ranks before the preferences."""
    timed = [(c, sp) for c in group if (sp := speed_of(c)) is not None]
    if not timed:
        return {}
    sign = 1.0 if lower_is_better(metric) else -1.0
    _, best = min(timed, key=lambda cs: sign * figure(cs[1], metric))
    top = sign * figure(best, metric)
    return {
        id(c): 0.0 if overlap(sp, best, metric) else sign * figure(sp, metric) - top
        for c, sp in timed
    }


def _grouped(
    ranked: list[Candidate], key: Callable[[Candidate], tuple[float, ...]]
) -> list[list[Candidate]]:
    groups: dict[tuple[float, ...], list[Candidate]] = {}
    for c in ranked:
        groups.setdefault(key(c), []).append(c)
    return list(groups.values())


def with_speed(scenario: Scenario, ranked: list[Candidate]) -> list[Candidate]:
    """The candidates with their speed parts in the rank, after memory, the node boundary, the
    kernels and pipeline stages: the targets met; how near the missed ones come by their
    figures (the user's own targets, met or missed by the figure as the verdict says: the
    nearest is taken even against a preference, and the reason says so); the balanced bound;
    the objective's tie class; the playbook's preferences; then (latency first) TTFT's tie
    class; and last the objective's own figure. Candidates compete on speed only with those
    equal in every part before it."""
    metric = objective_metric(scenario)
    # each candidate's parts before speed (up to pipeline stages) and after (the preferences)
    split: dict[int, tuple[list[tuple[str, float]], list[tuple[str, float]]]] = {}
    for c in ranked:
        parts = [p for p in c.rank if p[0] not in SPEED_PARTS]
        cut = next(i for i, (name, _) in enumerate(parts) if name == "pp") + 1
        split[id(c)] = parts[:cut], parts[cut:]
    missed = {id(c): float(targets_missed(scenario, c.speed)) for c in ranked}

    heads = {
        id(c): [
            *split[id(c)][0],
            ("targets", missed[id(c)]),
            ("target_gap", target_gap(scenario, c.speed)),
            ("speed_bound", float(over_bound(scenario, c.speed))),
        ]
        for c in ranked
    }
    speed_class: dict[int, float] = {}
    ttft_class: dict[int, float] = {}
    for group in _grouped(ranked, lambda c: tuple(v for _, v in heads[id(c)])):
        speed_class |= _tie_class(group, lambda c: objective_speed(scenario, c), metric)
        if scenario.latency == "latency":  # then the lowest TTFT among the TPOT tie
            tied = [c for c in group if speed_class.get(id(c)) == 0.0]
            ttft_class |= _tie_class(tied, lambda c: c.speed, "ttft")
    out = []
    for c in ranked:
        tail = split[id(c)][1]
        cost = objective_cost(scenario, c)
        rank = (
            *heads[id(c)],
            ("speed", speed_class.get(id(c), 0.0)),
            *(p for p in tail if p[0] != "replicas"),
            ("ttft", ttft_class.get(id(c), 0.0)),
            ("objective", cost if cost is not None else 0.0),
            *(p for p in tail if p[0] == "replicas"),
        )
        out.append(replace(c, rank=rank))
    return out


def drafts_pay(scenario: Scenario, with_drafts: Candidate, without: Candidate) -> bool:
    """Whether the search's pick with speculative decoding beats the pick without it: it must
    fit as well (the draft layers take memory), then meet more targets or the bound, or lower
    the objective's cost at the asked load by more than the speed model's median error."""

    def fit(c: Candidate) -> tuple[bool, bool, bool]:
        return (c.weights_fit, c.context_fits, c.users_fit)

    if fit(with_drafts) != fit(without):
        return fit(with_drafts) > fit(without)
    a, b = with_drafts.speed, without.speed
    if a is None or b is None:
        return False
    missed = (targets_missed(scenario, a), over_bound(scenario, a))
    other = (targets_missed(scenario, b), over_bound(scenario, b))
    if missed != other:
        return missed < other
    # drafts and no drafts on the pick's own layout: one model's two estimates of the same
    # hardware share its errors, so the tie is the model's median error, not the two ranges
    tie = 1 + layout_rules().speed_tie_fraction
    return speed_cost(scenario, a) * tie < speed_cost(scenario, b)
