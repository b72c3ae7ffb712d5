"""Rules that compare the command with the Study of the scenario it describes: which model it
serves, whether its layout can split the model, whether the weights and one request at its
context fit the usable memory on each GPU, the context against the model's own limit, experts
sliced or whole, the parsers of the model's family, and settings the engine picks better itself."""

from __future__ import annotations

from engine.engines import adapter
from engine.errors import InputError
from engine.kv.dtype import ALIASES as VLLM_KV
from engine.kv.sglang import SGLANG_ALIASES
from engine.launch.known_issues import Where, applies
from engine.launch.known_issues import known_issues as all_known_issues
from engine.launch.layout import divisors, split_problem, stage_share
from engine.launch.memory import Split
from engine.launch.plan import LaunchPlan
from engine.launch.recipes import base_flags_for, checkpoints_of, is_base_checkpoint
from engine.lint import rules_hardware
from engine.lint.command import shown, token_count
from engine.lint.context import Ctx
from engine.lint.data import lint_rules, same_parser
from engine.lint.parse import Arg
from engine.lint.report import Edit
from engine.present.words import say
from engine.rules import engine_rules
from engine.scenario import MAX_GPUS_PER_NODE, make_scenario
from engine.software.report import SoftwareReport, software_report
from engine.software.tables import engine_version, reasoning_parsers, tool_call_parsers
from engine.study import study

GIB = 1 << 30


def model_note(ctx: Ctx) -> None:
    if ctx.choice.note is not None:
        code, message, fix = ctx.choice.note
        ctx.add(code, message, fix, ctx.written("model"))


def gpu_count(ctx: Ctx) -> None:
    world = ctx.settings.world
    if ctx.gpus is not None and world > ctx.gpus:
        ctx.add(
            "parallel-exceeds-gpus",
            f"The command's layout needs {world} GPUs ("
            + (
                "TP × PP × DP"
                if adapter(ctx.engine).dp_is_attention_dp_for_moe
                else "TP × PP × DP replicas"
            )
            + f" = {ctx.settings.tp} × {ctx.settings.pp} × "
            f"{world // max(ctx.settings.tp * ctx.settings.pp, 1)}), but {ctx.gpus} are available.",
            f"Lower the parallel sizes to fit {ctx.gpus} GPUs, or add GPUs / nodes.",
            ctx.written("tp"),
            (ctx.set_value("tp", str(best)),) if (best := tp_choice(ctx)) is not None else (),
        )


def layout(ctx: Ctx) -> None:
    st = ctx.facts
    if st is None:
        return
    lay = ctx.settings.layout(st.family.moe)
    tp = lay["tp"]
    heads = st.config.num_attention_heads
    written = ctx.written("tp")
    if heads % tp:
        divisors = [d for d in range(1, min(heads, 64) + 1) if heads % d == 0]
        best = tp_choice(ctx)
        pick = (
            f"`{ctx.flag('tp')} {best}` is the nearest that also holds the weights on the GPUs "
            "given; "
            if best is not None
            else ""
        )
        ctx.add(
            "tp-heads",
            f"Attention TP {tp} does not divide the model's {heads} attention heads; the engine "
            "splits heads evenly over TP ranks and refuses to start.",
            f"{pick}TP sizes that divide {heads}: {', '.join(map(str, divisors))}.",
            written,
            (ctx.set_value("tp", str(best)),) if best is not None else (),
        )
        return
    split = Split(tp, lay["dp"], lay["pp"], bool(lay["ep"]))
    problem = split_problem(st.config, st.architecture, st.family, split)
    if problem is not None:
        ctx.add(
            "layout-invalid",
            f"The command's layout cannot split this model: {say(problem)}; the engine refuses to "
            "start.",
            "Pick parallel sizes that divide the model evenly (see the Flags page's layouts).",
            written,
        )


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


def _describe(ctx: Ctx) -> str:
    st = ctx.study
    return st.layout.describe() if st is not None else "the command's layout"


def fit(ctx: Ctx) -> None:
    """Weights and one request at the command's context against the usable memory per GPU.
    Where the answer turns on the engine's own overhead (an estimate), it is an info: only a
    start-up log can tell."""
    st = ctx.study
    if st is None or ctx.gpu is None:
        return
    pick = st.search.pick
    lay = _describe(ctx)
    gpu = f"{st.scenario.total_gpus} × {st.gpu.key}"
    usable, weights = pick.usable_per_gpu, pick.weights_per_gpu
    overhead = pick.reserve.total if pick.reserve is not None else 0
    share = (
        f"{usable / GIB:,.1f} GiB {ctx.name} may use ({pick.fraction:g} of "
        f"{pick.memory_per_gpu / GIB:,.1f} GiB)"
    )
    if weights > usable:
        best = tp_choice(ctx)
        options = _fit_options(ctx)
        if best is not None:
            options = f"`{ctx.flag('tp')} {best}` holds the weights on the GPUs given. " + options
        ctx.add(
            "does-not-fit",
            f"The weights do not fit: at {lay} on {gpu} each GPU holds {weights / GIB:,.1f} GiB "
            f"of weights, more than the {share}; the engine stops with out of memory while "
            "loading.",
            options,
            edits=(ctx.set_value("tp", str(best)),) if best is not None else (),
        )
        return
    if not pick.weights_fit:
        ctx.add(
            "memory-tight",
            f"At {lay} on {gpu} the weights ({weights / GIB:,.1f} GiB per GPU) leave "
            f"{(usable - weights) / GIB:,.1f} GiB of the {share}, less than the engine's own "
            f"overhead (estimated {overhead / GIB:,.1f} GiB): the KV cache may get nothing.",
            "Check the start-up log's KV cache size; add GPUs or raise the memory fraction if it "
            "fails.",
        )
        return
    _context_fit(ctx, usable - weights, overhead)


def _fit_options(ctx: Ctx) -> str:
    """Ways out: the fewest GPUs of this kind that hold the weights and one request, and the
    official smaller checkpoints this GPU can run."""
    st, base = ctx.study, ctx.base
    assert st is not None
    options: list[str] = []
    if base is not None and base.min_gpus is not None:
        options.append(
            f"{base.min_gpus} × {st.gpu.key} hold the weights and one "
            f"{st.context_asked:,}-token request"
        )
    fp4 = st.gpu.fp4
    names = {st.model.name, ctx.settings.model_id or ""}
    siblings = [
        f"{repo} ({kind.upper()})"
        for name in names
        if name
        for kind, repo, _ in checkpoints_of(name)
        if fp4 or kind != "nvfp4"
    ]
    if siblings:
        options.append("a smaller official checkpoint: " + ", ".join(dict.fromkeys(siblings)))
    if not options:
        return "Add GPUs (a larger TP) or use a smaller checkpoint."
    return "Options: " + "; ".join(options) + "."


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
    asked = st.context_asked
    need = int(st.kv.bytes_per_request(asked, padded=True) * stage_share(st.config, st.layout.pp))
    largest = pick.context
    flag = ctx.written("context")
    where = f"at {_describe(ctx)} on {st.scenario.total_gpus} × {st.gpu.key}"
    numbers = (
        f"one {asked:,}-token request needs {need / GIB:,.1f} GiB of KV cache per GPU; "
        f"{room_max / GIB:,.1f} GiB are left after the weights ({pick.usable_per_gpu / GIB:,.1f} "
        f"GiB usable − {pick.weights_per_gpu / GIB:,.1f} GiB weights)"
    )
    if need <= room_max:
        ctx.add(
            "memory-tight",
            f"The context is tight {where}: {numbers}, and the engine's own overhead (estimated "
            f"{overhead / GIB:,.1f} GiB) decides whether it fits.",
            f"Check the start-up log; `{ctx.flag('context')} {largest}` fits with that estimate.",
            edits=(ctx.set_value("context", str(largest)),),
        )
        return
    effect = (
        f"{ctx.name} refuses to start"
        if adapter(ctx.engine).context_beyond_pool_refused
        else f"{ctx.name} starts and refuses requests longer than about {largest:,} tokens"
    )
    if s.context is not None:
        ctx.add(
            "context-does-not-fit",
            f"`{flag} {shown(ctx.parsed.value(ctx.flag('context')) or '')}` "
            f"({s.context:,} tokens) does not fit {where}: {numbers}; {effect}.",
            f"Use `{flag} {largest}` (the longest that fits), or add GPUs.",
            flag,
            (ctx.set_value("context", str(largest)),),
        )
    else:
        ctx.add(
            "context-default-does-not-fit",
            f"No `{flag}`: the engine takes the model's own limit of {asked:,} tokens "
            f"({st.limit.formula}), which does not fit {where}: {numbers}; {effect}.",
            f"Add `{ctx.flag('context')} {largest}` (the longest that fits), or add GPUs.",
            None,
            (ctx.set_value("context", str(largest)),),
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
    fits = ""
    if pick is not None and not pick.context_fits and 0 < pick.context < limit:
        target = pick.context  # the model's own limit does not fit either
        fits = f" ({target:,} is the longest that also fits these GPUs)"
    flag = ctx.written("context")
    written = shown(ctx.parsed.value(ctx.flag("context")) or "")
    override = getattr(lint_rules().long_context_overrides, ctx.engine)
    forced = ctx.inv.env.get(override, "").strip().lower() in ("1", "true", "yes")
    beyond = (
        f"`{flag} {written}` ({s.context:,} tokens) is beyond the model's limit of {limit:,} "
        f"tokens ({st.limit.formula})"
    )
    if forced:
        ctx.add(
            "context-beyond-model-forced",
            f"{beyond}; {override}=1 lets the engine start, but positions beyond what the model "
            "was trained on give degraded or wrong output.",
            f"Use `{flag} {target}`{fits}, or a RoPE scaling override made for the longer context.",
            flag,
            (ctx.set_value("context", str(target)),),
        )
        return
    ctx.add(
        "context-beyond-model",
        f"{beyond}; the engine refuses to start.",
        f"Use `{flag} {target}`{fits} or less, or a checkpoint / RoPE scaling made for the "
        "longer context.",
        flag,
        (ctx.set_value("context", str(target)),),
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
        f"Experts are sliced over {group} GPUs (both engines' default without expert "
        f"parallelism): every GPU computes a slice of each selected expert. Expert parallelism "
        f"keeps the {fam.num_experts} experts whole and sends tokens to them instead, usually "
        "faster at large batches and not always at small ones.",
        f"To try it, add `{add}`.",
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
    tool = ctx.arg("--tool-call-parser")
    eng = adapter(ctx.engine)
    switch = eng.flag("auto_tool_choice") if eng.has("auto_tool_choice") else None
    auto = ctx.parsed.on(switch) if switch is not None else True
    sw = _software(ctx)
    expected_tool = sw.tool_call_parser if sw is not None else None
    if switch is not None and not ctx.config_file:
        if ctx.parsed.on("--enable-auto-tool-choice") and tool is None:
            name = expected_tool or "NAME"
            ctx.add(
                "auto-tool-choice-without-parser",
                "`--enable-auto-tool-choice` without `--tool-call-parser`: vLLM refuses to "
                "start (it needs to know how this model writes a tool call).",
                f"Add `--tool-call-parser {name}`.",
                "--enable-auto-tool-choice",
                (Edit("add", "--tool-call-parser", expected_tool),) if expected_tool else (),
            )
        if tool is not None and not auto:
            ctx.add(
                "parser-without-auto-tool-choice",
                "`--tool-call-parser` without `--enable-auto-tool-choice`: requests with "
                "tool_choice='auto' (the default of most agent frameworks) are refused, so the "
                "model never calls tools on its own.",
                "Add `--enable-auto-tool-choice`.",
                tool.written,
                (Edit("add", "--enable-auto-tool-choice"),),
            )
    if sw is None or sw.family is None:
        return
    st = ctx.facts
    assert st is not None
    own = ctx.choice.own
    stand_in = "" if own else f" (read from {st.model.name}'s family, which stands in here)"
    for kind, flag, expected in (
        ("tool", "--tool-call-parser", sw.tool_call_parser),
        ("reasoning", "--reasoning-parser", sw.reasoning_parser),
    ):
        given = ctx.arg(flag)
        if given is None or given.value is None:
            if expected is None or _not_needed(ctx, kind, sw.architecture):
                continue
            if kind == "tool" and _base_checkpoint(ctx, sw):
                continue
            symptom = (
                "if clients send tools, tool calls come back as plain text"
                if kind == "tool"
                else "the thinking text stays in the answer instead of reasoning_content"
            )
            extra = (
                " --enable-auto-tool-choice"
                if kind == "tool" and switch is not None and not auto
                else ""
            )
            ctx.add(
                f"missing-{kind}-parser",
                f"No `{flag}`: {symptom}. {sw.family} uses `{expected}` on {ctx.label}{stand_in}.",
                f"Add `{flag} {expected}{extra}` when you serve "
                + ("tool calls." if kind == "tool" else "thinking output."),
                edits=(Edit("add", flag, expected),),
            )
            continue
        value = given.value
        if expected is None:
            forcing = lint_rules().forces_reasoning(ctx.engine, value)
            if kind == "reasoning" and forcing and not _not_needed(ctx, kind, sw.architecture):
                ctx.add(
                    "reasoning-parser-unneeded",
                    f"`{flag} {shown(value)}` on {sw.family}, which does not think{stand_in}: "
                    "the parser may file the whole answer as reasoning_content and leave the "
                    "content empty.",
                    f"Drop `{flag}` unless this checkpoint is a reasoning variant.",
                    given.written,
                    (Edit("drop", given.written, index=given.index),),
                    severity=None if own else "info",
                )
            continue
        if same_parser(ctx.engine, kind, value, expected):  # type: ignore[arg-type]
            continue
        others = sw.tool_call_alternatives if kind == "tool" else sw.reasoning_alternatives
        if value in others:  # another checkpoint of this architecture; its template would say
            continue
        if value in _registry(ctx, kind):  # else bad-choice already says so
            ctx.add(
                f"{kind}-parser-mismatch",
                f"`{flag} {shown(value)}` is not the parser {sw.family} uses on {ctx.label} "
                f"(`{expected}`){stand_in}; with another family's parser "
                + (
                    "tool calls come back as plain text."
                    if kind == "tool"
                    else "the thinking is not separated from the answer."
                ),
                f"Use `{flag} {expected}`.",
                given.written,
                (Edit("change", given.written, expected, given.index),),
                severity=None if own else "info",
            )


def _registry(ctx: Ctx, kind: str) -> frozenset[str]:
    return tool_call_parsers(ctx.engine) if kind == "tool" else reasoning_parsers(ctx.engine)


def _not_needed(ctx: Ctx, kind: str, architecture: str) -> bool:
    return any(
        r.engine == ctx.engine and r.architecture == architecture and r.kind == kind
        for r in lint_rules().parsers_not_needed
    )


def _left_reason(plan: LaunchPlan | None, flag: str) -> str | None:
    if plan is None:
        return None
    return next((x.reason for x in plan.left_to_engine if x.flag == flag), None)


def _plan_sets(plan: LaunchPlan | None, flag: str) -> bool:
    return plan is not None and any(f.flag == flag for f in plan.flags)


def _kv_name(value: str) -> str:
    """A KV dtype spelling as the dtype it stores (fp8 is fp8_e4m3, bf16 is bfloat16)."""
    key = value.strip().lower()
    return SGLANG_ALIASES.get(key, VLLM_KV.get(key, key))


def _recipe_sets(ctx: Ctx, flag: str, value: str | None) -> bool:
    """The official recipe for this model, engine, GPU and checkpoint sets ``flag value``."""
    base = ctx.base
    if base is None:
        return False
    sw = base.engines[ctx.engine].software
    return any(
        rf.flag == flag and (rf.value == value or value is None)
        for rf in base_flags_for(base.config, ctx.engine, base.gpu, sw)
    )


def _dsa_kv_choice(ctx: Ctx, kv: Arg, auto: str) -> None:
    """A KV dtype the command pins on a DSA model: what the engine would pick itself again
    (pinned, it stops following the GPU), or a capacity choice the recipes make too (GLM-5.2's
    fp8 on Hopper, the DeepSeek-V3.2 guide's fp8 default): explained, not warned about, since
    the engine stores what was asked."""
    assert kv.value is not None
    gpu = ctx.gpu.key if ctx.gpu is not None else "this GPU"
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
                f"`{kv.written} {shown(kv.value)}` on a DSA model is what {ctx.name} picks on "
                f"{gpu} anyway (stored as {asked.stored}), but pinned it no longer follows the "
                "GPU generation.",
                "Keep it if you mean to; the engine's own pick follows the GPU.",
                kv.written,
            )
        return
    ctx.add(
        "kv-dtype-capacity",
        f"`{kv.written} {shown(kv.value)}` on a DSA model: a capacity choice. {ctx.name} "
        f"stores it as {asked.stored} ({asked.bytes}-byte elements) where on its own it would "
        f"store {auto} on {gpu}; 8-bit KV holds about twice the tokens in the same memory.",
        "Keep it for capacity; leave the KV dtype on auto for the engine's per-GPU pick.",
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
            reason = _left_reason(plan, "--attention-backend") or (
                "DSA: prefill and decode use different sparse kernels, picked per phase"
            )
            ctx.add(
                "engine-should-choose",
                f"`{arg.written} {shown(arg.value or '')}` on a DSA model pins one kernel path. "
                f"{reason}.",
                f"Drop `{arg.written}` unless a kernel bug forces it (then note why).",
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
        if hybrid_vllm:
            why = _left_reason(plan, "--block-size") or (
                "hybrid: vLLM aligns the attention block to the linear-attention state page"
            )
        else:
            why = (
                f"sparse DSA kernels need their own page size (vLLM "
                f"{engine_version('vllm')} forces {engine_rules().default_block_size.mla})"
            )
        ctx.add(
            "engine-should-choose",
            f"`{block.written} {shown(block.value or '')}` on a {fam} model: {why}.",
            f"Drop `{block.written}`.",
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
        quoted = f"{issue.source}: '{issue.quote}'"
        if issue.avoid:
            ctx.add(
                "known-issue",
                f"{ctx.name} at this layout: {issue.symptom} ({quoted}).",
                "Pick a layout without that combination (the Flags page's search leaves it out).",
                ctx.written("pp"),
            )
        fix = issue.fix
        if fix is not None and not (
            fix.prefill_chunk is not None and chunk is not None and chunk <= fix.prefill_chunk
        ):
            edits: list[Edit] = []
            wanted: list[str] = []
            if fix.memory_fraction is not None:
                edits.append(ctx.set_value("memory_fraction", f"{fix.memory_fraction:g}"))
                wanted.append(f"`{ctx.flag('memory_fraction')} {fix.memory_fraction:g}`")
            if fix.prefill_chunk is not None:
                edits.append(ctx.set_value("prefill_chunk", str(fix.prefill_chunk)))
                wanted.append(f"`{ctx.flag('prefill_chunk')} {fix.prefill_chunk}`")
            ctx.add(
                "known-issue",
                f"A known issue of this model on {gpu.key} at this layout: {issue.symptom} "
                f"({quoted}).",
                f"Add {' and/or '.join(wanted)}, as the recipe does.",
                None,
                tuple(edits),
            )
        limit = issue.limit
        fraction = s.memory_fraction
        if limit is not None and fraction is not None and fraction >= limit.max_memory_fraction:
            arg = ctx.arg(ctx.flag("memory_fraction"))
            ctx.add(
                "known-issue",
                f"`{ctx.written('memory_fraction')} {fraction:g}` here: {issue.symptom} "
                f"({quoted}).",
                f"Stay below {limit.max_memory_fraction:g}.",
                arg.written if arg is not None else None,
            )
