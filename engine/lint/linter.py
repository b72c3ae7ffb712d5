"""``lint_command``: read the command, build the scenario it describes, study it, run the rules,
and hand back the report with the corrected command."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable
from typing import Any

from engine import errors as E
from engine.engines import EngineAdapter, adapter
from engine.errors import InputError
from engine.hardware.gpus import Gpu, lookup_gpu
from engine.kv.dtype import SHARED_KV_DTYPES
from engine.lint import codes as C
from engine.lint import rules_flags, rules_hardware, rules_model, rules_recipe, rules_shell
from engine.lint.arguments import parse
from engine.lint.command_scenario import read_settings
from engine.lint.correct import apply_edits, shell_text
from engine.lint.explain import explanations, left_to_engine
from engine.lint.extract import Invocation, extract
from engine.lint.findings import (
    Finding,
    LintReport,
    finding,
    ordered,
    render_yaml,
)
from engine.lint.lint_context import Ctx
from engine.lint.model import HubPolicy, ModelChoice, resolve, scenario_fields, with_overrides
from engine.lint.rule_data import lint_rules
from engine.lint.shell import Word, shape
from engine.model.loader import LoadedModel, load_model
from engine.scenario import DEFAULT_GPU, MAX_GPUS_PER_NODE, MAX_NODES, make_scenario
from engine.study import study

Rule = Callable[[Ctx], None]

RULES: tuple[Rule, ...] = (
    rules_shell.notes,
    rules_shell.inferred,
    rules_shell.variables,
    rules_shell.config_file,
    rules_flags.spelling,
    rules_flags.values,
    rules_flags.duplicates,
    rules_flags.model_present,
    rules_flags.memory_fraction,
    rules_model.model_note,
    rules_model.gpu_count,
    rules_model.layout,
    rules_model.context_limit,
    rules_model.fit,
    rules_model.experts,
    rules_model.parsers,
    rules_model.engine_choices,
    rules_recipe.recipe_required,
    rules_model.known_issues,
    rules_hardware.gates,
    rules_hardware.nvfp4,
    rules_hardware.kv_backends,
    rules_shell.hardware,
)

MAX_GPUS = MAX_GPUS_PER_NODE * MAX_NODES


def lint_command(
    text: str,
    model: LoadedModel | str | None = None,
    gpu: Gpu | str | None = None,
    gpus: int | None = None,
    *,
    hub: HubPolicy = False,
) -> LintReport:
    """Lint an inherited launch command.

    ``model``: the model selected in the app or given with ``--model`` (a LoadedModel or a
    source string); the command's own model wins when its config can be loaded. ``gpu`` / ``gpus``:
    the hardware (``gpus`` in all). ``hub``: the Hugging Face hub may be asked for the command's
    config.json (its local cache always is; a callable is asked before each fetch). Raises
    ``InputError`` naming the field when the input is not a launch command or the hardware is not
    one.

    The corrected command is each finding's fix applied and the result linted again, until it
    has no error or no fix changes it any more (``corrected_clean`` says which)."""
    if gpus is not None and (
        isinstance(gpus, bool) or not isinstance(gpus, int) or not 1 <= gpus <= MAX_GPUS
    ):
        raise InputError("gpus", E.RANGE(low=1, high=MAX_GPUS, got=E.got(gpus)))
    gpu_row = lookup_gpu(gpu) if isinstance(gpu, str) else gpu
    given = load_model(model) if isinstance(model, str) else model
    inv = extract(text)
    readings = inv.readings(int(lint_rules().thresholds.max_expansions.value))
    ctxs = [_lint(inv, values, given, gpu_row, gpus, hub) for values in readings]
    ctx = min(ctxs, key=lambda c: _weight(c.findings))
    return _report(ctx, *_correct(ctx, given, gpu_row, gpus, hub))


# A fix can make another one possible (a TP that divides the heads, then a context that fits at
# that TP); each round applies every fix at once, so a few rounds reach what any fix can.
MAX_ROUNDS = 4


def _weight(findings: tuple[Finding, ...] | list[Finding]) -> tuple[int, int]:
    return (
        sum(1 for f in findings if f.severity == "error"),
        sum(1 for f in findings if f.severity == "warning"),
    )


def _state(inv: Invocation) -> tuple[object, ...]:
    return (
        tuple(shape(w) for w in inv.args),
        tuple(shape(w) for w in inv.detached),
        inv.notes,
    )


def _correct(
    ctx: Ctx, given: LoadedModel | None, gpu: Gpu | None, gpus: int | None, hub: HubPolicy
) -> tuple[Ctx, str, list[str], tuple[Finding, ...]]:
    """Apply the error and warning fixes, lint the result again with the same variable values,
    and repeat until no error remains or the fixes change nothing. The last context, its
    command as text and argv, and what remains (its errors and warnings)."""
    current = ctx
    seen = {_state(ctx.inv)}
    for _ in range(MAX_ROUNDS):
        if not current.findings_by("error") and not _has_edits(current):
            break
        inv = _fixed(current)
        if _state(inv) in seen:
            break  # no fix makes progress
        seen.add(_state(inv))
        # the same model id reads the same config: no second hub lookup per round
        known = (current.settings.model_id, current.choice)
        current = _lint(inv, current.reading, given, gpu, gpus, hub, known)
        if not current.findings_by("error") and not _has_edits(current):
            break
    remaining = tuple(f for f in ordered(current.findings) if f.severity != "info")
    text, argv = _rendered(current.inv)
    if current.inv.not_run is not None:  # nothing the pasted script never runs becomes live
        why = finding(
            current.engine, "not-run", C.NOT_RUN(why=current.inv.not_run), C.NOT_RUN_FIX()
        )
        return current, "", argv, (why, *remaining)
    if text is None:
        unsafe = finding(
            current.engine, "not-rewritable", C.NOT_REWRITABLE(), C.NOT_REWRITABLE_FIX()
        )
        return current, "", argv, (unsafe, *remaining)
    return current, text, argv, remaining


def _has_edits(ctx: Ctx) -> bool:
    return any(f.edits for f in ctx.findings if f.severity != "info")


def _fixed(ctx: Ctx) -> Invocation:
    """The invocation with the fixes of the errors and warnings applied (no notes left: a
    detached line is attached, a doubled subcommand is already gone from the arguments)."""
    fixes = [e for f in ordered(ctx.findings) if f.severity != "info" for e in f.edits]
    edits = list(dict.fromkeys(fixes))  # two findings may propose the same layout: apply it once
    keep = rules_recipe.protected(ctx)  # a recipe's mandatory flag is never removed
    eng = adapter(ctx.engine)
    edits = [e for e in edits if not (e.kind == "drop" and _canonical(eng, e.flag) in keep)]
    args = apply_edits(ctx.inv.args, dict(ctx.parsed.spans()), edits, ctx.inv.detached)
    return dataclasses.replace(ctx.inv, args=tuple(args), detached=(), notes=())


def _canonical(eng: EngineAdapter, written: str) -> str:
    info = eng.lookup(written)
    return info.flag if info is not None else written


def _rendered(inv: Invocation) -> tuple[str | None, list[str]]:
    """The command as the user would paste it back, and its argv (references as written)."""
    argv = [w.text for w in inv.args]
    if inv.parsed_from == "yaml":
        launcher = list(inv.yaml_launcher)
        return render_yaml(launcher, argv), launcher + argv
    prefix: tuple[Word, ...] = inv.prefix_words
    launcher_words: tuple[Word, ...] = inv.launcher_words
    text = shell_text(prefix, launcher_words, inv.args)
    return text, [w.text for w in (*prefix, *launcher_words)] + argv


def _lint(
    inv: Invocation,
    values: dict[str, str],
    given: LoadedModel | None,
    gpu: Gpu | None,
    gpus: int | None,
    hub: HubPolicy,
    known: tuple[str | None, ModelChoice] | None = None,
) -> Ctx:
    engine = inv.engine
    args = tuple(w.expand(values) for w in inv.args)
    parsed = parse(engine, args)
    settings, problems = read_settings(engine, parsed)
    model_word_unresolved = settings.model_index is not None and "$" in args[settings.model_index]
    if known is not None and known[0] == settings.model_id:
        choice = known[1]
    else:
        choice = resolve(settings.model_id, model_word_unresolved, given, hub)
    ctx = Ctx(engine, inv, args, parsed, settings, problems, gpu, gpus, choice, reading=values)
    _study(ctx)
    for rule in RULES:
        rule(ctx)
    ctx.close()
    return ctx


def _report(
    ctx: Ctx, last: Ctx, corrected: str, argv: list[str], remaining: tuple[Finding, ...]
) -> LintReport:
    inv, settings, choice = ctx.inv, ctx.settings, ctx.choice
    return LintReport(
        engine=ctx.engine,
        engine_version=adapter(ctx.engine).version,
        launcher=inv.launcher_text,
        model=settings.model_id,
        linted_against=choice.loaded.name if choice.loaded is not None else None,
        gpu=ctx.gpu.key if ctx.gpu is not None else None,
        gpus=settings.world,
        parsed_from=inv.parsed_from,
        findings=ordered(ctx.findings),
        explanations=explanations(ctx),
        left_to_engine=left_to_engine(ctx),
        corrected=corrected,
        corrected_argv=tuple(argv),
        corrected_clean=bool(corrected) and not any(f.severity == "error" for f in remaining),
        remaining=remaining,
        variables=dict(ctx.reading),
    )


def _study(ctx: Ctx) -> None:
    """The Study of the command's scenario (its layout pinned), and of the same model and GPUs
    with the layout left to the search (model facts, suggestions, the engine's own picks)."""
    loaded = ctx.choice.loaded
    if loaded is None:
        return
    s = ctx.settings
    with contextlib.suppress(InputError):  # overrides the config rejects: study it without
        loaded = with_overrides(loaded, s.overrides)
    gpu = ctx.gpu or lookup_gpu(DEFAULT_GPU)
    nodes = s.nodes if s.world % s.nodes == 0 else 1
    per_node = s.world // nodes
    hardware_ok = 1 <= per_node <= MAX_GPUS_PER_NODE and nodes <= MAX_NODES
    users = 1  # the command's own load is unknown; its drafts are what it sets
    fraction = s.memory_fraction if s.memory_fraction and 0.05 <= s.memory_fraction <= 1 else None
    kv = (s.kv_dtype or "auto").strip().lower()
    # the command's --max-num-seqs, else the engine's default: the plan may lower it to free
    # vLLM's sampler reserve, but a command that does not set it runs with the default
    seqs = s.max_num_seqs
    if seqs is None and adapter(ctx.engine).sampler_reserve:
        seqs = adapter(ctx.engine).default_max_num_seqs(gpu)
    common: dict[str, Any] = scenario_fields(loaded) | {
        "max_num_seqs": seqs,
        "gpu": gpu.key,
        "engine": ctx.engine,
        "users": users,
        "speculative": bool(s.speculative),
        "context": s.context,
        "memory_fraction": fraction,
        "gpus_per_node": per_node if hardware_ok else 8,
        "nodes": nodes if hardware_ok else 1,
    }
    try:
        ctx.base = study(make_scenario(**common, kv_dtype="auto"))
    except InputError:
        return  # the scenario cannot be studied: the command's own findings stand alone
    fam = ctx.base.family
    pinned = (
        common
        | s.layout(fam.moe)
        | {
            "kv_dtype": kv if kv in SHARED_KV_DTYPES else "auto",  # others: studied as auto
            "images": fam.multimodal and not s.language_model_only,
        }
    )
    # the fixes read the command's scenario (on the GPUs given) even when its own layout is
    # too large to study
    ctx.scenario_fields = pinned
    if not hardware_ok:
        return
    # where its own layout cannot be studied, the fixes read the scenario fields above
    with contextlib.suppress(InputError):
        ctx.study = study(make_scenario(**pinned))
