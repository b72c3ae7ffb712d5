"""What the plan actually made for the scenario, as troubleshooting reads it.

A cause is scored against the plan the Study made (``plan_facts``): experts placed whole (EP) or
sliced, as the engines' rules place them at the picked layout; DP-attention or not; the latent
KV copied on every attention-TP rank or kept once; the memory fraction pinned by the plan or left
to the engine; the parsers and the prefix cache as the plan's own command sets them; one copy or
replicas. A cause whose fix would undo one of the plan's own choices says what undoing it costs,
in the Study's figures (``PlanFacts.costs``): the best layout of these GPUs that makes the
change, against the pick.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from engine.decision import Code, Decision, Percent
from engine.engines import adapter
from engine.launch.candidate import Candidate
from engine.launch.layout_reasons import figure_of
from engine.launch.plan import LaunchPlan
from engine.study import Study

# each plan fact a scoring table row may name (troubleshoot.fact.<fact> words it)
PLAN_FACTS = (
    "plan_ep",
    "plan_experts_sliced",
    "plan_dp_attention",
    "plan_no_dp_attention",
    "plan_latent_replicated",
    "plan_latent_once",
    "plan_fraction_pinned",
    "plan_replicas",
    "plan_one_copy",
    "plan_sets_tool_parser",
    "plan_sets_reasoning_parser",
    "plan_prefix_cache_on",
    "plan_no_backend_pin",
)

COST_LAYOUT = Code(
    "troubleshoot.cost.layout",
    "pick", "rival", "pick_users", "rival_users", "pick_figure", "rival_figure",
)  # fmt: skip
COST_NO_LAYOUT = Code("troubleshoot.cost.no_layout", "pick")
COST_FRACTION = Code("troubleshoot.cost.fraction", "fraction", "why")


@dataclass(frozen=True)
class PlanFacts:
    """The plan's choices that hold (``holding``), and for each choice a fix may undo, what
    undoing it costs (``costs``: plan fact -> decision with the Study's figures)."""

    holding: frozenset[str]
    costs: Mapping[str, Decision] = field(default_factory=lambda: MappingProxyType({}))


def _sets(plan: LaunchPlan | None, setting: str) -> bool:
    if plan is None:
        return False
    try:
        flag = adapter(plan.engine).flag(setting)  # type: ignore[arg-type]
    except KeyError:
        return False
    return any(f.flag == flag for f in plan.flags)


def _best(st: Study, keep: Callable[[Candidate], bool]) -> Candidate | None:
    """The best-ranked candidate that makes the change and runs (the candidates are ranked)."""
    return next((c for c in st.search.candidates if keep(c) and c.speed is not None), None)


def _layout_cost(st: Study, keep: Callable[[Candidate], bool]) -> Decision:
    pick = st.fit
    rival = _best(st, keep)
    if rival is None or pick.speed is None:
        return COST_NO_LAYOUT(pick=pick.layout.name())
    s = st.scenario
    return COST_LAYOUT(
        pick=pick.layout.name(),
        rival=rival.layout.name(),
        pick_users=pick.users,
        rival_users=rival.users,
        pick_figure=figure_of(s, pick),
        rival_figure=figure_of(s, rival),
    )


def plan_facts(st: Study) -> PlanFacts:
    """The facts of the plan the Study made for its own scenario and engine."""
    pick = st.fit
    split = pick.layout.split
    moe, latent = st.family.moe, st.family.attention_family.latent
    plan = st.plan
    held: set[str] = set()
    costs: dict[str, Decision] = {}
    if moe and split.ep:
        held.add("plan_ep")
    elif moe and split.moe_group > 1:
        held.add("plan_experts_sliced")
        costs["plan_experts_sliced"] = _layout_cost(
            st, lambda c: c.layout.ep and c.layout.split.dp == split.dp
        )
    if split.dp > 1:
        held.add("plan_dp_attention")
        costs["plan_dp_attention"] = _layout_cost(st, lambda c: c.layout.split.dp == 1)
    else:
        held.add("plan_no_dp_attention")
    if latent and split.tp > 1:
        held.add("plan_latent_replicated")
        costs["plan_latent_replicated"] = _layout_cost(st, lambda c: c.layout.split.tp == 1)
    elif latent:
        held.add("plan_latent_once")
    if pick.fraction_pinned:
        held.add("plan_fraction_pinned")
        costs["plan_fraction_pinned"] = COST_FRACTION(
            fraction=Percent(pick.fraction), why=pick.fraction_why
        )
    held.add("plan_replicas" if pick.layout.replicas > 1 else "plan_one_copy")
    if _sets(plan, "tool_call_parser"):
        held.add("plan_sets_tool_parser")
    if _sets(plan, "reasoning_parser"):
        held.add("plan_sets_reasoning_parser")
    if plan is not None and not _touches_prefix_cache(plan):
        held.add("plan_prefix_cache_on")
    if plan is not None and not _sets(plan, "attention_backend"):
        held.add("plan_no_backend_pin")
    return PlanFacts(frozenset(held), MappingProxyType(costs))


def _touches_prefix_cache(plan: LaunchPlan) -> bool:
    """Whether the plan's command touches the prefix cache at all (its on switch, its off
    switch or a --no- form): the plan leaves it to the engine's default, on, unless it does."""
    spelled = adapter(plan.engine).flag("prefix_cache").removeprefix("--")
    return any(spelled in f.flag for f in plan.flags)
