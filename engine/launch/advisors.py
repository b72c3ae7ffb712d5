"""Advisors: engine choice, MoE all-to-all backend, EPLB cost (the parallel layout is the
layout search's, engine.launch.layout).

Pure functions. Each returns the recommendation together with the reasoning, the trade-off it
accepts, the figures it leans on and where each figure comes from. Every flag an advisor emits is
a setting each engine's adapter spells from its pinned flag table (``EngineAdapter.words`` checks
the value against the option's choices), so a recommendation can never name a flag or a choice the
pinned engine version does not have, and the advisors never spell a flag themselves.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from types import MappingProxyType
from typing import Literal, cast, get_args

from pydantic import Field

from engine import errors as E
from engine.decision import Code, Decimal, Decision, Name, Percent
from engine.engines import ENGINES, Engine, EngineAdapter, Setting, adapter
from engine.errors import InputError
from engine.rules import DATA_DIR, Strict, load_data

Phase = Literal["prefill", "decode", "mixed"]

PHASES: tuple[str, ...] = get_args(Phase)

ENGINE_VLLM = Code("advice.engine.vllm", "vllm", "sglang", "gain")
ENGINE_EVEN = Code("advice.engine.even", "band", "vllm", "sglang")
ENGINE_BETWEEN = Code("advice.engine.between", "low", "high")
ENGINE_SGLANG = Code(
    "advice.engine.sglang", "vllm", "sglang", "band", "vllm_high", "sglang_high", "band_high"
)
# the same rules without the figures, where the rows were not measured for this model and GPU
ENGINE_VLLM_RULE = Code("advice.engine.vllm_rule", "below")
ENGINE_EVEN_RULE = Code("advice.engine.even_rule", "low", "high")
ENGINE_SGLANG_RULE = Code("advice.engine.sglang_rule", "above")
NOT_MEASURED = Code("advice.engine.not_measured", "family", "generation")
# a published run of both engines under the same conditions, on a model of this family and a
# GPU of this generation (data/advisor_pairs.yaml)
ENGINE_MEASURED = Code(
    "advice.engine.measured",
    "model", "gpus", "gpu", "tp", "weights", "dataset", "load", "vllm", "sglang",
    "vllm_version", "sglang_version", "rows",
)  # fmt: skip
# what the published runs of both engines show, and where they disagree with the rule
ENGINE_SHOWS = Code("advice.engine.shows", "engine", "wins", "runs")
ENGINE_SHOWS_SPLIT = Code("advice.engine.shows_split", "vllm_wins", "sglang_wins")
ENGINE_DISAGREES = Code("advice.engine.disagrees", "rule")
ENGINE_SPLIT_RULE = Code("advice.engine.split_rule", "rule")
ENGINE_LOAD_CAP = Code("advice.engine.load_cap", "n")
ENGINE_LOAD_BURST = Code("advice.engine.load_burst", "prompts")
ROUTING_MANY = Code("advice.routing.many", "replicas")
ROUTING_ONE = Code("advice.routing.one")
A2A_ONE_NODE = Code("advice.a2a.one_node")
A2A_PHASE: dict[Phase, Code] = {
    "prefill": Code("advice.a2a.prefill", "nodes"),
    "decode": Code("advice.a2a.decode", "nodes"),
    "mixed": Code("advice.a2a.mixed", "nodes"),
}
A2A_CROSSING = Code("advice.a2a.crossing")
# the trade-off each recommendation accepts
TRADEOFF_ENGINE = {e: Code(f"advice.tradeoff.engine.{e}") for e in ("vllm", "either", "sglang")}
TRADEOFF_A2A = {p: Code(f"advice.tradeoff.a2a.{p}") for p in ("one_node", *get_args(Phase))}
TRADEOFF_EPLB = Code("advice.tradeoff.eplb", "fraction")
# what an EPLB plan costs and buys
EPLB_COST = Code("advice.eplb.cost", "redundant", "experts", "fraction")
EPLB_HOW = Code("advice.eplb.how")
EPLB_PER_GPU = Code("advice.eplb.per_gpu", "physical", "ep", "per_gpu")
EPLB_UNEVEN = Code("advice.eplb.per_gpu_uneven", "physical", "ep", "per_gpu")
# the figures an advice leans on: two engines' throughput, and where it was measured
FIGURE_ENGINES = Code("advice.figure.engines", "vllm", "sglang")
FIGURE_PRINTED = Code("advice.figure.printed", "value")
FIGURE_BAND = Code("advice.figure.band", "workload", "band")
FIGURE_PAIR = Code("advice.figure.pair", "model", "gpus", "gpu", "tp", "dataset")


def _tps(value: float) -> Decimal:
    return Decimal(value, 1, "tok/s")


ADVISORS_YAML = DATA_DIR / "advisors.yaml"


class _EngineRow(Strict):
    band: str
    vllm: float = Field(gt=0)
    sglang: float = Field(gt=0)
    workload: str  # an id worded by code.advice.workload.<id>


class _MeasuredOn(Strict):
    attention_families: list[str]
    gpu_generations: list[str]


class _EngineChoice(Strict):
    rows: list[_EngineRow] = Field(min_length=4)
    even_from_pct: float = Field(ge=0, le=100)
    sglang_from_pct: float = Field(ge=0, le=100)
    measured_even_to_pct: float = Field(ge=0, le=100)
    measured_on: _MeasuredOn


class _MultiNodeA2a(Strict):
    deepep_mode: str  # each engine's adapter spells DeepEP in this mode (EngineAdapter.deepep)


class _AllToAll(Strict):
    single_node: dict[Engine, str]  # each engine's own backend on one node
    multi_node: dict[Phase, _MultiNodeA2a]


class _FigureRow(Strict):
    value: str  # the figure as the source prints it
    meaning: str  # an id worded by code.advice.eplb.figure.<id>


class _Eplb(Strict):
    figures: list[_FigureRow]


class AdvisorFacts(Strict):
    sources: dict[str, str]
    engine_choice: _EngineChoice
    all_to_all: _AllToAll
    eplb: _Eplb


@cache
def advisor_facts() -> AdvisorFacts:
    """``data/advisors.yaml``, read and validated once."""
    return load_data(AdvisorFacts, ADVISORS_YAML.name)


# the ids data/advisors.yaml names its workloads and EPLB figures by
WORKLOAD = {
    r.workload: Code(f"advice.workload.{r.workload}") for r in advisor_facts().engine_choice.rows
}
EPLB_FIGURE = {
    f.meaning: Code(f"advice.eplb.figure.{f.meaning}") for f in advisor_facts().eplb.figures
}


class _EngineRun(Strict):
    version: str = Field(min_length=1)
    output_tps: float = Field(gt=0)


class MeasuredPair(Strict):
    """vLLM and SGLang measured under the same conditions (data/advisor_pairs.yaml, written by
    tools/advisor_pairs.py from data/perf/measured.jsonl)."""

    model: str
    attention_family: str
    moe: bool
    gpu: str
    generation: str
    gpus: int = Field(ge=1)
    tp: int = Field(ge=1)
    weights: str
    dataset: str
    prompts: int = Field(ge=1)
    concurrency: int | None  # None: every prompt sent at once
    vllm: _EngineRun
    sglang: _EngineRun
    rows: list[str] = Field(min_length=2, max_length=2)
    source: str = Field(min_length=1)


class _Pairs(Strict):
    pairs: list[MeasuredPair]


@cache
def measured_pairs() -> tuple[MeasuredPair, ...]:
    return tuple(load_data(_Pairs, "advisor_pairs.yaml").pairs)


def pairs_for(
    family: str | None, moe: bool | None, gpu_generation: str | None
) -> tuple[MeasuredPair, ...]:
    """The pairs measured on a model of this family (attention family and MoE or dense) and a
    GPU of this generation; none when any of them is unknown."""
    if family is None or moe is None or gpu_generation is None:
        return ()
    return tuple(
        p
        for p in measured_pairs()
        if (p.attention_family, p.moe, p.generation) == (family, moe, gpu_generation)
    )


def measured_why(pair: MeasuredPair) -> Decision:
    """One measured comparison, with its conditions, versions and rows."""
    load = (
        ENGINE_LOAD_CAP(n=pair.concurrency)
        if pair.concurrency is not None
        else ENGINE_LOAD_BURST(prompts=pair.prompts)
    )
    return ENGINE_MEASURED(
        model=Name(pair.model),
        gpus=pair.gpus,
        gpu=Name(pair.gpu),
        tp=pair.tp,
        weights=Name(pair.weights),
        dataset=Name(pair.dataset),
        load=load,
        vllm=_tps(pair.vllm.output_tps),
        sglang=_tps(pair.sglang.output_tps),
        vllm_version=Name(pair.vllm.version),
        sglang_version=Name(pair.sglang.version),
        rows=tuple(Name(r) for r in pair.rows),
    )


@dataclass(frozen=True)
class Figure:
    """One measured or derived number an advice leans on, what it measures, and where it was
    read."""

    value: Decision
    meaning: Decision
    source: str


# Command fragments per engine, each in that engine's spelling.
Flags = Mapping[Engine, tuple[str, ...]]


def per_engine(settings: Callable[[EngineAdapter], Sequence[tuple[Setting, str | None]]]) -> Flags:
    """Each engine's fragments for the settings its adapter gives."""
    return MappingProxyType({e: adapter(e).spell(settings(adapter(e))) for e in ENGINES})


@dataclass(frozen=True)
class EngineAdvice:
    engine: Literal["vllm", "sglang", "either"]
    prefix_overlap_pct: float
    measured_row: str  # the benchmark row the choice rests on
    why: tuple[Decision, ...]
    routing_why: Decision  # what the choice means for the router in front of the replicas
    flags: Flags  # per engine: what serves shared prefixes best (none where nothing to set)
    tradeoff: Decision
    figures: tuple[Figure, ...]
    source: str


@dataclass(frozen=True)
class CommAdvice:
    nodes: int
    phase: Phase
    flags: Flags
    why: tuple[Decision, ...]
    tradeoff: Decision
    source: str


@dataclass(frozen=True)
class EplbAdvice:
    num_experts: int
    redundant: int
    physical_experts: int
    extra_weight_fraction: float  # redundant / num_experts: extra expert-weight memory
    experts_per_gpu: float | None
    divides_evenly: bool | None  # physical experts split evenly over the EP ranks
    extra_weight_bytes: int | None  # when the total expert weight bytes are known
    flags: Flags
    why: tuple[Decision, ...]
    tradeoff: Decision
    figures: tuple[Figure, ...]
    source: str


# --- input checks ---------------------------------------------------------------------------


def _int_in(name: str, value: object, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InputError(name, E.RANGE(low=low, high=high, got=E.got(value)))
    return value


def _choice(name: str, value: object, options: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in options:
        raise InputError(
            name, E.ONE_OF_GOT(choices=tuple(Name(o) for o in options), got=E.got(value))
        )
    return value


# --- engine choice --------------------------------------------------------------------------


def _row_figure(row: _EngineRow, bench: str) -> Figure:
    """One benchmark row as a figure: both engines' tok/s, the workload and its overlap band."""
    where = FIGURE_BAND(workload=WORKLOAD[row.workload](), band=Name(row.band))
    return Figure(FIGURE_ENGINES(vllm=_tps(row.vllm), sglang=_tps(row.sglang)), where, bench)


def _pair_figure(pair: MeasuredPair) -> Figure:
    """A published run of both engines under the same conditions, as a figure."""
    what = FIGURE_ENGINES(vllm=_tps(pair.vllm.output_tps), sglang=_tps(pair.sglang.output_tps))
    where = FIGURE_PAIR(
        model=Name(pair.model), gpus=pair.gpus, gpu=Name(pair.gpu), tp=pair.tp,
        dataset=Name(pair.dataset),
    )  # fmt: skip
    return Figure(what, where, pair.source)


def _band(pct: float, choice: _EngineChoice) -> tuple[Literal["vllm", "either", "sglang"], int]:
    """The engine the overlap band favours, and the benchmark row it rests on."""
    if pct < choice.even_from_pct:
        return "vllm", 0
    if pct < choice.sglang_from_pct:
        return "either", 1
    return "sglang", 2


def _measured_why(pct: float, choice: _EngineChoice, i: int) -> list[Decision]:
    """Why, with the benchmark's own figures (a model and GPU they were measured on)."""
    rows = choice.rows
    if i == 0:
        r = rows[0]
        return [
            ENGINE_VLLM(
                vllm=_tps(r.vllm), sglang=_tps(r.sglang), gain=Percent(r.vllm / r.sglang - 1)
            )
        ]
    if i == 1:
        r = rows[1]
        why = [ENGINE_EVEN(band=Name(r.band), vllm=_tps(r.vllm), sglang=_tps(r.sglang))]
        if pct > choice.measured_even_to_pct:
            low = Percent(choice.measured_even_to_pct / 100)
            why.append(ENGINE_BETWEEN(low=low, high=Percent(choice.sglang_from_pct / 100)))
        return why
    r, high = rows[2], rows[3]
    return [
        ENGINE_SGLANG(
            vllm=_tps(r.vllm),
            sglang=_tps(r.sglang),
            band=Name(r.band),
            vllm_high=_tps(high.vllm),
            sglang_high=_tps(high.sglang),
            band_high=Name(high.band),
        )
    ]


def _rule_why(
    choice: _EngineChoice,
    i: int,
    pairs: tuple[MeasuredPair, ...],
    family: str | None,
    generation: str | None,
) -> list[Decision]:
    """Why, by the band's rule alone (vLLM below, either between, SGLang from the upper bound),
    beside the published runs of a model of this family on a GPU of this generation."""
    low, high = Percent(choice.even_from_pct / 100), Percent(choice.sglang_from_pct / 100)
    rule = (
        ENGINE_VLLM_RULE(below=low),
        ENGINE_EVEN_RULE(low=low, high=high),
        ENGINE_SGLANG_RULE(above=high),
    )[i]
    if pairs:
        return [rule, *(measured_why(pair) for pair in pairs)]
    return [rule, NOT_MEASURED(family=Name(family or ""), generation=Name(generation or ""))]


def engine_advice(
    prefix_overlap_pct: float,
    replicas: int = 1,
    family: str | None = None,
    gpu_generation: str | None = None,
    moe: bool | None = None,
) -> EngineAdvice:
    """vLLM or SGLang from how much of each prompt repeats an earlier one (0–100 %). The
    benchmark's tok/s are quoted only for a model of a family and a GPU generation they were
    measured on (``data/advisors.yaml`` ``measured_on``); otherwise the rule alone, said so,
    beside any published run of both engines under the same conditions on a model of this
    family (and MoE or dense) and a GPU of this generation (``data/advisor_pairs.yaml``)."""
    if (
        isinstance(prefix_overlap_pct, bool)
        or not isinstance(prefix_overlap_pct, int | float)
        or not 0 <= prefix_overlap_pct <= 100
    ):
        raise InputError("prefix_overlap_pct", E.PERCENTAGE(got=E.got(prefix_overlap_pct)))
    pct = float(prefix_overlap_pct)
    reps = _int_in("replicas", replicas, 1, 100_000)
    facts = advisor_facts()
    choice = facts.engine_choice
    bench = facts.sources["engine_bench"]
    on = choice.measured_on
    measured = (family in on.attention_families and gpu_generation in on.gpu_generations) or (
        family is None and gpu_generation is None
    )  # no model given: the table as read
    engine, i = _band(pct, choice)
    if measured:
        why = _measured_why(pct, choice, i)
        # the SGLang band: its 80 % row too
        figures = [_row_figure(r, bench) for r in choice.rows[i : 4 if i == 2 else i + 1]]
    else:  # the same choice, without numbers measured elsewhere
        pairs = pairs_for(family, moe, gpu_generation)
        why = _rule_why(choice, i, pairs, family, gpu_generation)
        if pairs and pct < choice.even_from_pct:  # the runs were measured at no shared prefix
            engine, why = _measured_first(pairs, engine, why[0])
        figures = [_pair_figure(pair) for pair in pairs]
        bench = "; ".join([bench, *(pair.source for pair in pairs)])
    shared = pct >= choice.even_from_pct
    return EngineAdvice(
        engine=engine,
        prefix_overlap_pct=pct,
        measured_row=choice.rows[i].band,
        why=tuple(why),
        routing_why=ROUTING_MANY(replicas=reps) if reps > 1 else ROUTING_ONE(),
        flags=per_engine(lambda eng: eng.prefix_schedule if shared else ()),
        tradeoff=TRADEOFF_ENGINE[engine](),
        figures=tuple(figures),
        source=f"{bench}; {facts.sources['routing']}",
    )


def _measured_first(
    pairs: Sequence[MeasuredPair], rule_engine: Literal["vllm", "sglang", "either"], rule: Decision
) -> tuple[Literal["vllm", "sglang", "either"], list[Decision]]:
    """At the overlap the runs were measured at: what they show first (the engine ahead in most
    of them, or a split), each run, then the rule — said to disagree where it names another
    engine than the runs do."""
    sglang = sum(1 for p in pairs if p.sglang.output_tps > p.vllm.output_tps)
    vllm = len(pairs) - sglang
    engine: Literal["vllm", "sglang", "either"]
    if sglang == vllm:
        engine, shows = "either", ENGINE_SHOWS_SPLIT(vllm_wins=vllm, sglang_wins=sglang)
    else:
        engine = "sglang" if sglang > vllm else "vllm"
        label = Name(adapter(engine).label)
        shows = ENGINE_SHOWS(engine=label, wins=max(sglang, vllm), runs=len(pairs))
    why = [shows, *(measured_why(pair) for pair in pairs)]
    if engine == rule_engine:
        why.append(rule)
    else:
        said = ENGINE_SPLIT_RULE if sglang == vllm else ENGINE_DISAGREES
        why.append(said(rule=rule))
    return engine, why


# --- MoE all-to-all -------------------------------------------------------------------------


def moe_comm_advice(nodes: int, phase: str) -> CommAdvice:
    """All-to-all backend for EP: one node vs several, prefill vs decode vs both in one server."""
    n = _int_in("nodes", nodes, 1, 4096)
    ph = cast(Phase, _choice("phase", phase, PHASES))

    facts = advisor_facts()
    a2a = facts.all_to_all
    why: list[Decision] = []
    if n == 1:
        flags = per_engine(lambda eng: [("all_to_all", a2a.single_node[eng.name])])
        why.append(A2A_ONE_NODE())
        tradeoff = TRADEOFF_A2A["one_node"]()
    else:
        mode = a2a.multi_node[ph].deepep_mode
        flags = per_engine(lambda eng: eng.deepep(mode))
        tradeoff = TRADEOFF_A2A[ph]()
        why.append(A2A_PHASE[ph](nodes=n))
    why.append(A2A_CROSSING())
    return CommAdvice(
        nodes=n,
        phase=ph,
        flags=flags,
        why=tuple(why),
        tradeoff=tradeoff,
        source=facts.sources["a2a"],
    )


# --- EPLB -----------------------------------------------------------------------------------


def eplb_advice(
    num_experts: int,
    redundant: int,
    *,
    ep_size: int | None = None,
    expert_weight_bytes: int | None = None,
) -> EplbAdvice:
    """What ``redundant`` replicated hot experts cost: redundant / num_experts more expert
    weight memory (32 of 256 = +12.5 %), bought for a flatter load across GPUs.

    ``expert_weight_bytes`` is the total bytes of all routed experts' weights, if known.
    """
    e = _int_in("num_experts", num_experts, 1, 65_536)
    r = _int_in("redundant", redundant, 0, 65_536)
    ep = None if ep_size is None else _int_in("ep_size", ep_size, 1, 65_536)
    total = None
    if expert_weight_bytes is not None:
        total = _int_in("expert_weight_bytes", expert_weight_bytes, 0, 2**60)

    fraction = r / e
    physical = e + r
    per_gpu = None if ep is None else physical / ep
    even = None if ep is None else physical % ep == 0
    extra_bytes = None if total is None else total * r // e

    share = Decimal(100 * fraction, 1, "%")
    why = [EPLB_COST(redundant=r, experts=e, fraction=share), EPLB_HOW()]
    if ep is not None and per_gpu is not None:
        code = EPLB_PER_GPU if even else EPLB_UNEVEN
        why.append(code(physical=physical, ep=ep, per_gpu=Decimal(per_gpu, 2)))
    return EplbAdvice(
        num_experts=e,
        redundant=r,
        physical_experts=physical,
        extra_weight_fraction=fraction,
        experts_per_gpu=per_gpu,
        divides_evenly=even,
        extra_weight_bytes=extra_bytes,
        flags=per_engine(lambda eng: eng.eplb(r)),
        why=tuple(why),
        tradeoff=TRADEOFF_EPLB(fraction=share),
        figures=tuple(
            Figure(
                FIGURE_PRINTED(value=Name(f.value)),
                EPLB_FIGURE[f.meaning](),
                advisor_facts().sources["eplb"],
            )
            for f in advisor_facts().eplb.figures
        ),
        source=advisor_facts().sources["eplb"],
    )
