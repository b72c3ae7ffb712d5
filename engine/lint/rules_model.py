"""Rules that compare the command with the Study of the scenario it describes: which model it
serves, whether its layout can split the model, whether the weights and one request at its
context fit the usable memory on each GPU, the context against the model's own limit, experts
sliced or whole, the parsers of the model's family, and settings the engine picks better itself."""

from __future__ import annotations

from engine.decision import Bytes, Decision, Name, Param, Percent, Source, Tokens
from engine.engines import adapter
from engine.engines.memory import Split
from engine.errors import InputError
from engine.kv.dtype import stored_name
from engine.launch.known_issues import Where, applies
from engine.launch.known_issues import known_issues as all_known_issues
from engine.launch.layout import split_problem, stage_share
from engine.launch.plan import LaunchPlan
from engine.launch.recipes import base_flags_for, checkpoints_of, is_base_checkpoint
from engine.lint import codes as C
from engine.lint import rules_hardware
from engine.lint.arguments import Arg
from engine.lint.command_scenario import shown, token_count
from engine.lint.findings import Edit
from engine.lint.fixes import LayoutFix, study_change, study_layout, tp_choice
from engine.lint.lint_context import Ctx
from engine.lint.rule_data import lint_rules, same_parser
from engine.rules import engine_rules
from engine.software.software_report import SoftwareReport, software_report

GIB = 1 << 30


def model_note(ctx: Ctx) -> None:
    if ctx.choice.note is not None:
        code, what, fix = ctx.choice.note
        ctx.add(code, what, fix, ctx.written("model"))


def gpu_count(ctx: Ctx) -> None:
    world = ctx.settings.world
    if ctx.gpus is not None and world > ctx.gpus:
        needs = C.EXCEEDS if adapter(ctx.engine).dp_is_attention_dp_for_moe else C.EXCEEDS_REPLICAS
        ctx.add(
            "parallel-exceeds-gpus",
            needs(
                world=world,
                tp=ctx.settings.tp,
                pp=ctx.settings.pp,
                dp=world // max(ctx.settings.tp * ctx.settings.pp, 1),
                gpus=ctx.gpus,
            ),
            *_exceeds_fix(ctx, ctx.gpus),
        )


def _exceeds_fix(ctx: Ctx, gpus: int) -> tuple[Decision, str, tuple[Edit, ...]]:
    """The fix for a layout larger than the GPUs given: the nearest TP that fits them with the
    other sizes kept, else the Study's layout on them, every parallel size set together."""
    best = tp_choice(ctx)
    if best is not None:
        return C.EXCEEDS_FIX(gpus=gpus), ctx.written("tp"), (ctx.set_value("tp", str(best)),)
    fix = study_layout(ctx)
    if fix is not None:
        return _layout_fix(fix), ctx.written("tp"), fix.edits
    return C.EXCEEDS_FIX(gpus=gpus), ctx.written("tp"), ()


def _layout_fix(fix: LayoutFix) -> Decision:
    return C.FIX_STUDY_LAYOUT(words=Name(fix.words), layout=fix.layout.name(), gpus=fix.gpus)


def layout(ctx: Ctx) -> None:
    st = ctx.facts
    if st is None:
        return
    lay = ctx.settings.layout(st.family.moe)
    tp = lay["tp"]
    heads = st.config.num_attention_heads
    written = ctx.written("tp")
    if heads % tp:
        sizes = tuple(d for d in range(1, min(heads, 64) + 1) if heads % d == 0)
        best = tp_choice(ctx)
        fix = study_layout(ctx) if best is None else None
        remedy: Decision = C.TP_HEADS_FIX(heads=heads, divisors=sizes)
        edits: tuple[Edit, ...] = ()
        if best is not None:
            words = Name(f"{ctx.flag('tp')} {best}")
            remedy = C.TP_HEADS_FIX_PICK(words=words, heads=heads, divisors=sizes)
            edits = (ctx.set_value("tp", str(best)),)
        elif fix is not None:
            remedy = C.TP_HEADS_FIX_LAYOUT(
                words=Name(fix.words),
                layout=fix.layout.name(),
                gpus=fix.gpus,
                heads=heads,
                divisors=sizes,
            )
            edits = fix.edits
        ctx.add("tp-heads", C.TP_HEADS(tp=tp, heads=heads), remedy, written, edits)
        return
    split = Split(tp, lay["dp"], lay["pp"], bool(lay["ep"]))
    problem = split_problem(st.config, st.architecture, st.family, split)
    if problem is not None:
        fix = study_layout(ctx)
        ctx.add(
            "layout-invalid",
            C.LAYOUT_INVALID(problem=problem),
            _layout_fix(fix) if fix is not None else C.LAYOUT_INVALID_FIX(),
            written,
            fix.edits if fix is not None else (),
        )


def _where(ctx: Ctx) -> Decision:
    """Where the command runs: its layout on its GPUs."""
    st = ctx.study
    assert st is not None
    return C.WHERE(layout=st.layout.name(), gpus=st.scenario.total_gpus, gpu=Name(st.gpu.key))


def fit(ctx: Ctx) -> None:
    """Weights and one request at the command's context against the usable memory per GPU.
    Where the answer turns on the engine's own overhead (an estimate), it is an info: only a
    start-up log can tell."""
    st = ctx.study
    if st is None or ctx.gpu is None:
        return
    pick = st.search.pick
    usable, weights = pick.usable_per_gpu, pick.weights_per_gpu
    overhead = pick.reserve.total if pick.reserve is not None else 0
    share = C.SHARE(
        usable=Bytes(usable),
        engine=ctx.engine_short,
        fraction=Percent(pick.fraction),
        memory=Bytes(pick.memory_per_gpu),
    )
    if weights > usable:
        remedy, edits = _fit_fix(ctx)
        ctx.add(
            "does-not-fit",
            C.NOT_FIT(where=_where(ctx), weights=Bytes(weights), share=share),
            remedy,
            edits=edits,
        )
        return
    if not pick.weights_fit:
        ctx.add(
            "memory-tight",
            C.TIGHT_WEIGHTS(
                where=_where(ctx),
                weights=Bytes(weights),
                left=Bytes(usable - weights),
                share=share,
                overhead=Bytes(overhead),
            ),
            C.TIGHT_WEIGHTS_FIX(),
        )
        return
    _context_fit(ctx, usable - weights, overhead)


def _fit_fix(ctx: Ctx) -> tuple[Decision, tuple[Edit, ...]]:
    """What makes the weights fit, the least change first: one of the Study's re-checked
    alternatives the command can say (a memory fraction, a KV dtype, a context, the requests at
    once) at its own layout; a TP that holds them on the GPUs given; the Study's own layout
    there. Else the ways out a flag cannot say (more GPUs, a smaller checkpoint)."""
    change = study_change(ctx)
    if change is not None:
        return C.FIX_STUDY_CHANGE(words=Name(change.words), change=change.what), change.edits
    best = tp_choice(ctx)
    if best is not None:
        words = Name(f"{ctx.flag('tp')} {best}")
        return C.NOT_FIT_FIX_TP(words=words, options=_fit_options(ctx)), (
            ctx.set_value("tp", str(best)),
        )
    fix = study_layout(ctx)
    st = ctx.study
    assert st is not None
    if fix is not None and fix.layout != st.layout:
        return _layout_fix(fix), fix.edits
    return _fit_options(ctx), ()


def _fit_options(ctx: Ctx) -> Decision:
    """Ways out: the fewest GPUs of this kind that hold the weights and one request, and the
    official smaller checkpoints this GPU can run."""
    st, base = ctx.study, ctx.base
    assert st is not None
    options: list[Decision] = []
    if base is not None and base.min_gpus is not None:
        options.append(
            C.OPTION_GPUS(n=base.min_gpus, gpu=Name(st.gpu.key), context=Tokens(st.context_asked))
        )
    fp4 = st.gpu.fp4
    names = sorted({st.model.name, ctx.settings.model_id or ""})
    siblings = [
        C.OPTION_CHECKPOINT(repo=Name(repo), format=Name(kind.upper()))
        for name in names
        if name
        for kind, repo, _ in checkpoints_of(name)
        if fp4 or kind != "nvfp4"
    ]
    if siblings:
        options.append(C.OPTION_CHECKPOINTS(repos=tuple(dict.fromkeys(siblings))))
    if not options:
        return C.NOT_FIT_FIX_NONE()
    return C.NOT_FIT_FIX(options=tuple(options))


def _context_fit(ctx: Ctx, room_max: int, overhead: int) -> None:
    st = ctx.study
    assert st is not None
    pick = st.search.pick
    s = ctx.settings
    if pick.context_fits or s.context_auto:
        return
    if s.context is not None and s.context > st.limit.tokens:
        return  # context-beyond-model says it, with a value that also fits
    if s.context is None and ctx.config_file:
        return  # the file may set the context
    if s.context is None and ctx.arg(ctx.flag("context")) is not None:
        return  # set to a value the linter cannot read (a shell variable, a bad value)
    asked = st.context_asked
    need = int(st.kv.bytes_per_request(asked, padded=True) * stage_share(st.config, st.layout.pp))
    largest = pick.context
    flag = ctx.written("context")
    where = _where(ctx)
    numbers = C.KV_NUMBERS(
        context=Tokens(asked),
        need=Bytes(need),
        room=Bytes(room_max),
        usable=Bytes(pick.usable_per_gpu),
        weights=Bytes(pick.weights_per_gpu),
    )
    fits = Name(f"{ctx.flag('context')} {largest}")
    edits = (ctx.set_value("context", str(largest)),)
    if need <= room_max:
        ctx.add(
            "memory-tight",
            C.TIGHT_CONTEXT(where=where, numbers=numbers, overhead=Bytes(overhead)),
            C.TIGHT_CONTEXT_FIX(words=fits),
            edits=edits,
        )
        return
    effect = (
        C.REFUSES(engine=ctx.engine_short)
        if adapter(ctx.engine).context_beyond_pool_refused
        else C.CAPS(engine=ctx.engine_short, context=Tokens(largest))
    )
    if s.context is not None:
        ctx.add(
            "context-does-not-fit",
            C.CONTEXT_NOT_FIT(
                flag=Name(flag),
                value=Name(shown(ctx.parsed.value(ctx.flag("context")) or "")),
                context=Tokens(s.context),
                where=where,
                numbers=numbers,
                effect=effect,
            ),
            C.CONTEXT_NOT_FIT_FIX(words=Name(f"{flag} {largest}")),
            flag,
            edits,
        )
        return
    # The engine takes the limit from the checkpoint's own config.json, which a stand-in of its
    # family does not have (GLM-5.2 serves 1M tokens where GLM-5 says 202,752): for a stand-in
    # say it as the stand-in's numbers, an info, without claiming what the engine does.
    stand_in = not ctx.choice.own
    said: dict[str, Param] = {
        "flag": Name(flag),
        "context": Tokens(asked),
        "formula": st.limit.why,
        "where": where,
        "numbers": numbers,
    }
    ctx.add(
        "context-default-does-not-fit",
        C.DEFAULT_NOT_FIT_STAND_IN(**said, model=Name(st.model.name))
        if stand_in
        else C.DEFAULT_NOT_FIT(**said, effect=effect),
        C.DEFAULT_NOT_FIT_FIX(words=fits),
        None,
        edits,
        severity="info" if stand_in else None,
    )


def context_limit(ctx: Ctx) -> None:
    st = ctx.facts
    s = ctx.settings
    if st is None or s.context is None:
        return
    limit = st.limit.tokens
    if s.context <= limit:
        return
    target = limit
    pick = ctx.study.search.pick if ctx.study is not None and ctx.gpu is not None else None
    capped = False
    if pick is not None and not pick.context_fits and 0 < pick.context < limit:
        target = pick.context  # the model's own limit does not fit either
        capped = True
    flag = ctx.written("context")
    written = shown(ctx.parsed.value(ctx.flag("context")) or "")
    override = getattr(lint_rules().long_context_overrides, ctx.engine)
    forced = ctx.inv.env.get(override, "").strip().lower() in ("1", "true", "yes")
    beyond = C.BEYOND(
        flag=Name(flag),
        value=Name(written),
        context=Tokens(s.context),
        limit=Tokens(limit),
        formula=st.limit.why,
    )
    words = Name(f"{flag} {target}")
    if forced:
        ctx.add(
            "context-beyond-model-forced",
            C.BEYOND_FORCED(beyond=beyond, override=Name(override)),
            C.BEYOND_FORCED_FIX_FITS(words=words, fits=Tokens(target))
            if capped
            else C.BEYOND_FORCED_FIX(words=words),
            flag,
            (ctx.set_value("context", str(target)),),
        )
        return
    own = ctx.choice.own
    ctx.add(
        "context-beyond-model",
        C.BEYOND_MODEL(beyond=beyond)
        if own
        else C.BEYOND_MODEL_STAND_IN(beyond=beyond, model=Name(st.model.name)),
        C.BEYOND_MODEL_FIX_FITS(words=words, fits=Tokens(target))
        if capped
        else C.BEYOND_MODEL_FIX(words=words),
        flag,
        (ctx.set_value("context", str(target)),),
        severity=None if own else "info",  # the limit is the stand-in's, not the checkpoint's
    )


def experts(ctx: Ctx) -> None:
    st = ctx.facts
    if st is None or not st.family.moe:
        return
    lay = ctx.settings.layout(True)
    group = lay["tp"] * lay["dp"]
    if group <= 1 or lay["ep"]:
        return
    ep_flag = ctx.flag("ep")
    if any(e.flag == ep_flag for f in ctx.findings for e in f.edits if e.kind != "drop"):
        return  # the command tried to turn EP on; that finding's fix does it, once
    fam = st.family
    add = (
        ep_flag if adapter(ctx.engine).expert_parallel_is_switch else f"{ep_flag} {ctx.settings.tp}"
    )
    ctx.add(
        "moe-experts-sliced",
        C.SLICED(gpus=group, experts=fam.num_experts or 0),
        C.SLICED_FIX(words=Name(add)),
        edits=(Edit("add", add.split()[0], add.split()[1] if " " in add else None),),
    )


def _software(ctx: Ctx) -> SoftwareReport | None:
    st = ctx.facts
    if st is None:
        return None
    model_id = ctx.settings.model_id
    if model_id is None or "$" in model_id:
        model_id = st.model.name if st.model.source in ("catalog", "hub") else None
    return software_report(
        st.config.raw, ctx.engine, model_id, chat_template=st.model.chat_template
    )


def _base_checkpoint(ctx: Ctx, sw: SoftwareReport) -> bool:
    model_id = ctx.settings.model_id
    return model_id is not None and is_base_checkpoint(model_id, sw)


def parsers(ctx: Ctx) -> None:
    """The tool-call and reasoning parsers: the auto tool choice switch beside a tool parser,
    then each parser the model's software report expects: missing, unneeded, or another one."""
    tool = ctx.arg("--tool-call-parser")
    eng = adapter(ctx.engine)
    switch = eng.flag("auto_tool_choice") if eng.has("auto_tool_choice") else None
    auto = ctx.parsed.on(switch) if switch is not None else True
    sw = _software(ctx)
    if switch is not None and not ctx.config_file:
        _auto_tool_choice(ctx, tool, auto, sw.tool_call_parser if sw is not None else None)
    if sw is None or sw.family is None:
        return
    for kind, flag, expected in (
        ("tool", "--tool-call-parser", sw.tool_call_parser),
        ("reasoning", "--reasoning-parser", sw.reasoning_parser),
    ):
        # a missing tool parser's fix turns the switch on too where the engine has one
        switch_off = kind == "tool" and switch is not None and not auto
        _parser(ctx, sw, sw.family, kind, flag, expected, switch_off)


def _auto_tool_choice(ctx: Ctx, tool: Arg | None, auto: bool, expected: str | None) -> None:
    """vLLM's ``--enable-auto-tool-choice`` and ``--tool-call-parser`` go together."""
    if ctx.parsed.on("--enable-auto-tool-choice") and tool is None:
        name = expected or "NAME"
        ctx.add(
            "auto-tool-choice-without-parser",
            C.AUTO_WITHOUT_PARSER(),
            C.AUTO_WITHOUT_PARSER_FIX(words=Name(f"--tool-call-parser {name}")),
            "--enable-auto-tool-choice",
            (Edit("add", "--tool-call-parser", expected),) if expected else (),
        )
    if tool is not None and not auto:
        ctx.add(
            "parser-without-auto-tool-choice",
            C.PARSER_WITHOUT_AUTO(),
            C.PARSER_WITHOUT_AUTO_FIX(),
            tool.written,
            (Edit("add", "--enable-auto-tool-choice"),),
        )


def _parser(
    ctx: Ctx,
    sw: SoftwareReport,
    family: Name | Decision,
    kind: str,
    flag: str,
    expected: str | None,
    switch_off: bool,
) -> None:
    """One parser flag against the one the software report expects (``None``: the model needs
    none): missing where it is needed, dropped where it forces reasoning on a model without it,
    changed where it is another registered parser (a stand-in model's findings are notes)."""
    st = ctx.facts
    assert st is not None
    own = ctx.choice.own
    stand_in: dict[str, Param] = {} if own else {"model": Name(st.model.name)}
    given = ctx.arg(flag)
    if given is None or given.value is None:
        if expected is None or _not_needed(ctx, kind, sw.architecture):
            return
        if kind == "tool" and _base_checkpoint(ctx, sw):
            return
        extra = " --enable-auto-tool-choice" if switch_off else ""
        missing = C.MISSING_PARSER_STAND_IN[kind] if stand_in else C.MISSING_PARSER[kind]
        ctx.add(
            f"missing-{kind}-parser",
            missing(
                flag=Name(flag),
                family=family,
                parser=Name(expected),
                engine=ctx.engine_name,
                **stand_in,
            ),
            C.MISSING_PARSER_FIX[kind](words=Name(f"{flag} {expected}{extra}")),
            edits=(Edit("add", flag, expected),),
        )
        return
    value = given.value
    if expected is None:
        forcing = lint_rules().forces_reasoning(ctx.engine, value)
        if kind == "reasoning" and forcing and not _not_needed(ctx, kind, sw.architecture):
            unneeded = C.UNNEEDED_STAND_IN if stand_in else C.UNNEEDED
            ctx.add(
                "reasoning-parser-unneeded",
                unneeded(flag=Name(flag), value=Name(shown(value)), family=family, **stand_in),
                C.UNNEEDED_FIX(flag=Name(flag)),
                given.written,
                (Edit("drop", given.written, index=given.index),),
                severity=None if own else "info",
            )
        return
    if same_parser(ctx.engine, kind, value, expected):  # type: ignore[arg-type]
        return
    others = sw.tool_call_alternatives if kind == "tool" else sw.reasoning_alternatives
    if value in others:  # another checkpoint of this architecture; its template would say
        return
    if value in _registry(ctx, kind):  # else bad-choice already says so
        mismatch = C.MISMATCH_STAND_IN[kind] if stand_in else C.MISMATCH[kind]
        ctx.add(
            f"{kind}-parser-mismatch",
            mismatch(
                flag=Name(flag),
                value=Name(shown(value)),
                family=family,
                engine=ctx.engine_name,
                expected=Name(expected),
                **stand_in,
            ),
            C.USE(words=Name(f"{flag} {expected}")),
            given.written,
            (Edit("change", given.written, expected, given.index),),
            severity=None if own else "info",
        )


def _registry(ctx: Ctx, kind: str) -> frozenset[str]:
    return (
        adapter(ctx.engine).registries.tool_call_parsers
        if kind == "tool"
        else adapter(ctx.engine).registries.reasoning_parsers
    )


def _not_needed(ctx: Ctx, kind: str, architecture: str) -> bool:
    return any(
        r.engine == ctx.engine and r.architecture == architecture and r.kind == kind
        for r in lint_rules().parsers_not_needed
    )


def _left_reason(plan: LaunchPlan | None, flag: str) -> Decision | None:
    if plan is None:
        return None
    return next((x.why for x in plan.left_to_engine if x.flag == flag), None)


def _plan_sets(plan: LaunchPlan | None, flag: str) -> bool:
    return plan is not None and any(f.flag == flag for f in plan.flags)


def _kv_name(value: str) -> str:
    """A KV dtype spelling as the dtype it stores (fp8 is fp8_e4m3, bf16 is bfloat16)."""
    return stored_name(value)


def _recipe_sets(ctx: Ctx, flag: str, value: str | None) -> bool:
    """The official recipe for this model, engine, GPU and checkpoint sets ``flag value``."""
    base = ctx.base
    if base is None:
        return False
    sw = base.engines[ctx.engine].software
    return any(
        rf.flag == flag and (rf.value == value or value is None)
        for rf in base_flags_for(base.config, ctx.engine, base.gpu, sw, ctx.settings.context)
    )


def _dsa_kv_choice(ctx: Ctx, kv: Arg, auto: str) -> None:
    """A KV dtype the command pins on a DSA model: what the engine would pick itself again
    (pinned, it stops following the GPU), or a capacity choice the recipes make too (GLM-5.2's
    fp8 on Hopper, the DeepSeek-V3.2 guide's fp8 default): explained, not warned about, since
    the engine stores what was asked."""
    assert kv.value is not None
    gpu: Param = Name(ctx.gpu.key) if ctx.gpu is not None else C.THIS_GPU()
    st = ctx.facts
    assert st is not None
    try:
        asked = adapter(ctx.engine).kv_dtype(kv.value, st.config, ctx.gpu.arch if ctx.gpu else None)
    except InputError:
        return  # a value the engine does not know: the choices rule says so
    if _kv_name(asked.stored) == _kv_name(auto) or asked.bytes == _bytes_of(ctx, auto):
        if _kv_name(kv.value) == _kv_name(auto):
            ctx.add(
                "engine-choice-restated",
                C.RESTATED(
                    flag=Name(kv.written),
                    value=Name(shown(kv.value)),
                    engine=ctx.engine_short,
                    gpu=gpu,
                    stored=Name(asked.stored),
                ),
                C.RESTATED_FIX(),
                kv.written,
            )
        return
    ctx.add(
        "kv-dtype-capacity",
        C.CAPACITY(
            flag=Name(kv.written),
            value=Name(shown(kv.value)),
            engine=ctx.engine_short,
            stored=Name(asked.stored),
            bytes=asked.bytes,
            auto=Name(auto),
            gpu=gpu,
        ),
        C.CAPACITY_FIX(),
        kv.written,
    )


def _bytes_of(ctx: Ctx, stored: str) -> int:
    base = ctx.base
    return base.engines[ctx.engine].kv_dtype.bytes if base is not None else 0


def engine_choices(ctx: Ctx) -> None:
    """Settings the engine picks per GPU and per model better than a fixed value: the KV dtype
    and attention backends of DSA models, the block size of hybrid and DSA models."""
    st, base = ctx.facts, ctx.base
    if st is None:
        return
    fam = st.family.attention_family
    plan = (base or st).plan
    # off the native DSA kernels (sm_120, ROCm) the vendor recipes pin these values themselves
    native = ctx.gpu is None or rules_hardware.dsa_kernel_path(ctx.gpu) == "native"
    if fam == "DSA" and native:
        kv = ctx.arg("--kv-cache-dtype")
        if (
            kv is not None
            and kv.value not in (None, "auto")
            and base is not None
            and not _recipe_sets(ctx, "--kv-cache-dtype", kv.value)
        ):
            _dsa_kv_choice(ctx, kv, base.engines[ctx.engine].kv_dtype.stored)
        for flag in (
            "--attention-backend",
            "--prefill-attention-backend",
            "--decode-attention-backend",
            "--dsa-prefill-backend",
            "--dsa-decode-backend",
        ):
            arg = ctx.arg(flag)
            if arg is None or _plan_sets(plan, flag) or _recipe_sets(ctx, flag, arg.value):
                continue
            reason = _left_reason(plan, "--attention-backend") or C.DSA_PHASES()
            ctx.add(
                "engine-should-choose",
                C.SHOULD_CHOOSE(
                    flag=Name(arg.written), value=Name(shown(arg.value or "")), reason=reason
                ),
                C.SHOULD_CHOOSE_FIX(flag=Name(arg.written)),
                arg.written,
                (Edit("drop", arg.written, index=arg.index),),
            )
    block = ctx.arg(ctx.flag("block"))
    hybrid_vllm = fam == "HYBRID" and adapter(ctx.engine).aligns_hybrid_pages
    if (
        block is not None
        and (hybrid_vllm or (fam == "DSA" and native))
        and not _plan_sets(plan, block.canonical or "")
    ):
        why: Decision
        if hybrid_vllm:
            why = _left_reason(plan, "--block-size") or C.BLOCK_HYBRID()
        else:
            why = C.BLOCK_DSA(
                version=Name(adapter("vllm").version), block=engine_rules().default_block_size.mla
            )
        ctx.add(
            "engine-should-choose",
            C.BLOCK(
                flag=Name(block.written),
                value=Name(shown(block.value or "")),
                family=Name(str(fam)),
                reason=why,
            ),
            C.DROP(words=Name(block.written)),
            block.written,
            (Edit("drop", block.written, index=block.index),),
        )


def known_issues(ctx: Ctx) -> None:
    """The recipes' known issues (data/known_issues.yaml) at the command's layout and GPU: a
    layout the engine fails on, a fix the command lacks, a limit it passes."""
    st, gpu = ctx.study, ctx.gpu
    if st is None or gpu is None:
        return
    s = ctx.settings
    lay = s.layout(st.family.moe)
    split = Split(lay["tp"], lay["dp"], lay["pp"], bool(lay["ep"]))
    where = Where(
        st.config,
        split,
        gpu,
        st.scenario.gpus_per_node,
        st.fit.weights_per_gpu,
        s.memory_fraction is None,
    )
    chunk_arg = ctx.arg(ctx.flag("prefill_chunk"))
    chunk = token_count(chunk_arg.value) if chunk_arg and chunk_arg.value else None
    for issue in all_known_issues():
        if not issue.lint or not applies(issue, ctx.engine, where):
            continue
        cited: dict[str, Param] = {
            "symptom": C.SYMPTOM[issue.id](),
            "source": Source(issue.source),
            "quote_source": Source(issue.quote),
        }
        if issue.avoid:
            ctx.add(
                "known-issue",
                C.KNOWN_AVOID(engine=ctx.engine_short, **cited),
                C.KNOWN_AVOID_FIX(),
                ctx.written("pp"),
            )
        fix = issue.fix
        if fix is not None and not (
            fix.prefill_chunk is not None and chunk is not None and chunk <= fix.prefill_chunk
        ):
            edits: list[Edit] = []
            wanted: list[Name] = []
            if fix.memory_fraction is not None:
                edits.append(ctx.set_value("memory_fraction", f"{fix.memory_fraction:g}"))
                wanted.append(Name(f"{ctx.flag('memory_fraction')} {fix.memory_fraction:g}"))
            if fix.prefill_chunk is not None:
                edits.append(ctx.set_value("prefill_chunk", str(fix.prefill_chunk)))
                wanted.append(Name(f"{ctx.flag('prefill_chunk')} {fix.prefill_chunk}"))
            ctx.add(
                "known-issue",
                C.KNOWN_FIX(gpu=Name(gpu.key), **cited),
                C.KNOWN_FIX_FIX(settings=tuple(wanted)),
                None,
                tuple(edits),
            )
        limit = issue.limit
        fraction = s.memory_fraction
        if limit is not None and fraction is not None and fraction >= limit.max_memory_fraction:
            arg = ctx.arg(ctx.flag("memory_fraction"))
            ctx.add(
                "known-issue",
                C.KNOWN_LIMIT(
                    flag=Name(ctx.written("memory_fraction")),
                    fraction=Name(f"{fraction:g}"),
                    **cited,
                ),
                C.KNOWN_LIMIT_FIX(limit=Name(f"{limit.max_memory_fraction:g}")),
                arg.written if arg is not None else None,
            )
