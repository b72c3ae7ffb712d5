"""The rules that turn the Study's decisions into one engine's flags, each with its reason (a
decision, worded per language by ``engine.text.words``), and the flags left to the engine on
purpose: layout, parsers, KV dtype, memory fraction, prefill chunk, speculative decoding,
multimodal, context. Every spelling is the engine adapter's (``engine.engines``)."""

from __future__ import annotations

import json
import math

from engine.decision import Bytes, Code, Decimal, Decision, Name, Percent, Source, Tokens
from engine.engines import ENGINES, adapter
from engine.kv.sizing import KvSizing
from engine.launch.candidate import Candidate, Layout
from engine.launch.known_issues import symptom
from engine.launch.launch_data import launch_facts
from engine.launch.nodes import copies_per_node
from engine.launch.plan_inputs import PlanInputs
from engine.launch.plan_parts import LeftOut, PlanFlag, checked
from engine.launch.ranking import layout_rules, speed_cost
from engine.launch.recipes import Speculative, recipes_source, speculative_for, tool_chat_template
from engine.model.family import AttentionFamily
from engine.scenario import Engine, Scenario
from engine.software.software_report import SoftwareReport

# The flags that carry the layout, in both engines' spellings (from the one settings table).
PARALLEL_FLAGS = frozenset(
    adapter(e).flag(s)
    for e in ENGINES
    for s in ("tp", "dp", "pp", "ep", "attention_dp")
    if adapter(e).has(s)
)

LAYOUT = Code("flag.layout", "layout", "users", "context", "weights")
LAYOUT_CLOSEST = Code("flag.layout_closest", "layout", "weights", "usable")
MOE_SHAPE = Code("moe.shape", "experts", "active")
TOOL_PARSER = Code("flag.parser.tool", "family", "parser")
REASONING_PARSER = Code("flag.parser.reasoning", "family", "parser")
CHAT_TEMPLATE = Code("flag.chat_template", "template", "source")
LEFT_TOOL_BASE = Code("left.parser.base_checkpoint")
LEFT_PARSER_NONE = Code("left.parser.none", "flag", "family")
KV_SCENARIO = Code("flag.kv.scenario", "stored")
KV_SCENARIO_DSA = Code("flag.kv.scenario_dsa", "stored")
LEFT_KV_DSA = Code("left.kv.dsa", "picked")
LEFT_BACKEND_DSA = Code("left.attention_backend.dsa", "arch")
LEFT_KV_AUTO = Code("left.kv.auto", "stored")
LEFT_KV_AUTO_SHORT = Code("left.kv.auto_short", "stored", "users", "asked")
LEFT_KV_AUTO_BLOCKED = Code("left.kv.auto_blocked", "stored")
LEFT_BACKEND = Code("left.attention_backend.engine", "family", "arch", "generation")
SEQS_SCENARIO = Code("flag.max_num_seqs.scenario", "n")
SEQS_RESERVE = Code("flag.max_num_seqs.reserve", "reserve")
FRACTION_SCENARIO_ALL = Code("flag.memory_fraction.scenario_all", "fraction")
FRACTION_SCENARIO_STATIC = Code("flag.memory_fraction.scenario_static", "fraction")
FRACTION_KNOWN_ISSUE = Code("flag.memory_fraction.known_issue", "fraction", "symptom", "source")
FRACTION_GRAPH = Code("flag.memory_fraction.decode_graph", "fraction", "bs", "dp", "formula")
DECODE_GRAPH = Code("flag.decode_graph_bs", "bs", "users", "ranks", "source")
LEFT_FRACTION_TABLE = Code("left.memory_fraction.table_default", "fraction")
LEFT_FRACTION_AUTO = Code("left.memory_fraction.engine_auto", "engine", "fraction")
PRIORITY = {
    "latency": Code("priority.latency"),
    "balanced": Code("priority.balanced"),
    "throughput": Code("priority.throughput"),
}
CHUNK = Code("flag.prefill_chunk.priority", "chunk", "priority")
CHUNK_IMAGES = Code("flag.prefill_chunk.images", "chunk")
CHUNK_FRACTION = Code("flag.prefill_chunk.fraction", "chunk", "asked", "fraction")
CHUNK_HYBRID = Code("flag.prefill_chunk.hybrid", "base", "chunk", "blocks", "block")
CHUNK_KNOWN_ISSUE = Code("flag.prefill_chunk.known_issue", "chunk", "symptom", "source")
LEFT_BLOCK_HYBRID = Code("left.block.hybrid", "block")
LEFT_PAGE_HYBRID = Code("left.page.hybrid")
MTP_ONE_CONFIG = Code("flag.mtp.config", "layers", "why", "tokens", "source")
MTP_ALGORITHM = Code("flag.mtp.algorithm", "layers", "why", "algorithm", "source")
SPEC_PINNED = Code("flag.mtp.pinned")
SPEC_SPEED = Code("flag.mtp.speed", "tpot", "tpot_without", "tps", "tps_without")
SPEC_SLOWER = Code("flag.mtp.slower", "tpot", "tpot_without", "tps", "tps_without")
# drafts are faster by the objective, but by less than the speed model's error
SPEC_TIE = Code("flag.mtp.tie", "tpot", "tpot_without", "tps", "tps_without", "tie")


def draft_why(core: PlanInputs, code: Code, scenario: Scenario | None = None) -> Decision:
    """Why drafts are on (or off): the scenario's pin, or the speed model's comparison of the
    search's picks with and without them. Off (``scenario`` given): "slower" only where drafts
    do not lower the objective's cost; a gain inside the speed model's error is said as one."""
    if core.draft_speeds is None or None in core.draft_speeds:
        return SPEC_PINNED()
    with_drafts, without = core.draft_speeds
    assert with_drafts is not None and without is not None
    figures = {
        "tpot": Decimal(with_drafts.tpot_ms, 1, "ms"),
        "tpot_without": Decimal(without.tpot_ms, 1, "ms"),
        "tps": Decimal(with_drafts.output_tokens_per_s_per_gpu, 0, "tok/s"),
        "tps_without": Decimal(without.output_tokens_per_s_per_gpu, 0, "tok/s"),
    }
    if scenario is not None and speed_cost(scenario, with_drafts) < speed_cost(scenario, without):
        return SPEC_TIE(**figures, tie=Percent(layout_rules().speed_tie_fraction))
    return code(**figures)


MTP_STEPS = Code("flag.mtp.steps")
MTP_TOPK = Code("flag.mtp.topk")
MTP_DRAFT = Code("flag.mtp.draft_tokens")
MTP_MULTI_LAYER = Code("flag.mtp.multi_layer", "source")
DRAFT_MODEL = Code("flag.mtp.draft_model", "model", "why", "tokens", "source")
DRAFT_ALGORITHM = Code("flag.mtp.draft_algorithm", "model", "why", "algorithm", "source")
DRAFT_PATH = Code("flag.mtp.draft_path")
MM_CACHE = Code("flag.mm.processor_cache")
MM_ENCODER_DP = Code("flag.mm.encoder_dp", "tp")
CONTEXT_FITS = Code("flag.context.fits", "asked", "limit", "formula")
CONTEXT_SHORT = Code("flag.context.shortened", "context", "asked", "limit")
CONTEXT_BLOCKED = Code("flag.context.blocked", "asked", "limit")
PARSER_UNREGISTERED = Code("plan.note.parser_unregistered", "flag", "parser", "engine")
LMCACHE_CHUNK = Code("plan.note.lmcache_chunk", "default", "block", "example")
LMCACHE_CHUNK_OFF = Code("plan.note.lmcache_chunk_off", "default", "block", "example")


def parallel_flags(
    engine: Engine, lay: Layout, fit: Candidate, moe: bool, experts: Decision, per_node: int
) -> list[PlanFlag]:
    eng = adapter(engine)
    merged = copies_per_node(lay, per_node) if eng.merges_copies(moe, lay.split.dp) else 1
    why_tp = (
        LAYOUT(
            layout=Name(lay.describe()),
            users=fit.users,
            context=Tokens(fit.context),
            weights=Bytes(fit.weights_per_gpu),
        )
        if fit.weights_fit
        else LAYOUT_CLOSEST(
            layout=Name(lay.describe()),
            weights=Bytes(fit.weights_per_gpu),
            usable=Bytes(fit.usable_per_gpu),
        )
    )
    return [
        checked(engine, c.flag, c.value, c.why)
        for c in eng.parallel_flags(lay.split, merged, why_tp, experts)
    ]


def parser_flags(
    engine: Engine, sw: SoftwareReport, base: bool
) -> tuple[list[PlanFlag], list[LeftOut], list[Decision]]:
    eng = adapter(engine)
    flags: list[PlanFlag] = []
    left: list[LeftOut] = []
    notes: list[Decision] = []
    family = Name(sw.family or sw.architecture)
    kinds = (
        ("tool_call_parser", sw.tool_call_parser, eng.tool_call_parsers, TOOL_PARSER),
        ("reasoning_parser", sw.reasoning_parser, eng.reasoning_parsers, REASONING_PARSER),
    )
    for setting, name, registry, code in kinds:
        flag = eng.flag(setting)  # type: ignore[arg-type]
        if setting == "tool_call_parser" and base and name is not None:
            left.append(LeftOut(flag, LEFT_TOOL_BASE()))
            continue
        if name is not None and name in registry:
            flags.append(checked(engine, flag, name, code(family=family, parser=Name(name))))
        elif name is not None:
            notes.append(
                PARSER_UNREGISTERED(flag=Name(flag), parser=Name(name), engine=Name(eng.label))
            )
        else:
            left.append(LeftOut(flag, LEFT_PARSER_NONE(flag=Name(flag[2:]), family=family)))
    tool = next((f.value for f in flags if f.flag == eng.flag("tool_call_parser")), None)
    if tool is not None:
        template = tool_chat_template(engine, tool, sw.reasoning_parser)
        if template is not None:
            why = CHAT_TEMPLATE(template=Name(template.template), source=Source(template.source))
            flags.append(checked(engine, eng.flag("chat_template"), template.template, why))
    return flags, left, notes


def kv_flags(
    engine: Engine, core: PlanInputs, s: Scenario, kv: KvSizing, fit: Candidate | None = None
) -> tuple[list[PlanFlag], list[LeftOut]]:
    eng = adapter(engine)
    fam = core.family.attention_family
    gpu = core.gpu
    flag = eng.flag("kv_dtype")
    stored = kv.kv_dtype.stored
    backend = eng.flag("attention_backend")
    if s.kv_dtype != "auto":
        value = eng.kv_dtype_value(s.kv_dtype, stored)
        code = KV_SCENARIO_DSA if fam == AttentionFamily.DSA else KV_SCENARIO
        return [checked(engine, flag, value, code(stored=Name(stored)))], []
    if fam == AttentionFamily.DSA:
        # what the engine's own auto rule stores on this GPU (engine.kv: the Study's sizing)
        picked = eng.kv_dtype_value(stored, stored)
        return [], [
            LeftOut(flag, LEFT_KV_DSA(picked=Name(picked))),
            LeftOut(backend, LEFT_BACKEND_DSA(arch=Name(gpu.arch))),
        ]
    short = fit is not None and fit.weights_fit and not (fit.users_fit and fit.context_fits)
    auto = (
        LEFT_KV_AUTO_SHORT(stored=Name(stored), users=fit.users, asked=s.users)
        if short and fit is not None
        else LEFT_KV_AUTO_BLOCKED(stored=Name(stored))
        if fit is not None and not fit.weights_fit
        else LEFT_KV_AUTO(stored=Name(stored))
    )
    return [], [
        LeftOut(flag, auto),
        LeftOut(
            backend,
            LEFT_BACKEND(family=Name(fam), arch=Name(gpu.arch), generation=Name(gpu.generation)),
        ),
    ]


def memory_flag(
    engine: Engine, s: Scenario, fit: Candidate
) -> tuple[list[PlanFlag], list[LeftOut]]:
    """The memory fraction (set when the scenario chose one, or the sizing assumed one: a
    recipe's known-issue fix, SGLang's fraction at the DP-attention decode batch), the decode
    CUDA-graph batch the sizing assumed, and a ``--max-num-seqs`` when the layout search needed
    the sampler reserve back."""
    eng = adapter(engine)
    out: list[PlanFlag] = []
    seqs_flag = eng.flag("max_num_seqs")
    if s.max_num_seqs is not None:
        out.append(checked(engine, seqs_flag, str(s.max_num_seqs), SEQS_SCENARIO(n=s.max_num_seqs)))
    elif fit.max_num_seqs is not None and fit.reserve is not None:
        out.append(
            checked(
                engine,
                seqs_flag,
                str(fit.max_num_seqs),
                SEQS_RESERVE(reserve=Bytes(fit.reserve.total)),
            )
        )
    if fit.decode_graph_bs is not None:
        ranks = fit.layout.dp * fit.layout.replicas
        out.append(
            checked(
                engine,
                eng.flag("decode_graph_max_bs"),
                str(fit.decode_graph_bs),
                DECODE_GRAPH(
                    bs=fit.decode_graph_bs,
                    users=s.users,
                    ranks=ranks,
                    source=Source(layout_rules().decode_graph_bs_source),
                ),
            )
        )
    flag = eng.flag("memory_fraction")
    value = f"{fit.fraction:g}"
    if s.memory_fraction is not None:
        code = FRACTION_SCENARIO_ALL if eng.fraction_covers_everything else FRACTION_SCENARIO_STATIC
        return [*out, checked(engine, flag, value, code(fraction=Decimal(fit.fraction, 3)))], []
    issue = next((f for f in fit.fixes if f.fix and f.fix.memory_fraction is not None), None)
    if issue is not None:
        why = FRACTION_KNOWN_ISSUE(
            fraction=Decimal(fit.fraction, 2),
            symptom=symptom(issue),
            source=Source(f"{issue.source}: '{issue.quote}'"),
        )
        return [*out, checked(engine, flag, value, why)], []
    if fit.fraction_pinned and fit.decode_graph_bs is not None:
        why = FRACTION_GRAPH(
            fraction=Decimal(fit.fraction, 3),
            bs=fit.decode_graph_bs,
            dp=fit.layout.dp,
            formula=fit.fraction_why,
        )
        return [*out, checked(engine, flag, value, why)], []
    left = (
        LEFT_FRACTION_TABLE(fraction=Decimal(fit.fraction, 2))
        if eng.fraction_covers_everything
        else LEFT_FRACTION_AUTO(engine=Name(eng.label), fraction=Decimal(fit.fraction, 3))
    )
    return out, [LeftOut(flag, left)]


def chunk_flags(
    engine: Engine,
    kv: KvSizing,
    chunk: int,
    priority: str,
    images: bool,
    hybrid_fam: bool,
    fit: Candidate | None = None,
) -> tuple[list[PlanFlag], list[LeftOut], list[Decision]]:
    eng = adapter(engine)
    issue = next(
        (f for f in (fit.fixes if fit else ()) if f.fix and f.fix.prefill_chunk is not None),
        None,
    )
    if issue is not None and issue.fix is not None and issue.fix.prefill_chunk is not None:
        chunk = issue.fix.prefill_chunk
        why: Decision = CHUNK_KNOWN_ISSUE(
            chunk=Tokens(chunk),
            symptom=symptom(issue),
            source=Source(f"{issue.source}: '{issue.quote}'"),
        )
    elif fit is not None and fit.chunk_tokens is not None and fit.chunk_tokens < chunk:
        # the engine's own memory fraction is computed from the chunk: the layout search
        # lowered it until that fraction holds the weights and the KV
        why = CHUNK_FRACTION(
            chunk=Tokens(fit.chunk_tokens), asked=Tokens(chunk), fraction=Decimal(fit.fraction, 3)
        )
        chunk = fit.chunk_tokens
    elif images:
        why = CHUNK_IMAGES(chunk=Tokens(chunk))
    else:
        why = CHUNK(chunk=Tokens(chunk), priority=PRIORITY[priority]())
    left: list[LeftOut] = []
    notes: list[Decision] = []
    hybrid = kv.hybrid
    if hybrid is not None:  # the engine pads attention blocks to the linear-state page
        n = hybrid.block_size
        chunk = n * math.ceil(chunk / n)
        why = CHUNK_HYBRID(base=why, chunk=Tokens(chunk), blocks=chunk // n, block=n)
        left.append(LeftOut(eng.flag("block"), LEFT_BLOCK_HYBRID(block=n)))
        lmcache_chunk = launch_facts().lmcache.chunk_size
        example = n * max(1, lmcache_chunk // n)
        fits = lmcache_chunk % n == 0
        code = LMCACHE_CHUNK if fits else LMCACHE_CHUNK_OFF
        notes.append(code(default=Tokens(lmcache_chunk), block=n, example=Tokens(example)))
    elif hybrid_fam and eng.token_paged:
        left.append(LeftOut(eng.flag("block"), LEFT_PAGE_HYBRID()))
    return [checked(engine, eng.flag("prefill_chunk"), str(chunk), why)], left, notes


def _speculative_json(spec: Speculative, amd: bool) -> str:
    """vLLM's --speculative-config: the method and draft tokens, the draft model where the
    recipe names one, and its other keys (those for AMD GPUs on AMD)."""
    config: dict[str, object] = {"method": spec.method}
    if spec.draft_model is not None:
        config["model"] = spec.draft_model
    config["num_speculative_tokens"] = spec.num_speculative_tokens
    if spec.draft_tensor_parallel_size is not None:
        config["draft_tensor_parallel_size"] = spec.draft_tensor_parallel_size
    extra = spec.config_amd if amd and spec.config_amd is not None else spec.config
    config.update(dict(extra))
    return json.dumps(config, separators=(",", ":"))


def mtp_flags(engine: Engine, core: PlanInputs) -> list[PlanFlag]:
    eng = adapter(engine)
    layers = core.family.mtp_layers
    why = draft_why(core, SPEC_SPEED)
    spec = speculative_for(core.cfg, engine)
    source = Source(spec.source)
    if eng.speculative_config_json:
        value = _speculative_json(spec, core.gpu.vendor == "amd")
        tokens = spec.num_speculative_tokens
        reason = (
            DRAFT_MODEL(model=Name(spec.draft_model), why=why, tokens=tokens, source=source)
            if spec.draft_model is not None
            else MTP_ONE_CONFIG(layers=layers, why=why, tokens=tokens, source=source)
        )
        return [checked(engine, eng.flag("speculative"), value, reason)]
    algo = Name(spec.algorithm)
    reason = (
        DRAFT_ALGORITHM(model=Name(spec.draft_model), why=why, algorithm=algo, source=source)
        if spec.draft_model is not None
        else MTP_ALGORITHM(layers=layers, why=why, algorithm=algo, source=source)
    )
    out = [
        checked(engine, eng.flag("speculative"), spec.algorithm, reason),
        checked(engine, eng.flag("speculative_steps"), str(spec.num_steps), MTP_STEPS()),
        checked(engine, eng.flag("speculative_topk"), str(spec.eagle_topk), MTP_TOPK()),
        checked(
            engine, eng.flag("speculative_draft_tokens"), str(spec.num_draft_tokens), MTP_DRAFT()
        ),
    ]
    if spec.draft_model is not None:
        draft = eng.flag("speculative_draft_model")
        out.append(checked(engine, draft, spec.draft_model, DRAFT_PATH()))
    elif eng.has("multi_layer_eagle") and (spec.multi_layer or layers > 1):
        # a checkpoint with several MTP layers drafts one step with each (SGLang's
        # multi-layer EAGLE), as the cookbook's Step-3.5 and MiMo-V2-Flash commands run them
        source = Source(recipes_source("multi_layer_eagle"))
        why = MTP_MULTI_LAYER(source=source)
        out.append(checked(engine, eng.flag("multi_layer_eagle"), None, why))
    return out


def mm_flags(engine: Engine, lay: Layout) -> list[PlanFlag]:
    eng = adapter(engine)
    out: list[PlanFlag] = []
    if eng.has("mm_processor_cache"):
        out.append(checked(engine, eng.flag("mm_processor_cache"), "shm", MM_CACHE()))
    if lay.tp > 1:
        flag = eng.flag("mm_encoder_dp")
        info = eng.lookup(flag)
        value = "data" if info is not None and info.takes_value else None
        out.append(checked(engine, flag, value, MM_ENCODER_DP(tp=lay.tp)))
    return out


def context_flag(engine: Engine, core: PlanInputs, fit: Candidate) -> PlanFlag:
    flag = adapter(engine).flag("context")
    asked = core.context_asked
    if not fit.weights_fit:  # no request fits at all: the asked context, nothing claimed
        why = CONTEXT_BLOCKED(asked=Tokens(asked), limit=Tokens(core.limit.tokens))
    elif fit.context_fits:
        why = CONTEXT_FITS(
            asked=Tokens(asked), limit=Tokens(core.limit.tokens), formula=Name(core.limit.formula)
        )
    else:
        why = CONTEXT_SHORT(
            context=Tokens(fit.context), asked=Tokens(asked), limit=Tokens(core.limit.tokens)
        )
    return checked(engine, flag, str(fit.context), why)


def experts_shape(num_experts: int, active: int) -> Decision:
    return MOE_SHAPE(experts=num_experts, active=active)
