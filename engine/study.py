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
from collections.abc import Callable
from dataclasses import dataclass, field

from engine import errors as E
from engine.budget import Cache, deep_size, size_once
from engine.decision import Code, Decision, Name, Percent, Tokens
from engine.diagnose import Diagnosis, Options
from engine.engines import adapter
from engine.errors import InputError
from engine.gates import MAX_TRIED_GPUS, GateReport, gate_report
from engine.hardware.gpus import Gpu, lookup_gpu
from engine.kv.dtype import KvDtype
from engine.kv.pipeline import ModelPipeline, model_pipeline
from engine.kv.sizing import KvSizing
from engine.launch.candidate import Candidate, Layout, LayoutSearch, SearchInputs
from engine.launch.layout import REJECT_ENGINE, count_layouts, evaluate, search, split_problem
from engine.launch.plan import LaunchPlan, build_plan, chunk_tokens, model_id_for
from engine.launch.plan_inputs import PlanInputs
from engine.launch.ranking import drafts_pay
from engine.launch.recipes import required_setting, speculative_for
from engine.model import store
from engine.model.architecture import Architecture
from engine.model.config import ModelConfig
from engine.model.context_limit import ContextLimit, context_limit
from engine.model.family import FamilyVerdict
from engine.model.loader import LoadedModel, load_catalog, load_hub
from engine.model.mtp import has_draft_layers
from engine.model.quantize import online_fp8
from engine.model.weights import WeightReport
from engine.perf import Speculative, Speed, calibration, stack_calibration
from engine.perf.factors import perf_facts
from engine.perf.stack_calibration import StackCalibration
from engine.scenario import ENGINES, LAYOUT_PINS, MAX_NODES, Engine, Scenario
from engine.software.software_report import SoftwareReport, software_report
from engine.verdict import Verdict
from engine.verdict import verdict as judge

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
    pipeline: ModelPipeline  # the layers, family, weights and KV sizings of the config
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

    @property
    def config(self) -> ModelConfig:
        return self.model.config

    @property
    def architecture(self) -> Architecture:
        return self.pipeline.arch

    @property
    def family(self) -> FamilyVerdict:
        return self.pipeline.family

    @property
    def weights(self) -> WeightReport:
        return self.pipeline.weights

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
        kvd = _kv_dtype(engine, kv_dtype or self.scenario.kv_dtype, self.config, self.gpu)
        return self.pipeline.kv(engine, kvd, tp, _block(engine, self.config, self.gpu))

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


# --- what is computed once per distinct scenario, and what a Study costs ---------------------

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
            E.STUDY_WORK(
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


def _asked_context(s: Scenario, limit: ContextLimit) -> tuple[int, list[Decision]]:
    """The context asked (the model's own limit where the scenario says none), capped at the
    limit with a note."""
    asked = s.context or limit.tokens
    if asked <= limit.tokens:
        return asked, []
    capped = CONTEXT_CAPPED(asked=Tokens(asked), formula=limit.why, limit=Tokens(limit.tokens))
    return limit.tokens, [capped]


def _software(
    model: LoadedModel, checkpoint: LoadedModel, text_only: bool
) -> dict[Engine, SoftwareReport]:
    """Each engine's software report for the checkpoint's own format, whatever the engine makes
    of it (the hub id where the model has one)."""
    model_id = model_id_for(model) if model.source != "file" else None
    return {
        e: software_report(
            checkpoint.config.raw,
            e,
            model_id,
            text_only=text_only,
            chat_template=model.chat_template,
        )
        for e in ENGINES
    }


@dataclass(frozen=True)
class _Inputs:
    """What the layout search reads, for an engine with or without the drafts."""

    s: Scenario
    pipe: ModelPipeline
    gpu: Gpu
    kv_dtypes: dict[Engine, KvDtype]
    asked: int
    limit: int
    text_only: bool
    cal: calibration.Calibration | None
    stack: StackCalibration | None

    def kv_at(self, engine: Engine) -> Callable[[int], KvSizing]:
        block = _block(engine, self.pipe.cfg, self.gpu)
        return lambda tp: self.pipe.kv(engine, self.kv_dtypes[engine], tp, block)

    def __call__(self, engine: Engine, mtp: bool) -> SearchInputs:
        cfg, fam, s, stack = self.pipe.cfg, self.pipe.family, self.s, self.stack
        spec = None
        if mtp:
            rec = speculative_for(cfg, engine)
            one_config = adapter(engine).speculative_config_json  # vLLM's --speculative-config
            spec = Speculative(
                rec.perf_method,
                max(1, rec.num_speculative_tokens if one_config else rec.num_steps),
            )
        own = stack is not None and stack.engine == engine
        return SearchInputs(
            cfg=cfg,
            arch=self.pipe.arch,
            family=fam,
            weights=self.pipe.weights,
            gpu=self.gpu,
            engine=engine,
            kv_at=self.kv_at(engine),
            context=self.asked,
            limit=self.limit,
            mtp=mtp,
            vision=fam.multimodal and not self.text_only,
            chunk_tokens=chunk_tokens(s.latency, s.images),
            speculative=spec,
            calibration=self.cal,
            engine_version=adapter(engine).version,  # the plan's release: how it runs a step
            factors=stack.factors_over(perf_facts().factors) if own and stack else None,
        )


def _engine_views(
    inputs: _Inputs, software: dict[Engine, SoftwareReport], pick: Candidate, mtp: bool
) -> dict[Engine, EngineView]:
    """Each engine at the pick's layout: the scenario's engine as picked, the other re-checked
    on the same layout (or why it cannot run it)."""
    s, pipe = inputs.s, inputs.pipe
    views: dict[Engine, EngineView] = {}
    for e in ENGINES:
        fit: Candidate | None = pick
        problem = None
        if e != s.engine:
            problem = split_problem(pipe.cfg, pipe.arch, pipe.family, pick.layout.split)
            try:
                fit = (
                    None
                    if problem
                    else evaluate(inputs(e, mtp), s, pick.layout.replicas, pick.layout.split)
                )
            except InputError as err:
                fit, problem = None, err.why or REJECT_ENGINE(why=err.expects)
        kv = inputs.kv_at(e)(pick.layout.tp)
        views[e] = EngineView(e, inputs.kv_dtypes[e], kv, fit, software[e], None, problem)
    return views


def _served(s: Scenario, checkpoint: LoadedModel, gpu: Gpu) -> LoadedModel:
    """The model as the engine holds it: after ``--quantization fp8``, its weights in FP8."""
    if s.quantization != "fp8":
        return checkpoint
    stored = model_pipeline(checkpoint.config).weights.weight_dtype
    return online_fp8(checkpoint, gpu, stored)


def _compute(s: Scenario) -> Study:
    checkpoint = resolve_model(s)
    gpu = lookup_gpu(s.gpu)
    model = _served(s, checkpoint, gpu)
    cfg = model.config
    pipe = model_pipeline(cfg)
    _check_work(s, cfg, pipe.family.moe)
    fam = pipe.family
    limit = context_limit(cfg)
    if s.images and not fam.multimodal:
        raise InputError("images", E.MULTIMODAL(architecture=Name(cfg.architecture)))
    asked, notes = _asked_context(s, limit)
    text_only = fam.multimodal and not s.images
    # the checkpoint's own MTP layers, or a draft model (an EAGLE3 head) the recipe names
    drafts = has_draft_layers(fam) or speculative_for(cfg, s.engine).draft_model is not None
    cal = calibration.check(calibration.get(s.calibration), gpu) if s.calibration else None
    stack = stack_calibration.get(s.bench_calibration) if s.bench_calibration else None
    if stack is not None:
        notes.append(bench_calibrated(stack))
    kv_dtypes = {e: _kv_dtype(e, s.kv_dtype, cfg, gpu) for e in ENGINES}
    inputs = _Inputs(s, pipe, gpu, kv_dtypes, asked, limit.tokens, text_only, cal, stack)
    found, mtp, draft_speeds = _with_or_without_drafts(
        lambda m: search(inputs(s.engine, m), s), s, drafts
    )
    pick = found.pick
    views = _engine_views(inputs, _software(model, checkpoint, text_only), pick, mtp)
    fewest = _fewest_cached(inputs(s.engine, mtp), s) if not pick.context_fits else None
    gates = gate_report(fam, pipe.weights, views[s.engine].kv_dtype, gpu, pick, cfg, fewest)
    verdict = judge(s, found, gates, asked)
    core = PlanInputs(
        model, cfg, gpu, pipe.arch, fam, pipe.weights, limit, asked, mtp, text_only, gates,
        draft_speeds,
    )  # fmt: skip
    for e, v in views.items():
        if v.fit is None:
            continue
        plan = build_plan(core, s, e, v.fit, v.kv, v.software, verdict.runs)
        views[e] = EngineView(e, v.kv_dtype, v.kv, v.fit, v.software, plan, v.problem)
    return Study(
        scenario=s,
        model=model,
        gpu=gpu,
        pipeline=pipe,
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
_TRIAL: dict[str, object] = {**dict.fromkeys(LAYOUT_PINS), "users": 1}


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
