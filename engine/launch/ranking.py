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

from functools import cache
from typing import TYPE_CHECKING

from pydantic import Field

from engine.decision import Bytes, Code, Decision, Source, Tokens
from engine.launch.memory import Split
from engine.model.family import AttentionFamily
from engine.rules import Strict, load_data
from engine.scenario import Scenario

if TYPE_CHECKING:
    from engine.launch.layout import Candidate, SearchInputs


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
    max_ctx: int,
    deficit: int,
) -> tuple[tuple[str, float], ...]:
    """One candidate's rank, part by part (smaller is better)."""
    per_node = scenario.gpus_per_node
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
    return (
        ("weights_fit", 0 if weights_fit else 1),
        ("deficit", 0 if weights_fit else deficit),
        ("context_fits", 0 if context_fits else 1),
        ("context", -max_ctx if not context_fits else 0),
        ("users_fit", 0 if users_fit else 1),
        ("sliced_across_nodes", 1 if sliced_across_nodes else 0),
        ("users", -users if not users_fit else 0),
        ("tp_in_node", 1 if s.tp > per_node else 0),
        ("copy_in_node", 1 if s.gpus > per_node else 0),
        ("style", style),
        ("size", size_pref),
        ("ep", ep_pref),
        ("pp", s.pp),
        ("replicas", -replicas),
    )


# --- why the pick won ------------------------------------------------------------------------

PINNED = Code("layout.reason.pinned")
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
            pick_over=Bytes(pick.rank[1][1]),
            rival_over=Bytes(rival.rank[1][1]),
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
        return VS_SLICED_NODES(pick=p, rival=r, per_node=scenario.gpus_per_node)
    if part == "tp_in_node":
        return VS_TP_IN_NODE(pick=p, rival=r, per_node=scenario.gpus_per_node)
    if part == "copy_in_node":
        return VS_COPY_IN_NODE(pick=p, rival=r, per_node=scenario.gpus_per_node)
    if part == "style":
        return _style(inp, scenario, p, r)
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
