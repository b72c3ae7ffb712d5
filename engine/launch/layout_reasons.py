"""Why the layout search picked its layout, in the Study's own numbers.

The reasons are the comparisons that decided: the pick against the runner-up and against the
best layout of each other shape (DP-attention or not, EP or not, replicated or not, pipelined or
not), each worded by the first part of the rank (``engine.launch.ranking``) where the two
differ, with both layouts' figures. A speed is called better only where the two figures' ranges
do not overlap; where they do, the reason says they tie and names the playbook's preference
that broke the tie (or that none did). A speed that wins against a preference says it
overrules it, with both figures. A playbook preference is cited with the condition that made it
apply (a threshold of 128 users is quoted only when the scenario is on the side of it that the
preference needs).
"""

from __future__ import annotations

from engine.decision import Bytes, Code, Decimal, Decision, Param, Source, Tokens
from engine.launch.candidate import Candidate, SearchInputs
from engine.launch.ranking import (
    PREFERENCES,
    figure,
    layout_rules,
    nvlink_domain,
    objective_metric,
    objective_speed,
    overlap,
    prefers_dp_attention,
)
from engine.model.family import AttentionFamily
from engine.perf import Speed
from engine.perf.ranges import Metric
from engine.scenario import DEFAULTS, Scenario

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
VS_NEARER = Code(
    "layout.vs.target_gap",
    "pick", "rival", "pick_ttft", "pick_tpot", "rival_ttft", "rival_tpot", "ttft_target",
    "tpot_target",
)  # fmt: skip
VS_BOUND = Code("layout.vs.speed_bound", "pick", "rival", "pick_tpot", "rival_tpot", "bound",
                "source")  # fmt: skip
# a speed better than the other's outside both ranges
VS_FASTER = Code("layout.vs.speed.latency", "pick", "rival", "pick_tpot", "rival_tpot",
                 "pick_tps", "rival_tps")  # fmt: skip
VS_TTFT = Code("layout.vs.speed.ttft", "pick", "rival", "pick_tpot", "rival_tpot", "pick_ttft",
               "rival_ttft")  # fmt: skip
VS_PEAK = Code("layout.vs.speed.peak", "pick", "rival", "pick_users", "rival_users", "pick_tps",
               "rival_tps", "pick_tpot", "rival_tpot")  # fmt: skip
VS_BALANCED = Code("layout.vs.speed.balanced", "pick", "rival", "pick_users", "rival_users",
                   "pick_tps", "rival_tps", "bound")  # fmt: skip
# the rival is outside the range of the best layout, whose range the pick's overlaps
VS_OUTSIDE = Code("layout.vs.speed.outside", "pick", "rival", "best", "pick_figure",
                  "rival_figure", "best_figure")  # fmt: skip
VS_OVERRULES = Code("layout.vs.overrules", "said", "preference")
# the targets the user set, nearer by the pick's figures, overrule a preference of the rival's
VS_TARGET_OVERRULES = Code("layout.vs.target_overrules", "said", "preference")
# speeds whose ranges overlap: a preference breaks the tie, or the figure where none does
VS_TIE = Code("layout.vs.tie", "pick", "rival", "pick_figure", "rival_figure", "preference")
VS_TIE_FIGURE = Code("layout.vs.tie_figure", "pick", "rival", "pick_figure", "rival_figure")
FIGURE_TPOT = Code("layout.figure.tpot", "value")
FIGURE_TTFT = Code("layout.figure.ttft", "value")
FIGURE_TPS = Code("layout.figure.tps", "value")
FIGURE_TPS_AT = Code("layout.figure.tps_at", "value", "users")
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
# the codes that call one speed better than another: their figures' ranges never overlap
BETTER = frozenset(c.code for c in (VS_FASTER, VS_TTFT, VS_PEAK, VS_BALANCED))
MS, TPS = "ms", "tok/s"


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


def figure_of(scenario: Scenario, c: Candidate, metric: Metric | None = None) -> Decision:
    """A layout's figure under the objective (or ``metric`` at the asked load), worded."""
    if metric == "ttft" and c.speed is not None:
        return FIGURE_TTFT(value=Decimal(c.speed.ttft_ms, 0, MS))
    sp = objective_speed(scenario, c)
    assert sp is not None
    if objective_metric(scenario) == "tpot":
        return FIGURE_TPOT(value=Decimal(sp.tpot_ms, 1, MS))
    value = Decimal(sp.output_tokens_per_s_per_gpu, 0, TPS)
    if c.peak is not None:
        return FIGURE_TPS_AT(value=value, users=c.peak_users)
    return FIGURE_TPS(value=value)


def _memory(inp: SearchInputs, scenario: Scenario, pick: Candidate, rival: Candidate,
            part: str) -> Decision | None:  # fmt: skip
    """The comparisons of memory and of where a copy sits (None: another part)."""
    p, r = pick.layout.name(), rival.layout.name()
    if part == "weights_fit":
        weights, usable = Bytes(rival.weights_per_gpu), Bytes(rival.usable_per_gpu)
        return VS_WEIGHTS(pick=p, rival=r, weights=weights, usable=usable)
    if part == "deficit":
        over = Bytes(pick.shortfall), Bytes(rival.shortfall)
        return VS_DEFICIT(pick=p, rival=r, pick_over=over[0], rival_over=over[1])
    if part == "context_fits":
        return VS_CONTEXT_FITS(
            pick=p, rival=r, rival_context=Tokens(rival.context), asked=Tokens(inp.context)
        )
    if part == "context":
        return VS_CONTEXT(
            pick=p, rival=r, pick_context=Tokens(pick.context), rival_context=Tokens(rival.context)
        )
    users = {"pick_users": pick.users, "rival_users": rival.users, "asked": scenario.users}
    if part == "users_fit":
        return VS_USERS_FIT(pick=p, rival=r, **users, context=Tokens(rival.context))
    if part == "users":
        return VS_USERS(pick=p, rival=r, **users)
    per_node = nvlink_domain(inp, scenario)
    if part == "sliced_across_nodes":
        return VS_SLICED_NODES(pick=p, rival=r, per_node=per_node)
    if part == "tp_in_node":
        return VS_TP_IN_NODE(pick=p, rival=r, per_node=per_node)
    if part == "copy_in_node":
        return VS_COPY_IN_NODE(pick=p, rival=r, per_node=per_node)
    if part == "dsa_kernels":
        return VS_DSA(pick=p, rival=r, source=Source(layout_rules().dsa_source))
    if part == "pp":
        return VS_PP(pick=p, rival=r)
    return None


def _asked_speeds(pick: Speed, rival: Speed) -> dict[str, Decimal]:
    return {
        "pick_ttft": Decimal(pick.ttft_ms, 0, MS),
        "rival_ttft": Decimal(rival.ttft_ms, 0, MS),
        "pick_tpot": Decimal(pick.tpot_ms, 1, MS),
        "rival_tpot": Decimal(rival.tpot_ms, 1, MS),
    }


def _target(value: float | None, digits: int) -> Decision | Decimal:
    return Decimal(value, digits, MS) if value is not None else NO_TARGET()


def _bound(scenario: Scenario, pick: Candidate, rival: Candidate, part: str) -> Decision:
    """The targets or the balanced bound: which the rival misses."""
    assert pick.speed is not None and rival.speed is not None
    p, r = pick.layout.name(), rival.layout.name()
    figures = _asked_speeds(pick.speed, rival.speed)
    if part in ("targets", "target_gap"):
        code = VS_TARGETS if part == "targets" else VS_NEARER
        return code(
            pick=p,
            rival=r,
            **figures,
            ttft_target=_target(scenario.ttft_ms, 0),
            tpot_target=_target(scenario.tpot_ms, 1),
        )
    return VS_BOUND(
        pick=p,
        rival=r,
        pick_tpot=figures["pick_tpot"],
        rival_tpot=figures["rival_tpot"],
        bound=Decimal(scenario.tpot_bound_ms, 0, MS),
        source=Source(DEFAULTS.tpot_bound_ms_why),
    )


def _better(scenario: Scenario, pick: Candidate, rival: Candidate) -> Decision:
    """The objective's figures of two layouts whose ranges do not overlap."""
    p, r = pick.layout.name(), rival.layout.name()
    if scenario.latency == "latency":
        ps, rs = pick.speed, rival.speed
        assert ps is not None and rs is not None
        return VS_FASTER(
            pick=p,
            rival=r,
            pick_tpot=Decimal(ps.tpot_ms, 1, MS),
            rival_tpot=Decimal(rs.tpot_ms, 1, MS),
            pick_tps=Decimal(ps.output_tokens_per_s_per_gpu, 0, TPS),
            rival_tps=Decimal(rs.output_tokens_per_s_per_gpu, 0, TPS),
        )
    a, b = objective_speed(scenario, pick), objective_speed(scenario, rival)
    assert a is not None and b is not None
    tps: dict[str, Param] = {
        "pick_tps": Decimal(a.output_tokens_per_s_per_gpu, 0, TPS),
        "rival_tps": Decimal(b.output_tokens_per_s_per_gpu, 0, TPS),
        "pick_users": pick.peak_users,
        "rival_users": rival.peak_users,
    }
    if scenario.latency == "balanced":
        return VS_BALANCED(pick=p, rival=r, **tps, bound=Decimal(scenario.tpot_bound_ms, 0, MS))
    return VS_PEAK(
        pick=p,
        rival=r,
        **tps,
        pick_tpot=Decimal(a.tpot_ms, 1, MS),
        rival_tpot=Decimal(b.tpot_ms, 1, MS),
    )


def _best(scenario: Scenario, pick: Candidate, ranked: tuple[Candidate, ...],
          metric: Metric) -> Candidate:  # fmt: skip
    """The layout with the best figure among those the pick competed with on speed (equal to
    it in every part before speed)."""
    cut = [name for name, _ in pick.rank].index("speed")
    same = [c for c in ranked if c.rank[:cut] == pick.rank[:cut]]

    def key(c: Candidate) -> float:
        sp = c.speed if metric == "ttft" else objective_speed(scenario, c)
        if sp is None:
            return float("inf")
        x = figure(sp, metric)
        return -x if metric == "tps_per_gpu" else x

    return min(same, key=key)


def _speed(scenario: Scenario, pick: Candidate, rival: Candidate, ranked: tuple[Candidate, ...],
           part: str) -> Decision:  # fmt: skip
    """The pick is faster by the objective (or, latency first, by TTFT among a TPOT tie)."""
    metric: Metric = "ttft" if part == "ttft" else objective_metric(scenario)

    def at(c: Candidate) -> Speed:
        sp = c.speed if metric == "ttft" else objective_speed(scenario, c)
        assert sp is not None
        return sp

    if overlap(at(pick), at(rival), metric):  # only the best's range leaves the rival out
        best = _best(scenario, pick, ranked, metric)
        return VS_OUTSIDE(
            pick=pick.layout.name(),
            rival=rival.layout.name(),
            best=best.layout.name(),
            pick_figure=figure_of(scenario, pick, metric),
            rival_figure=figure_of(scenario, rival, metric),
            best_figure=figure_of(scenario, best, metric),
        )
    if part == "ttft":
        assert pick.speed is not None and rival.speed is not None
        f = _asked_speeds(pick.speed, rival.speed)
        return VS_TTFT(pick=pick.layout.name(), rival=rival.layout.name(), **f)
    return _better(scenario, pick, rival)


def _preference(
    inp: SearchInputs, scenario: Scenario, part: str, winner: Candidate, loser: Candidate
) -> Decision:
    """The playbook's preference ``part`` for ``winner`` over ``loser``."""
    rules = layout_rules()
    w, lo = winner.layout.name(), loser.layout.name()
    if part == "style":
        return _style(inp, scenario, w, lo)
    if part == "ep":
        if winner.layout.ep:
            return VS_EP(pick=w, rival=lo, source=Source(rules.expert_parallel_source))
        return VS_SLICED(pick=w, rival=lo)
    if scenario.latency == "latency":
        return VS_LATENCY_TP(
            pick=w,
            rival=lo,
            tp=winner.layout.tp,
            rival_tp=loser.layout.tp,
            source=Source(rules.latency_tp_source),
        )
    return VS_REPLICATE(
        pick=w,
        rival=lo,
        gpus=winner.layout.split.gpus,
        rival_gpus=loser.layout.split.gpus,
        source=Source(rules.replicate_source),
    )


def _overruled(pick: Candidate, rival: Candidate) -> str | None:
    """The first preference the rival wins, which the pick's speed overrules (None: none)."""
    parts = dict(pick.rank), dict(rival.rank)
    return next((p for p in PREFERENCES if parts[1][p] < parts[0][p]), None)


def compare(
    inp: SearchInputs,
    scenario: Scenario,
    pick: Candidate,
    rival: Candidate,
    ranked: tuple[Candidate, ...] = (),
) -> Decision | None:
    """Why ``pick`` ranks above ``rival``: the first part of the rank where they differ."""
    part = deciding_part(pick, rival)
    if part is None:
        return None
    said = _memory(inp, scenario, pick, rival, part)
    if said is not None:
        return said
    timed = pick.speed is not None and rival.speed is not None
    if part in ("targets", "target_gap", "speed_bound") and timed:
        said = _bound(scenario, pick, rival, part)
        overruled = _overruled(pick, rival) if part == "target_gap" else None
        if overruled is None:
            return said
        preference = _preference(inp, scenario, overruled, rival, pick)
        return VS_TARGET_OVERRULES(said=said, preference=preference)
    if part in ("speed", "ttft") and timed:
        said = _speed(scenario, pick, rival, ranked or (pick, rival), part)
        overruled = _overruled(pick, rival)
        if overruled is None:
            return said
        preference = _preference(inp, scenario, overruled, rival, pick)
        return VS_OVERRULES(said=said, preference=preference)
    if part in PREFERENCES:
        preference = _preference(inp, scenario, part, pick, rival)
        if not timed or objective_speed(scenario, pick) is None:
            return preference
        return VS_TIE(
            pick=pick.layout.name(),
            rival=rival.layout.name(),
            pick_figure=figure_of(scenario, pick),
            rival_figure=figure_of(scenario, rival),
            preference=preference,
        )
    if part == "objective" and timed:
        return VS_TIE_FIGURE(
            pick=pick.layout.name(),
            rival=rival.layout.name(),
            pick_figure=figure_of(scenario, pick),
            rival_figure=figure_of(scenario, rival),
        )
    return VS_REPLICAS(pick=pick.layout.name(), rival=rival.layout.name())


def _style(inp: SearchInputs, scenario: Scenario, p: Decision, r: Decision) -> Decision:
    """The playbook's shape preference, with the condition that made it apply."""
    rules = layout_rules()
    fam = inp.family.attention_family
    if scenario.latency == "latency":
        return VS_LATENCY_LATENT(pick=p, rival=r)
    dp = prefers_dp_attention(inp, scenario)
    if dp and fam == AttentionFamily.DSA and rules.dsa_prefers_dp_attention:
        return VS_DSA(pick=p, rival=r, source=Source(rules.dsa_source))
    # the users asked for against the playbook's threshold: DP-attention above, TP + EP below
    return (VS_DP_ABOVE if dp else VS_TP_EP_BELOW)(
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
        said = compare(inp, scenario, pick, rival, ranked)
        if said is not None and part is not None and part not in decided:
            decided[part] = said  # one comparison per deciding part
    order = [name for name, _ in pick.rank]
    out += [decided[p] for p in sorted(decided, key=order.index)]  # the most decisive first
    fam = inp.family
    split = pick.layout.split
    experts = (VS_EP.code, VS_SLICED.code)
    said_ep = any(d.code in experts for r in decided.values() for d in r.walk())
    if not said_ep:  # what the pick does with the experts, unless a comparison said it
        if split.ep:
            out.append(EP_WHOLE(experts=fam.num_experts, ranks=split.moe_group))
        elif fam.moe and split.moe_group > 1:
            out.append(EP_SLICED(ranks=split.moe_group))
    if pick.weights_fit and not pick.context_fits and pick.context:
        out.append(CONTEXT_SHORTENED(context=Tokens(pick.context)))
    return tuple(out)
