"""``study(scenario) -> Study``: the one computed decision every reader shares.

The Study holds everything downstream of the user's choices — the config and its layers, the
family with its evidence, the KV accounting of vLLM and SGLang, the weights, the layout search
(the pick and the candidates it beat), memory per GPU at that layout, the context that fits and
the users it serves, the hardware gates at that layout, the software facts, the launch plans of
both engines and the verdict. Pages, CLI subcommands, the linter, the troubleshooter, the
Kubernetes writer and the measure step read it; none of them re-derives a number.

``study`` is cached per scenario (an in-process LRU shared by every session of the app), so a
page re-render or a second CLI slice costs a dictionary lookup.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from engine import errors as E
from engine.budget import Cache, deep_size, size_once
from engine.decision import Bytes, Code, Decimal, Decision, Name, Percent, Tokens
from engine.diagnose import Diagnosis, Options
from engine.engines import adapter
from engine.errors import InputError
from engine.gates import MAX_TRIED_GPUS, GateReport, gate_report
from engine.hardware.gpus import Gpu, lookup_gpu
from engine.kv.dtype import KvDtype
from engine.kv.sizing import KvSizing, size_kv
from engine.launch.candidate import Candidate, Layout, LayoutSearch, SearchInputs
from engine.launch.layout import REJECT_ENGINE, count_layouts, evaluate, search, split_problem
from engine.launch.plan import LaunchPlan, build_plan, chunk_tokens, model_id_for
from engine.launch.plan_inputs import PlanInputs
from engine.launch.ranking import drafts_pay
from engine.launch.recipes import required_setting, speculative_for
from engine.model import store
from engine.model.architecture import Architecture, build_architecture
from engine.model.config import ModelConfig
from engine.model.context_limit import ContextLimit, context_limit
from engine.model.family import FamilyVerdict, classify
from engine.model.loader import LoadedModel, load_catalog, load_hub
from engine.model.mtp import has_draft_layers
from engine.model.quantize import online_fp8
from engine.model.weights import WeightReport, weight_report
from engine.perf import Speculative, Speed, calibration, stack_calibration
from engine.perf.factors import perf_facts
from engine.perf.stack_calibration import StackCalibration
from engine.scenario import ENGINES, MAX_NODES, Engine, Scenario
from engine.software.software_report import SoftwareReport, software_report

VerdictStatus = Literal["runs", "fewer_users", "shorter_context", "does_not_fit", "blocked"]


RUNS = Code("verdict.runs", "layout", "users", "context")
FEWER_USERS = Code("verdict.fewer_users", "users", "asked", "context", "layout")
SHORTER_CONTEXT = Code("verdict.shorter_context", "fits", "asked", "layout")
DOES_NOT_FIT = Code("verdict.does_not_fit", "weights", "layout", "usable", "times")
BLOCKED = Code("verdict.blocked", "gate", "reason")
CONTEXT_CAPPED = Code("study.context_capped", "asked", "formula", "limit")
BENCH_CALIBRATED = Code(
    "study.bench_calibrated", "engine", "gpu", "layout", "runs", "before", "after"
)


def bench_calibrated(stack: StackCalibration) -> Decision:
    """The note that the speeds of ``stack.engine`` are calibrated on the user's benchmark."""
    return BENCH_CALIBRATED(
        engine=Name(stack.engine),
        gpu=Name(stack.gpu),
        layout=Name(stack.layout),
        runs=stack.runs,
        before=Percent(stack.error_before),
        after=Percent(stack.error_after),
    )


@dataclass(frozen=True)
class Verdict:
    """The answer first: does it run on these GPUs, and the one reason (what to change is the
    alternatives' business, engine/alternatives.py)."""

    status: VerdictStatus
    reason: Decision
    fix: Decision | None = None  # a failed gate's own fix

    @property
    def runs(self) -> bool:
        return self.status in ("runs", "fewer_users", "shorter_context")


@dataclass(frozen=True)
class EngineView:
    """One engine's side of the study at the chosen layout."""

    engine: Engine
    kv_dtype: KvDtype
    kv: KvSizing  # at the layout's attention TP
    fit: Candidate | None  # None when this engine cannot run the chosen layout
    software: SoftwareReport
    plan: LaunchPlan | None
    problem: Decision | None = None  # why this engine cannot run the chosen layout


@dataclass(frozen=True)
class Study:
    scenario: Scenario
    model: LoadedModel
    gpu: Gpu
    architecture: Architecture
    family: FamilyVerdict
    weights: WeightReport
    limit: ContextLimit
    context_asked: int
    search: LayoutSearch
    gates: GateReport
    engines: dict[Engine, EngineView]
    verdict: Verdict
    mtp: bool
    text_only: bool
    min_gpus: int | None
    notes: tuple[Decision, ...] = field(default_factory=tuple)
    # what the search read (the speed model's inputs too: the pages sweep a layout's load)
    search_inputs: SearchInputs | None = field(default=None, repr=False, compare=False)
    _sizings: dict[tuple[str, int, str], KvSizing] = field(default_factory=dict, repr=False)

    @property
    def config(self) -> ModelConfig:
        return self.model.config

    @property
    def fit(self) -> Candidate:
        """The chosen layout's memory and users, for the scenario's engine."""
        return self.search.pick

    @property
    def layout(self) -> Layout:
        return self.search.pick.layout

    @property
    def context(self) -> int:
        """The context the launch sets: the workload's, or the largest that fits."""
        return self.search.pick.context

    @property
    def primary(self) -> EngineView:
        return self.engines[self.scenario.engine]

    @property
    def kv(self) -> KvSizing:
        return self.primary.kv

    @property
    def plan(self) -> LaunchPlan | None:
        return self.primary.plan

    def sizing(self, engine: Engine, tp: int, kv_dtype: str | None = None) -> KvSizing:
        """The KV sizing of ``engine`` at attention TP ``tp`` (another KV dtype for a sweep)."""
        dtype = kv_dtype or self.scenario.kv_dtype
        key = (engine, tp, dtype)
        if key not in self._sizings:
            kvd = _kv_dtype(engine, dtype, self.config, self.gpu)
            block = _block(engine, self.config, self.gpu)
            self._sizings[key] = _sizing(self.architecture, self.config, kvd, tp, engine, block)
        return self._sizings[key]

    @property
    def diagnosis(self) -> Diagnosis:
        """Family, KV sizing of both engines at the chosen TP, and weights (step 1-2 slice)."""
        return Diagnosis(
            self.config,
            self.architecture,
            self.family,
            self.engines["vllm"].kv,
            self.engines["sglang"].kv,
            self.weights,
            Options(self.scenario.kv_dtype, self.layout.tp, self.context or 1, self.gpu.arch),
            max(self.context, 1),
        )


# --- the model a scenario names ------------------------------------------------------------------


def resolve_model(s: Scenario) -> LoadedModel:
    if s.source == "catalog":
        return load_catalog(s.model)
    if s.source == "hub":
        return load_hub(s.model)
    assert s.digest is not None
    return store.get(s.digest)


# --- what is computed once per distinct model or shape ------------------------------------------

_Shape = tuple[Architecture, FamilyVerdict, WeightReport, ContextLimit]
_shapes: Cache[int, tuple[weakref.ref[ModelConfig], _Shape]] = Cache(
    "model shapes", lambda v: sum(size_once(part) for part in v[1])
)


def _shape_of(cfg: ModelConfig) -> _Shape:
    """The config's layers, family, weights and context limit, built once per config object:
    every Study of one model (each sidebar change, each alternative tried) reads the same."""
    key = id(cfg)
    hit = _shapes.get(key)
    if hit is not None and hit[0]() is cfg:
        return hit[1]
    arch = build_architecture(cfg)
    shape = (arch, classify(cfg, arch), weight_report(cfg, arch), context_limit(cfg))
    _shapes.put(key, (weakref.ref(cfg), shape))  # a config gone: its entry waits for the LRU
    return shape


_kv_sizings: Cache[
    tuple[int, str, int, str, int | None], tuple[weakref.ref[ModelConfig], KvSizing]
] = Cache("kv sizings", lambda v: size_once(v[1]))


def _sizing(
    arch: Architecture, cfg: ModelConfig, kvd: KvDtype, tp: int, engine: Engine, block: int | None
) -> KvSizing:
    """``size_kv`` once per config, KV dtype, attention TP, engine and KV block: the layout
    search of every Study of the model (and of each alternative tried) reads the same sizing."""
    key = (id(cfg), repr(kvd), tp, engine, block)
    hit = _kv_sizings.get(key)
    if hit is not None and hit[0]() is cfg:
        return hit[1]
    sizing = size_kv(arch, cfg, kvd, tp, engine, block)
    _kv_sizings.put(key, (weakref.ref(cfg), sizing))
    return sizing


# the fewest GPUs of a kind for a scenario's model, engine and workload: a tiny value, its key a
# Scenario (a few hundred bytes), so each entry is counted at this bound
_FEWEST_ENTRY_BYTES = 4096
_fewest: Cache[tuple[Scenario, bool], tuple[int | None]] = Cache(
    "fewest GPUs", lambda _: _FEWEST_ENTRY_BYTES
)


def _fewest_cached(inp: SearchInputs, s: Scenario) -> int | None:
    """``_fewest_gpus``, once per scenario up to what it varies (the nodes, a pinned layout, the
    users): the alternatives study the same model on many GPU counts."""
    key = (s.model_copy(update=_TRIAL | {"gpus_per_node": s.gpus_per_node, "nodes": 1}), inp.mtp)
    hit = _fewest.get(key)
    if hit is None:
        hit = _fewest.put(key, (_fewest_gpus(inp, s),))
    return hit[0]


# --- what a Study costs, known before it starts ------------------------------------------------

# The search evaluates every layout the GPUs allow; what grows with the model's layers (its
# architecture, its KV sizing per attention TP) is built once per config, and one layout's
# evaluation reads the model's counts, so layers × layouts bounds a Study's work from above (the
# MoE experts change a count, not the work). 4,096 layers (the config's own cap) × 19 layouts
# (8 GPUs) is 77,824 and takes about 0.3 s of CPU with its alternatives; a catalog model on 128
# nodes of 64 GPUs 22,631.
MAX_WORK = 1_000_000
# Above this a Study not yet cached waits for the process's heavy-work slot (ui/busy.py).
HEAVY_WORK = 20_000


def work(s: Scenario, layers: int, moe: bool) -> int:
    """Layers × the layouts the search walks for ``s``."""
    return layers * count_layouts(s, moe)


def _check_work(s: Scenario, cfg: ModelConfig, moe: bool) -> None:
    layouts = count_layouts(s, moe)
    got = cfg.num_hidden_layers * layouts
    if got > MAX_WORK:
        raise InputError(
            "gpus",
            f"at most {MAX_WORK:,} layer × layout evaluations per study; the config's "
            f"{cfg.num_hidden_layers:,} layers × the {layouts:,} layouts of {s.total_gpus:,} "
            f"GPUs make {got:,} (fewer GPUs or pinned layout sizes)",
            expects=E.STUDY_WORK(
                most=MAX_WORK,
                got=got,
                layers=cfg.num_hidden_layers,
                layouts=layouts,
                gpus=s.total_gpus,
            ),
        )


def is_heavy(s: Scenario) -> bool:
    """Whether studying ``s`` is heavy work not done yet: a Study not cached whose config comes
    from the hub (fetched and parsed) or whose layers × layouts pass ``HEAVY_WORK``."""
    if s in _cache:
        return False
    if s.source == "hub":
        return True
    try:
        cfg = resolve_model(s).config
    except InputError:
        return False
    return work(s, cfg.num_hidden_layers, moe=True) > HEAVY_WORK


# --- computing it ---------------------------------------------------------------------------------


def _kv_dtype(engine: Engine, requested: str, cfg: ModelConfig, gpu: Gpu) -> KvDtype:
    """What the engine stores for the scenario's KV dtype; ``auto`` is the value the model's
    recipe requires where it requires one (DeepSeek-V4's fp8: the plan writes it)."""
    if requested == "auto":
        requested = required_setting(cfg, engine, gpu, "kv_dtype") or requested
    return adapter(engine).kv_dtype(requested, cfg, gpu.arch)


def _block(engine: Engine, cfg: ModelConfig, gpu: Gpu) -> int | None:
    """The KV block the model's recipe requires (the plan writes it), else None."""
    value = required_setting(cfg, engine, gpu, "block")
    return int(value) if value is not None and value.isdigit() else None


def _compute(s: Scenario) -> Study:
    model = checkpoint = resolve_model(s)
    gpu = lookup_gpu(s.gpu)
    if s.quantization == "fp8":  # the weights as the engine holds them after --quantization fp8
        stored = _shape_of(model.config)[2].weight_dtype
        model = online_fp8(model, gpu, stored)
    cfg = model.config
    arch, fam, weights, limit = _shape_of(cfg)
    _check_work(s, cfg, fam.moe)
    notes: list[Decision] = []
    if s.images and not fam.multimodal:
        raise InputError("images", f"a multimodal model; {cfg.architecture} has no vision encoder")
    asked = s.context or limit.tokens
    if asked > limit.tokens:
        notes.append(
            CONTEXT_CAPPED(asked=Tokens(asked), formula=limit.why, limit=Tokens(limit.tokens))
        )
        asked = limit.tokens
    text_only = fam.multimodal and not s.images
    # the checkpoint's own MTP layers, or a draft model (an EAGLE3 head) the recipe names
    drafts = has_draft_layers(fam) or speculative_for(cfg, s.engine).draft_model is not None
    cal = calibration.check(calibration.get(s.calibration), gpu) if s.calibration else None
    stack = stack_calibration.get(s.bench_calibration) if s.bench_calibration else None
    if stack is not None:
        notes.append(bench_calibrated(stack))
    stack_factors = stack.factors_over(perf_facts().factors) if stack is not None else None
    model_id = model_id_for(model)
    software = {
        e: software_report(
            checkpoint.config.raw,  # the checkpoint's own format, whatever the engine makes of it
            e,
            model_id if model.source != "file" else None,
            text_only=text_only,
            chat_template=model.chat_template,
        )
        for e in ENGINES
    }
    kv_dtypes = {e: _kv_dtype(e, s.kv_dtype, cfg, gpu) for e in ENGINES}
    sizing_cache: dict[tuple[Engine, int], KvSizing] = {}

    def kv_at(engine: Engine) -> Callable[[int], KvSizing]:
        def at(tp: int) -> KvSizing:
            key = (engine, tp)
            if key not in sizing_cache:
                block = _block(engine, cfg, gpu)
                sizing_cache[key] = _sizing(arch, cfg, kv_dtypes[engine], tp, engine, block)
            return sizing_cache[key]

        return at

    def inputs(engine: Engine, mtp: bool) -> SearchInputs:
        spec = None
        if mtp:
            rec = speculative_for(cfg, engine)
            one_config = adapter(engine).speculative_config_json  # vLLM's --speculative-config
            spec = Speculative(
                rec.perf_method,
                max(1, rec.num_speculative_tokens if one_config else rec.num_steps),
            )
        return SearchInputs(
            cfg=cfg,
            arch=arch,
            family=fam,
            weights=weights,
            gpu=gpu,
            engine=engine,
            kv_at=kv_at(engine),
            context=asked,
            limit=limit.tokens,
            mtp=mtp,
            vision=fam.multimodal and not text_only,
            chunk_tokens=chunk_tokens(s.latency, s.images),
            speculative=spec,
            calibration=cal,
            engine_version=adapter(engine).version,  # the plan's release: how it runs a step
            factors=stack_factors if stack is not None and stack.engine == engine else None,
        )

    found, mtp, draft_speeds = _with_or_without_drafts(
        lambda m: search(inputs(s.engine, m), s), s, drafts
    )
    pick = found.pick
    views: dict[Engine, EngineView] = {}
    for e in ENGINES:
        if e == s.engine:
            fit: Candidate | None = pick
            problem = None
        else:
            problem = split_problem(cfg, arch, fam, pick.layout.split)
            try:
                fit = (
                    None
                    if problem
                    else evaluate(inputs(e, mtp), s, pick.layout.replicas, pick.layout.split)
                )
            except InputError as err:
                said = err.expects if err.expects is not None else Name(err.expected)
                fit, problem = None, err.why or REJECT_ENGINE(why=said)
        kv = kv_at(e)(pick.layout.tp)
        views[e] = EngineView(e, kv_dtypes[e], kv, fit, software[e], None, problem)
    fewest = _fewest_cached(inputs(s.engine, mtp), s) if not pick.context_fits else None
    gates = gate_report(fam, weights, views[s.engine].kv_dtype, gpu, pick, cfg, fewest)
    verdict = _verdict(s, pick, gates, asked)
    core = PlanInputs(
        model, cfg, gpu, arch, fam, weights, limit, asked, mtp, text_only, gates, draft_speeds
    )
    for e, v in views.items():
        if v.fit is None:
            continue
        plan = build_plan(core, s, e, v.fit, v.kv, v.software, verdict.runs)
        views[e] = EngineView(e, v.kv_dtype, v.kv, v.fit, v.software, plan, v.problem)
    return Study(
        scenario=s,
        model=model,
        gpu=gpu,
        architecture=arch,
        family=fam,
        weights=weights,
        limit=limit,
        context_asked=asked,
        search=found,
        gates=gates,
        engines=views,
        verdict=verdict,
        mtp=mtp,
        text_only=text_only,
        min_gpus=fewest,
        search_inputs=inputs(s.engine, mtp),
        notes=tuple(notes),
    )


def _with_or_without_drafts(
    run: Callable[[bool], LayoutSearch], s: Scenario, drafts: bool
) -> tuple[LayoutSearch, bool, tuple[Speed | None, Speed | None] | None]:
    """The search with the checkpoint's MTP layers as drafts, or without: the scenario's pin,
    else the one the speed model says pays (``drafts_pay``). Also both picks' speeds (with,
    without) when both were searched, for the plan's reason."""
    if not drafts or s.speculative is False:
        return run(False), False, None
    if s.speculative:
        return run(True), True, None
    without, with_drafts = run(False), run(True)
    speeds = (with_drafts.pick.speed, without.pick.speed)
    if drafts_pay(s, with_drafts.pick, without.pick):
        return with_drafts, True, speeds
    return without, False, speeds


# what the fewest-GPU search sets in each scenario it tries
_TRIAL: dict[str, object] = {
    "tp": None,
    "dp": None,
    "pp": None,
    "ep": None,
    "replicas": None,
    "users": 1,
}


def _fewest_gpus(inp: SearchInputs, s: Scenario) -> int | None:
    """The fewest GPUs of this kind that hold the weights and one request at the context."""
    n = 1
    while n <= MAX_TRIED_GPUS:
        per_node = min(n, s.gpus_per_node)
        nodes = -(-n // per_node)
        if per_node * nodes == n and nodes <= MAX_NODES:
            trial = s.model_copy(update=_TRIAL | {"gpus_per_node": per_node, "nodes": nodes})
            try:
                if search(inp, trial).pick.context_fits:
                    return n
            except InputError:
                pass
        n *= 2
    return None


def _verdict(s: Scenario, pick: Candidate, gates: GateReport, asked: int) -> Verdict:
    failed = gates.failed(memory=False)
    if failed:
        g = failed[0]
        return Verdict("blocked", BLOCKED(gate=g.failure, reason=g.reason), g.fix)
    lay = pick.layout.name()
    if not pick.weights_fit or (not pick.context_fits and pick.users == 0):
        return Verdict(
            "does_not_fit",
            DOES_NOT_FIT(
                weights=Bytes(pick.weights_per_gpu),
                layout=lay,
                usable=Bytes(pick.usable_per_gpu),
                times=Decimal(pick.weights_per_gpu / max(pick.usable_per_gpu, 1), 1, "×"),
            ),
        )
    if not pick.context_fits:
        return Verdict(
            "shorter_context",
            SHORTER_CONTEXT(fits=Tokens(pick.context), asked=Tokens(asked), layout=lay),
        )
    if not pick.users_fit:
        return Verdict(
            "fewer_users",
            FEWER_USERS(users=pick.users, asked=s.users, context=Tokens(pick.context), layout=lay),
        )
    return Verdict("runs", RUNS(layout=lay, users=pick.users, context=Tokens(pick.context)))


# --- the cache ------------------------------------------------------------------------------------

_inflight_lock = threading.Lock()
_inflight: dict[Scenario, threading.Lock] = {}  # scenarios being computed, one lock each


# what many Studies of one model share: each walked once (``size_once``) and counted in full in
# every Study that reaches it
_SHARED_PARTS = (LoadedModel, ModelConfig, Architecture, KvSizing)


def footprint(st: Study) -> int:
    """Bytes a cached Study holds: every object it reaches (``engine.budget.deep_size``: its
    candidates, plans, speeds), with its config, layers and KV sizings each counted whole."""
    shared: list[object] = []
    own = deep_size(st, stop=_SHARED_PARTS, found=shared)
    return own + sum(size_once(part) for part in shared)


# One cache of the process's memory budget (engine.budget): the same scenario gives the same
# Study to every session until the budget lets it go, least recently used first.
_cache: Cache[Scenario, Study] = Cache("studies", footprint)


def clear_cache() -> None:
    _cache.clear()


def forget(s: Scenario) -> None:
    _cache.pop(s)


def cached() -> tuple[int, int]:
    """(Studies cached, the bytes they are counted as)."""
    return _cache.held()


def study(s: Scenario) -> Study:
    """The Study of ``s``, computed once per distinct scenario while the process's memory budget
    keeps it. Sessions asking for the same scenario at once wait for one computation instead of
    each running it."""
    hit = _cache.get(s)
    if hit is not None:
        return hit
    with _inflight_lock:
        gate = _inflight.setdefault(s, threading.Lock())
    with gate:
        hit = _cache.get(s)
        if hit is not None:  # computed by the caller we waited for
            return hit
        try:
            return _cache.put(s, _compute(s))
        finally:
            with _inflight_lock:
                _inflight.pop(s, None)
