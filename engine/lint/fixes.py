"""The values a fix writes, chosen from the Study, never from a model's name: the TP nearest the
command's that splits the model and holds its weights on the GPUs given; the Study's own layout
on the GPUs given (its pick, else a candidate that runs there), every parallel size set together;
and the least of the Study's re-checked alternatives that the command can express (the memory
fraction, the KV dtype, the context, the requests at once). The linter lints the command again
after each round of fixes, so a value here is a proposal the next round checks."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engine.alternatives import alternatives
from engine.decision import Decision
from engine.engines import Setting, adapter
from engine.engines.memory import Split
from engine.errors import InputError
from engine.launch.candidate import Candidate, Layout
from engine.launch.layout import divisors, split_problem
from engine.lint.findings import Edit
from engine.lint.lint_context import Ctx
from engine.scenario import MAX_GPUS_PER_NODE, make_scenario
from engine.scenario import fields as scenario_table
from engine.study import Study, study

# the settings that carry a layout, and the words a copy over several nodes adds
PARALLEL: tuple[Setting, ...] = ("tp", "dp", "pp", "ep", "attention_dp", "attention_dp_legacy")
MULTI_NODE: tuple[Setting, ...] = (
    "nnodes",
    "node_rank",
    "leader_address",
    "leader_port",
    "dp_local",
    "dp_address",
    "dp_rpc_port",
    "dp_start_rank",
    "headless",
    "dp_hybrid_lb",
)
# the Scenario fields an alternative may change that a command's own flags can say (a value the
# flag takes as it is), each with the setting the scenario table names as its lint source
EXPRESSIBLE: dict[str, Setting] = {
    r.name: r.spec.setting
    for r in scenario_table()
    if r.name in ("memory_fraction", "kv_dtype", "context", "max_num_seqs")
    and r.spec.setting is not None
}
_LAYOUT_FIELDS = ("tp", "dp", "pp", "ep", "replicas")


def tp_choice(ctx: Ctx) -> int | None:
    """The TP flag value nearest the command's (ties: the larger) that splits the model, stays
    within the GPUs given (or the command's own), and holds the weights there, studied like the
    command; None when no TP does."""
    st, fields = ctx.facts, ctx.scenario_fields
    if st is None or fields is None:
        return None
    s = ctx.settings
    lay = s.layout(st.family.moe)
    scale = max(1, s.tp // max(lay["tp"], 1))  # SGLang: --tp-size spans the attention-DP ranks
    others = max(1, s.world // max(s.tp, 1))  # PP stages × DP copies
    available = ctx.gpus or s.world
    nodes = int(fields["nodes"])
    options: list[tuple[int, int]] = []
    for d in divisors(st.config.num_attention_heads):
        world = others * d * scale
        if d == lay["tp"] or world > available or world % nodes:
            continue
        if world // nodes > MAX_GPUS_PER_NODE:
            continue
        ep = bool(lay["ep"]) and d * lay["dp"] > 1
        if split_problem(st.config, st.architecture, st.family, Split(d, lay["dp"], lay["pp"], ep)):
            continue
        options.append((d, world))
    options.sort(key=lambda o: (abs(o[0] - lay["tp"]), -o[0]))
    for d, world in options[:8]:
        changes = {"tp": d, "ep": fields["ep"] if d * lay["dp"] > 1 else None}
        hardware = {"gpus_per_node": world // nodes, "nodes": nodes}
        try:
            sized = study(make_scenario(**fields | changes | hardware))
        except InputError:
            continue
        if sized.search.pick.weights_fit:
            return int(d * scale)
    return None


def on_given_gpus(ctx: Ctx) -> Study | None:
    """The Study of the command's model and settings (engine, context, KV dtype, memory
    fraction, requests at once, images) on the GPUs given, in one node, the layout left to the
    search; None when it cannot be studied (no config, more GPUs than one node holds)."""
    fields = ctx.scenario_fields
    if fields is None:
        return None
    gpus = ctx.gpus or ctx.settings.world
    if not 1 <= gpus <= MAX_GPUS_PER_NODE:
        return None
    free: dict[str, Any] = dict.fromkeys(_LAYOUT_FIELDS)
    try:
        return study(make_scenario(**fields | free | {"gpus_per_node": gpus, "nodes": 1}))
    except InputError:
        return None


@dataclass(frozen=True)
class LayoutFix:
    """A layout the Study runs on the GPUs given, as the command's flags."""

    layout: Layout
    gpus: int  # the GPUs it was chosen for
    words: str  # its parallel flags as the engine spells them
    edits: tuple[Edit, ...]


def study_layout(ctx: Ctx) -> LayoutFix | None:
    """The Study's pick on the GPUs given, else the best-ranked candidate that runs there and one
    server of this engine can hold: every parallel flag set to it, the others and the words of a
    copy over several nodes dropped. Runs: its weights fit, and one request at the command's
    context where any candidate's does."""
    st = on_given_gpus(ctx)
    if st is None:
        return None
    moe = st.family.moe
    eng = adapter(ctx.engine)
    ranked = [st.search.pick, *(c for c in st.search.candidates if c is not st.search.pick)]
    fits = [c for c in ranked if c.weights_fit]
    runs = [c for c in fits if c.context_fits] or fits
    for c in runs:
        if c.layout.replicas > 1 and not eng.merges_copies(moe, c.layout.split.dp):
            continue  # several copies of this model are several servers
        return _as_flags(ctx, c, st.scenario.total_gpus)
    return None


def _as_flags(ctx: Ctx, c: Candidate, gpus: int) -> LayoutFix:
    eng = adapter(ctx.engine)
    lay = c.layout
    name = lay.name()
    wanted = {f.flag: f.value for f in eng.parallel_flags(lay.split, lay.replicas, name, name)}
    edits: list[Edit] = []
    for setting in (*PARALLEL, *MULTI_NODE):
        if not eng.has(setting):
            continue
        flag = eng.flag(setting)
        arg = ctx.arg(flag)
        if flag in wanted:
            value = wanted[flag]
            if arg is None:
                edits.append(Edit("add", flag, value))
            elif value is not None and arg.value != value:
                edits.append(Edit("change", arg.written, value, arg.index))
        elif arg is not None:
            edits.append(Edit("drop", arg.written, index=arg.index))
    words = " ".join(f if v is None else f"{f} {v}" for f, v in wanted.items())
    return LayoutFix(lay, gpus, words, tuple(edits))


@dataclass(frozen=True)
class ChangeFix:
    """One of the Study's re-checked alternatives, as the command's flags."""

    what: Decision  # the change, as the Study words it
    words: str
    edits: tuple[Edit, ...]


def study_change(ctx: Ctx) -> ChangeFix | None:
    """The first (the least) of the Study's re-checked alternatives for the command's own
    scenario whose every change is a setting the command can carry: a memory fraction, a KV
    dtype, a context, a number of requests at once. None when the Study runs as the command
    asks, or no alternative is one a flag can say (more GPUs, another checkpoint)."""
    st = ctx.study
    if st is None:
        return None
    for alt in alternatives(st):
        change = dict(alt.change)
        if not change or any(k not in EXPRESSIBLE or v is None for k, v in change.items()):
            continue
        values = {EXPRESSIBLE[k]: _flag_value(v) for k, v in change.items()}
        edits = tuple(ctx.set_value(setting, value) for setting, value in values.items())
        words = " ".join(f"{ctx.flag(setting)} {value}" for setting, value in values.items())
        return ChangeFix(alt.what, words, edits)
    return None


def _flag_value(value: Any) -> str:
    """A scenario value as the flag takes it (0.9, not 0.90000001; 32768, not 32,768)."""
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)
