"""How the layout search ranks what fits, and why the pick won, in the Study's own numbers.

A candidate's rank is a tuple of named parts, smaller is better: the weights fit (or how far
they are from fitting), one request of the asked context fits (or the longest that does),
every user fits (or how many do), a copy of the model stays inside one node, then the serving
playbook's preferences (seed 004) — the shape it wants for this model and workload, the size of
a copy, expert parallelism, pipeline stages, replicas.

The reasons are the comparisons that decided: the pick against the runner-up and against the
best layout of each other shape (DP-attention or not, EP or not, replicated or not, pipelined or
not), each worded by the first part of the rank where the two differ, with both layouts'
figures. A playbook preference is cited only when it is that first part — when it broke a tie —
and then with the condition that made it apply (a threshold of 128 users is quoted only when the
scenario is on the side of it that the preference needs).
"""

from __future__ import annotations

from dataclasses import replace
from functools import cache

from pydantic import Field

from engine.decision import Bytes, Code, Decimal, Decision, Source, Tokens
from engine.engines.memory import Split
from engine.launch.candidate import Candidate, SearchInputs
from engine.launch.topology import nvlink_gpus
from engine.model.family import AttentionFamily
from engine.perf import Speed
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
    balanced_tpot_ms: float = Field(gt=0)
    balanced_tpot_source: str
    decode_graph_bs_step: int = Field(ge=1)
    decode_graph_bs_source: str = Field(min_length=1)


@cache
def layout_rules() -> LayoutRules:
    return load_data(LayoutRules, "launch.yaml", "layout")


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
    """One candidate's rank, part by part (smaller is better)."""
    # a node, or the rack's NVLink domain where its trays share one (GB200 / GB300 NVL72)
    per_node = _domain(inp, scenario)
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
        ("size", size_pref),
        ("ep", ep_pref),
        ("replicas", -replicas),
    )


# --- speed: among the layouts that fit, by the scenario's objective --------------------------


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


def over_bound(scenario: Scenario, speed: Speed | None) -> int:
    """Balanced: 1 when the time per output token is above the stated bound by more than the
    speed model's error (a bound of the app's, not the user's target)."""
    if scenario.latency != "balanced" or speed is None:
        return 0
    rules = layout_rules()
    return 1 if speed.tpot_ms > rules.balanced_tpot_ms * (1 + rules.speed_tie_fraction) else 0


def speed_cost(scenario: Scenario, speed: Speed) -> float:
    """Smaller is better: latency first, the time per output token; otherwise the GPU-seconds
    per output token (1 / tokens/s per GPU)."""
    if scenario.latency == "latency":
        return speed.tpot_ms
    return 1.0 / max(speed.output_tokens_per_s_per_gpu, 1e-9)


def objective(scenario: Scenario, c: Candidate) -> float | None:
    """The candidate's cost under the scenario's objective: throughput first at full load (the
    users the layout holds), the others at the scenario's own users."""
    sp = c.throughput if scenario.latency == "throughput" else c.speed
    return speed_cost(scenario, sp) if sp is not None else None


def with_speed(scenario: Scenario, ranked: list[Candidate]) -> list[Candidate]:
    """The candidates with their speed parts in the rank, after memory, the node boundary and
    the kernels: the targets met, the balanced bound, then the objective. Among candidates
    equal in every part before it, one within the speed model's error of the best is a tie, so
    that the playbook's preferences after it break it."""
    rules = layout_rules()
    tie = 1 + rules.speed_tie_fraction

    def parts(c: Candidate) -> tuple[tuple[str, float], ...]:
        sp = c.speed
        return (
            ("targets", float(targets_missed(scenario, sp))),
            ("speed_bound", float(over_bound(scenario, sp))),
        )

    def split_at(c: Candidate) -> tuple[list[tuple[str, float]], list[tuple[str, float]]]:
        base = [p for p in c.rank if p[0] not in ("targets", "speed_bound", "speed")]
        cut = next(i for i, (name, _) in enumerate(base) if name == "pp") + 1
        return [*base[:cut], *parts(c)], base[cut:]

    heads = {id(c): split_at(c) for c in ranked}
    best: dict[tuple[float, ...], float] = {}
    for c in ranked:
        cost_c = objective(scenario, c)
        if cost_c is None:
            continue
        key = tuple(v for _, v in heads[id(c)][0])
        best[key] = min(best.get(key, cost_c), cost_c)
    out = []
    for c in ranked:
        head, tail = heads[id(c)]
        key = tuple(v for _, v in head)
        value = 0.0
        cost_c = objective(scenario, c)
        if cost_c is not None and key in best:
            value = 0.0 if cost_c <= best[key] * tie else cost_c
        raw = objective(scenario, c)
        if raw is not None:
            # past the playbook's shape, a speed tie goes to the faster layout after all: the
            # speed model counts the copy's size better than "the largest TP" or "the smallest
            # copy" does
            tail = [(n, raw if n == "size" else v) for n, v in tail]
        out.append(replace(c, rank=(*head, ("speed", value), *tail)))
    return out


def drafts_pay(scenario: Scenario, with_drafts: Candidate, without: Candidate) -> bool:
    """Whether the search's pick with speculative decoding beats the pick without it: it must
    fit as well (the draft layers take memory), then meet more targets, or lower the objective
    by more than the speed model's error."""

    def fit(c: Candidate) -> tuple[bool, bool, bool]:
        return (c.weights_fit, c.context_fits, c.users_fit)

    if fit(with_drafts) != fit(without):
        return fit(with_drafts) > fit(without)
    a, b = with_drafts.speed, without.speed
    if a is None or b is None:
        return False
    missed = (targets_missed(scenario, a), over_bound(scenario, a))
    if missed != (targets_missed(scenario, b), over_bound(scenario, b)):
        return missed < (targets_missed(scenario, b), over_bound(scenario, b))
    return speed_cost(scenario, a) * (1 + layout_rules().speed_tie_fraction) < speed_cost(
        scenario, b
    )


# --- why the pick won ------------------------------------------------------------------------

PINNED = Code("layout.reason.pinned")
NO_TARGET = Code("layout.reason.no_target")
NO_FIT = Code("layout.reason.no_fit", "layout", "weights", "usable")
VS_WEIGHTS = Code("layout.vs.weights_fit", "pick", "rival", "weights", "usable")
VS_DEFICIT = Code("layout.vs.deficit", "pick", "rival", "pick_over", "rival_over")
VS_CONTEXT_FITS = Code("layout.vs.context_fits", "pick", "rival", "rival_context", "asked")
VS_CONTEXT = Code("layout.vs.context", "pick", "rival", "pick_context", "rival_context")
VS_USERS_FIT = Code(
    "layout.vs.users_fit", "pick", "rival", "pick_users", "rival_users", "asked", "context"
)
VS_USERS = Code("layout.vs.users", "pick", "rival", "pick_users", "rival_users", "asked")
VS_TP_IN_NODE = Code("layout.vs.tp_in_node", "pick", "rival", "per_node")
VS_COPY_IN_NODE = Code("layout.vs.copy_in_node", "pick", "rival", "per_node")
VS_TARGETS = Code(
    "layout.vs.targets",
    "pick", "rival", "pick_ttft", "pick_tpot", "rival_ttft", "rival_tpot", "ttft_target",
    "tpot_target",
)  # fmt: skip
VS_BOUND = Code("layout.vs.speed_bound", "pick", "rival", "pick_tpot", "rival_tpot", "bound",
                "source")  # fmt: skip
VS_FASTER = Code("layout.vs.speed.latency", "pick", "rival", "pick_tpot", "rival_tpot",
                 "pick_tps", "rival_tps")  # fmt: skip
VS_MORE = Code("layout.vs.speed.throughput", "pick", "rival", "pick_tps", "rival_tps",
               "pick_tpot", "rival_tpot")  # fmt: skip
VS_PEAK = Code("layout.vs.speed.peak", "pick", "rival", "pick_users", "rival_users", "pick_tps",
               "rival_tps", "pick_tpot", "rival_tpot")  # fmt: skip
VS_DSA = Code("layout.vs.style.dsa", "pick", "rival", "source")
VS_DP_ABOVE = Code("layout.vs.style.dp_attention", "pick", "rival", "users", "threshold", "source")
VS_TP_EP_BELOW = Code("layout.vs.style.tp_ep", "pick", "rival", "users", "threshold", "source")
VS_LATENCY_LATENT = Code("layout.vs.style.latency_latent", "pick", "rival")
VS_LATENCY_TP = Code("layout.vs.size.latency", "pick", "rival", "tp", "rival_tp", "source")
VS_REPLICATE = Code("layout.vs.size.replicate", "pick", "rival", "gpus", "rival_gpus", "source")
VS_EP = Code("layout.vs.ep", "pick", "rival", "source")
VS_SLICED = Code("layout.vs.sliced", "pick", "rival")
VS_SLICED_NODES = Code("layout.vs.sliced_across_nodes", "pick", "rival", "per_node")
VS_PP = Code("layout.vs.pp", "pick", "rival")
VS_REPLICAS = Code("layout.vs.replicas", "pick", "rival")
EP_WHOLE = Code("layout.reason.ep", "experts", "ranks")
EP_SLICED = Code("layout.reason.sliced", "ranks")
CONTEXT_SHORTENED = Code("layout.reason.context", "context")
MAX_RIVALS = 3


def _shape(c: Candidate) -> tuple[bool, bool, bool, bool]:
    s = c.layout.split
    return (s.dp > 1, s.ep, s.pp > 1, c.layout.replicas > 1)


def rivals(pick: Candidate, ranked: tuple[Candidate, ...]) -> list[Candidate]:
    """The layouts the pick is compared with: the runner-up, then the best of each other
    shape, in rank order."""
    out: list[Candidate] = []
    shapes = {_shape(pick)}
    for c in ranked[1:]:
        if len(out) >= MAX_RIVALS:
            break
        if not out or _shape(c) not in shapes:
            out.append(c)
            shapes.add(_shape(c))
    return out


def deciding_part(pick: Candidate, rival: Candidate) -> str | None:
    """The first part of the rank where the two differ (None: they tie)."""
    return next(
        (name for (name, a), (_, b) in zip(pick.rank, rival.rank, strict=True) if a != b), None
    )


def _domain(inp: SearchInputs, scenario: Scenario) -> int:
    """GPUs of one NVLink domain: a node's, or the rack's where its trays share one."""
    return nvlink_gpus(inp.gpu, scenario.gpus_per_node)


def compare(
    inp: SearchInputs, scenario: Scenario, pick: Candidate, rival: Candidate
) -> Decision | None:
    """Why ``pick`` ranks above ``rival``: the first part of the rank where they differ."""
    part = deciding_part(pick, rival)
    if part is None:
        return None
    p, r = pick.layout.name(), rival.layout.name()
    rules = layout_rules()
    if part == "weights_fit":
        return VS_WEIGHTS(
            pick=p,
            rival=r,
            weights=Bytes(rival.weights_per_gpu),
            usable=Bytes(rival.usable_per_gpu),
        )
    if part == "deficit":
        return VS_DEFICIT(
            pick=p,
            rival=r,
            pick_over=Bytes(pick.shortfall),
            rival_over=Bytes(rival.shortfall),
        )
    if part == "context_fits":
        return VS_CONTEXT_FITS(
            pick=p, rival=r, rival_context=Tokens(rival.context), asked=Tokens(inp.context)
        )
    if part == "context":
        return VS_CONTEXT(
            pick=p, rival=r, pick_context=Tokens(pick.context), rival_context=Tokens(rival.context)
        )
    if part == "users_fit":
        return VS_USERS_FIT(
            pick=p,
            rival=r,
            pick_users=pick.users,
            rival_users=rival.users,
            asked=scenario.users,
            context=Tokens(rival.context),
        )
    if part == "users":
        return VS_USERS(
            pick=p, rival=r, pick_users=pick.users, rival_users=rival.users, asked=scenario.users
        )
    if part == "sliced_across_nodes":
        return VS_SLICED_NODES(pick=p, rival=r, per_node=_domain(inp, scenario))
    if part in ("targets", "speed_bound", "speed") and pick.speed and rival.speed:
        ps, rs = pick.speed, rival.speed
        ms = "ms"
        if part == "targets":
            return VS_TARGETS(
                pick=p,
                rival=r,
                pick_ttft=Decimal(ps.ttft_ms, 0, ms),
                pick_tpot=Decimal(ps.tpot_ms, 1, ms),
                rival_ttft=Decimal(rs.ttft_ms, 0, ms),
                rival_tpot=Decimal(rs.tpot_ms, 1, ms),
                ttft_target=_target(scenario.ttft_ms, 0),
                tpot_target=_target(scenario.tpot_ms, 1),
            )
        if part == "speed_bound":
            return VS_BOUND(
                pick=p,
                rival=r,
                pick_tpot=Decimal(ps.tpot_ms, 1, ms),
                rival_tpot=Decimal(rs.tpot_ms, 1, ms),
                bound=Decimal(rules.balanced_tpot_ms, 0, ms),
                source=Source(rules.balanced_tpot_source),
            )
        tps = "tok/s"
        pick_tps = Decimal(ps.output_tokens_per_s_per_gpu, 0, tps)
        rival_tps = Decimal(rs.output_tokens_per_s_per_gpu, 0, tps)
        if scenario.latency == "throughput":
            return _at_full_load(pick, rival, p, r)
        if scenario.latency == "latency":
            return VS_FASTER(
                pick=p,
                rival=r,
                pick_tpot=Decimal(ps.tpot_ms, 1, ms),
                rival_tpot=Decimal(rs.tpot_ms, 1, ms),
                pick_tps=pick_tps,
                rival_tps=rival_tps,
            )
        return VS_MORE(
            pick=p,
            rival=r,
            pick_tps=pick_tps,
            rival_tps=rival_tps,
            pick_tpot=Decimal(ps.tpot_ms, 1, ms),
            rival_tpot=Decimal(rs.tpot_ms, 1, ms),
        )
    if part == "tp_in_node":
        return VS_TP_IN_NODE(pick=p, rival=r, per_node=_domain(inp, scenario))
    if part == "copy_in_node":
        return VS_COPY_IN_NODE(pick=p, rival=r, per_node=_domain(inp, scenario))
    if part == "style":
        return _style(inp, scenario, p, r)
    if part == "dsa_kernels":
        return VS_DSA(pick=p, rival=r, source=Source(rules.dsa_source))
    if part == "size" and pick.speed and rival.speed:
        ps, rs = pick.speed, rival.speed
        if scenario.latency == "throughput":
            return _at_full_load(pick, rival, p, r)
        if scenario.latency != "latency":
            return VS_MORE(
                pick=p,
                rival=r,
                pick_tps=Decimal(ps.output_tokens_per_s_per_gpu, 0, "tok/s"),
                rival_tps=Decimal(rs.output_tokens_per_s_per_gpu, 0, "tok/s"),
                pick_tpot=Decimal(ps.tpot_ms, 1, "ms"),
                rival_tpot=Decimal(rs.tpot_ms, 1, "ms"),
            )
        return VS_FASTER(
            pick=p,
            rival=r,
            pick_tpot=Decimal(ps.tpot_ms, 1, "ms"),
            rival_tpot=Decimal(rs.tpot_ms, 1, "ms"),
            pick_tps=Decimal(ps.output_tokens_per_s_per_gpu, 0, "tok/s"),
            rival_tps=Decimal(rs.output_tokens_per_s_per_gpu, 0, "tok/s"),
        )
    if part == "size":
        if scenario.latency == "latency":
            return VS_LATENCY_TP(
                pick=p,
                rival=r,
                tp=pick.layout.tp,
                rival_tp=rival.layout.tp,
                source=Source(rules.latency_tp_source),
            )
        return VS_REPLICATE(
            pick=p,
            rival=r,
            gpus=pick.layout.split.gpus,
            rival_gpus=rival.layout.split.gpus,
            source=Source(rules.replicate_source),
        )
    if part == "ep":
        if pick.layout.ep:
            return VS_EP(pick=p, rival=r, source=Source(rules.expert_parallel_source))
        return VS_SLICED(pick=p, rival=r)
    if part == "pp":
        return VS_PP(pick=p, rival=r)
    return VS_REPLICAS(pick=p, rival=r)


def _at_full_load(pick: Candidate, rival: Candidate, p: Decision, r: Decision) -> Decision:
    a, b = pick.throughput, rival.throughput
    assert a is not None and b is not None
    return VS_PEAK(
        pick=p,
        rival=r,
        pick_users=pick.users,
        rival_users=rival.users,
        pick_tps=Decimal(a.output_tokens_per_s_per_gpu, 0, "tok/s"),
        rival_tps=Decimal(b.output_tokens_per_s_per_gpu, 0, "tok/s"),
        pick_tpot=Decimal(a.tpot_ms, 1, "ms"),
        rival_tpot=Decimal(b.tpot_ms, 1, "ms"),
    )


def _target(value: float | None, digits: int) -> Decision | Decimal:
    return Decimal(value, digits, "ms") if value is not None else NO_TARGET()


def _style(inp: SearchInputs, scenario: Scenario, p: Decision, r: Decision) -> Decision:
    """The playbook's shape preference, with the condition that made it apply."""
    rules = layout_rules()
    fam = inp.family.attention_family
    if scenario.latency == "latency":
        return VS_LATENCY_LATENT(pick=p, rival=r)
    if prefers_dp_attention(inp, scenario):
        if fam == AttentionFamily.DSA and rules.dsa_prefers_dp_attention:
            return VS_DSA(pick=p, rival=r, source=Source(rules.dsa_source))
        return VS_DP_ABOVE(
            pick=p,
            rival=r,
            users=scenario.users,
            threshold=rules.dp_attention_min_users,
            source=Source(rules.dp_attention_min_users_source),
        )
    return VS_TP_EP_BELOW(
        pick=p,
        rival=r,
        users=scenario.users,
        threshold=rules.dp_attention_min_users,
        source=Source(rules.dp_attention_min_users_source),
    )


def reasons(
    inp: SearchInputs, scenario: Scenario, pick: Candidate, ranked: tuple[Candidate, ...]
) -> tuple[Decision, ...]:
    """Why the search picked ``pick`` over the others, then what the pick does with experts and
    the context."""
    out: list[Decision] = []
    if scenario.pinned:
        out.append(PINNED())
    if not pick.weights_fit:
        out.append(
            NO_FIT(
                layout=pick.layout.name(),
                weights=Bytes(pick.weights_per_gpu),
                usable=Bytes(pick.usable_per_gpu),
            )
        )
    decided: dict[str, Decision] = {}
    for rival in rivals(pick, ranked):
        part = deciding_part(pick, rival)
        said = compare(inp, scenario, pick, rival)
        if said is not None and part is not None and part not in decided:
            decided[part] = said  # one comparison per deciding part
    order = [name for name, _ in pick.rank]
    out += [decided[p] for p in sorted(decided, key=order.index)]  # the most decisive first
    fam = inp.family
    split = pick.layout.split
    if "ep" not in decided:  # what the pick does with the experts, unless a comparison said it
        if split.ep:
            out.append(EP_WHOLE(experts=fam.num_experts, ranks=split.moe_group))
        elif fam.moe and split.moe_group > 1:
            out.append(EP_SLICED(ranks=split.moe_group))
    if pick.weights_fit and not pick.context_fits and pick.context:
        out.append(CONTEXT_SHORTENED(context=Tokens(pick.context)))
    return tuple(out)
