"""Rules on the command line itself, against the pinned flag tables: spellings the engine does
not have (with this version's spelling when it renamed one, or the other engine's when the flag
was copied across), values outside the choices, values that are not numbers the engine can use,
repeated flags, a missing model, the memory fraction's range."""

from __future__ import annotations

import difflib
from functools import lru_cache

from engine.engines import adapter
from engine.engines import other as other_engine
from engine.lint import rules_hardware
from engine.lint.command import shown
from engine.lint.context import Ctx
from engine.lint.data import lint_rules
from engine.lint.parse import prefixed
from engine.lint.report import Edit
from engine.software.tables import Engine, flag_table


def _short_list(values: list[str], limit: int = 12) -> str:
    head = ", ".join(values[:limit])
    return head + (f", … ({len(values)} in all)" if len(values) > limit else "")


def spelling(ctx: Ctx) -> None:
    rules = lint_rules()
    table = flag_table(ctx.engine)
    other: Engine = other_engine(ctx.engine)
    other_table = flag_table(other)
    ambiguous = {id(arg) for arg, _ in ctx.parsed.ambiguous}
    for arg, candidates in ctx.parsed.ambiguous:
        ctx.add(
            "ambiguous-flag",
            f"`{arg.written}` is a prefix of several {ctx.label} flags "
            f"({', '.join(candidates[:5])}); argparse refuses to guess.",
            f"Spell the flag out, e.g. `{candidates[0]}`.",
            arg.written,
            (Edit("rename", candidates[0], index=arg.index),),
        )
    for arg in ctx.parsed.args:
        if arg.info is not None:
            if arg.abbreviation_of is not None:
                ctx.add(
                    "abbreviated-flag",
                    f"`{arg.written}` is argparse's unique-prefix shorthand for "
                    f"`{arg.abbreviation_of}`; it works in {ctx.label} but breaks when a new flag "
                    "with the same prefix appears.",
                    f"Write `{arg.abbreviation_of}`.",
                    arg.written,
                    (Edit("rename", arg.abbreviation_of, index=arg.index),),
                )
            continue
        if id(arg) in ambiguous:
            continue
        name = arg.written
        # vLLM reads --max_model_len as --max-model-len, so old spellings match either way
        dashed = adapter(ctx.engine).canonical_spelling(name)
        renamed = rules.renamed(ctx.engine, dashed)
        if renamed is not None:
            if renamed.use is not None:
                edit = _equivalent_edit(ctx, arg.index, renamed.use, arg.value)
                value = "" if edit.value is None else f" {edit.value}"
                ctx.add(
                    "unknown-flag",
                    f"`{name}` is not a flag of {ctx.label} (older releases and some docs spell "
                    f"it so); the engine stops with 'unrecognized arguments'. "
                    f"{renamed.source}",
                    f"Write `{renamed.use}{value}`.",
                    name,
                    (edit,),
                )
            else:
                ctx.add(
                    "unknown-flag",
                    f"`{name}` was removed and is not a flag of {ctx.label}; the engine stops "
                    f"with 'unrecognized arguments'. {renamed.source}",
                    f"Drop `{name}`" + ("" if arg.value is None else f" {shown(arg.value)}") + ".",
                    name,
                    (Edit("drop", name, index=arg.index),),
                )
            continue
        equivalent = rules.equivalent(ctx.engine, dashed)
        if name in other_table or equivalent is not None:
            if equivalent is not None:
                edit = _equivalent_edit(ctx, arg.index, equivalent, arg.value)
                value = "" if edit.value is None else f" {edit.value}"
                fix = f"{ctx.name} spells this `{equivalent}{value}`" + (
                    ", which the command sets already: drop this one."
                    if edit.kind == "drop"
                    else "."
                )
            else:
                fix = f"Drop it, or find the {ctx.name} setting that does this."
                edit = Edit("drop", name, index=arg.index)
            owner = adapter(other).label
            known = name in other_table
            ctx.add(
                "wrong-engine-flag" if known else "unknown-flag",
                f"`{name}` is "
                + (
                    f"a flag of {owner}, not of {ctx.label}"
                    if known
                    else f"not a flag of {ctx.label} (nor of {owner})"
                )
                + "; the engine stops with 'unrecognized arguments'.",
                fix,
                name,
                (edit,),
            )
            continue
        # a unique prefix first (`--tensor` for --tensor-parallel-size), then a near spelling
        owners = {table[k].flag for k in prefixed(ctx.engine, name)} if len(name) > 3 else set()
        close = sorted(owners) if len(owners) == 1 else _near(ctx.engine, name)
        ctx.add(
            "unknown-flag",
            f"`{shown(name, 60)}` is not a flag of {ctx.label}; the engine stops with "
            "'unrecognized arguments'.",
            f"Did you mean `{close[0]}`?" if close else f"Drop `{shown(name, 60)}`.",
            name,
            (
                Edit("rename", close[0], index=arg.index)
                if close
                else Edit("drop", name, index=arg.index),
            ),
        )


@lru_cache(maxsize=1024)
def _near(engine: Engine, name: str) -> list[str]:
    """The closest spelling in the engine's table (names past 100 characters are not flags)."""
    if len(name) > 100:
        return []
    return difflib.get_close_matches(name, list(flag_table(engine)), n=1, cutoff=0.75)


def _equivalent_edit(ctx: Ctx, index: int, use: str, value: str | None) -> Edit:
    info = flag_table(ctx.engine)[use]
    if info.flag in ctx.parsed.last:  # the command sets it already: keep that one
        return Edit("drop", use, index=index)
    if info.takes_value:
        if value is None:  # a switch in the other engine (--enable-expert-parallel -> --ep-size N)
            return Edit("change", use, str(ctx.settings.tp), index)
        return Edit("change", use, value, index)
    return Edit("change", use, None, index)


def values(ctx: Ctx) -> None:
    rules = lint_rules()
    for arg in ctx.parsed.args:
        info = arg.info
        if info is None:
            continue
        if arg.missing_value:
            ctx.add(
                "missing-value",
                f"`{arg.written}` needs a value and none follows.",
                f"Give `{arg.written} VALUE` or drop the flag.",
                arg.written,
                (Edit("drop", arg.written, index=arg.index),),
            )
            continue
        if arg.inline_value_on_switch:
            off = (arg.value or "").strip().lower() in ("false", "0", "no", "off")
            target = arg.written
            if off and not arg.negated and info.negations:
                target = info.negations[0]
            ctx.add(
                "value-on-switch",
                f"`{arg.written}={shown(arg.value or '')}`: `{arg.written}` is an on/off switch "
                "and argparse refuses a value ('ignored explicit argument').",
                f"Write `{target}` alone.",
                arg.written,
                (Edit("change", target, None, arg.index),),
            )
        if info.deprecated:
            replacement = rules.deprecated_use(ctx.engine, info.flag)
            help_text = info.help.strip()
            new = replacement.use if replacement is not None else None
            ctx.add(
                "deprecated-flag",
                f"`{arg.written}` is deprecated in {ctx.label} but still accepted"
                + (f" ({help_text})" if help_text and help_text != "Deprecated." else "")
                + ".",
                f"Use `{new}`." if new else "Move to its replacement when you next touch it.",
                arg.written,
            )
        if info.choices is None or arg.value is None or "." in arg.written:
            continue
        choices = [str(c) for c in info.choices]
        if arg.value in choices:
            continue
        close = difflib.get_close_matches(arg.value[:100], choices, n=1, cutoff=0.5)
        hint = f"Did you mean `{close[0]}`? " if close else ""
        if info.flag == "--dtype" and arg.value.lower().startswith(("fp8", "fp4", "nvfp4")):
            hint = (
                "--dtype is the 16/32-bit compute dtype; FP8 weights come from an FP8 "
                "checkpoint (or `--quantization fp8`). "
            )
            close = []
        edit = (
            Edit("change", arg.written, close[0], arg.index)
            if close
            else Edit("drop", arg.written, index=arg.index)
        )
        if info.flag == "--kv-cache-dtype" and close and rules_hardware.fp4_kv(ctx, close[0]):
            # the nearest spelling is an FP4 layout this GPU cannot store: ask for what it can
            edit = rules_hardware.kv_fallback(ctx, arg.written, arg.index)
            hint = f"{close[0]} needs FP4 hardware; " if close else ""
            close = [edit.value] if edit.value else []
            if close:
                hint += f"`{arg.written} {close[0]}` is the nearest this GPU stores. "
        code = "bad-choice" if info.choices_enforced else "unknown-choice"
        tail = (
            f"{ctx.label} accepts only {_short_list(choices)}."
            if info.choices_enforced
            else f"it is not one of {ctx.label}'s known values ({_short_list(choices)}) and only "
            "works if a plugin registers it."
        )
        ctx.add(
            code,
            f"`{arg.written} {shown(arg.value)}`: {tail}",
            (hint + ("Pick one of the listed values." if not close else "")).strip(),
            arg.written,
            (edit,),
        )
    for index, token, after in ctx.parsed.stray:
        where = f" after `{after}`" if after else ""
        ctx.add(
            "unexpected-argument",
            f"`{shown(token)}`{where} is not a flag and no flag takes it as a value; the engine "
            "stops with 'unrecognized arguments'.",
            f"Drop `{shown(token)}`, or put it after the flag it belongs to.",
            after,
            (Edit("drop", token, index=index),),
        )
    for problem in ctx.problems:
        arg = problem.arg
        ctx.add(
            "bad-value",
            f"`{arg.written} {shown(arg.value or '')}` is not a value {ctx.label} can use: it "
            f"expects {problem.expected}.",
            f"Give {problem.expected}, or drop the flag for the engine's default.",
            arg.written,
            (Edit("drop", arg.written, index=arg.index),),
        )


def duplicates(ctx: Ctx) -> None:
    seen: dict[str, list[int]] = {}
    args = ctx.parsed.args
    for k, arg in enumerate(args):
        # vLLM merges --speculative-config.method and --speculative-config.x into one config
        if arg.canonical is not None and "." not in arg.written:
            seen.setdefault(arg.canonical, []).append(k)
    for canonical, ks in seen.items():
        if len(ks) < 2:
            continue
        spellings = ", ".join(
            f"`{args[k].written}" + (f" {shown(v)}`" if (v := args[k].value) is not None else "`")
            for k in ks
        )
        last = args[ks[-1]]
        kept = canonical if last.value is None else f"{canonical} {shown(last.value)}"
        ctx.add(
            "duplicate-flag",
            f"`{canonical}` is given {len(ks)} times ({spellings}); argparse keeps the last one "
            f"(`{kept}`).",
            "Keep one, with the value you mean.",
            args[ks[0]].written,
            tuple(Edit("drop", args[k].written, index=args[k].index) for k in ks[:-1]),
        )


def model_present(ctx: Ctx) -> None:
    if ctx.settings.model_id is not None or ctx.config_file:
        return
    eng = adapter(ctx.engine)
    model_flag = eng.flag("model")
    flag = (
        f"`{' '.join(eng.program('MODEL'))}` (or `{model_flag}`)"
        if eng.model_positional
        else f"`{model_flag}`"
    )
    info = eng.lookup(model_flag)
    serves_default = info is not None and info.default is not None
    given = ctx.choice.loaded.name if ctx.choice.loaded is not None else None
    what = (
        f"{eng.label} then serves its default model, not {given}"
        if serves_default and given
        else f"{eng.label} then serves its default model"
        if serves_default
        else f"{eng.label} refuses to start"
    )
    ctx.add(
        "missing-model",
        f"No model is given: {what}.",
        f"Add {flag} with the checkpoint id or path.",
        edits=(Edit("add", ctx.flag("model"), given),) if given else (),
    )


def memory_fraction(ctx: Ctx) -> None:
    fraction = ctx.settings.memory_fraction
    arg = ctx.arg(ctx.flag("memory_fraction"))
    if fraction is None or arg is None:
        return
    thresholds = lint_rules().thresholds
    suggest = f"{thresholds.memory_fraction_suggest.value:g}"
    warn = thresholds.memory_fraction_warn.value
    if not 0 < fraction <= 1:
        ctx.add(
            "memory-fraction-range",
            f"`{arg.written} {shown(arg.value or '')}` is outside (0, 1]: it is a fraction of "
            "each GPU's memory.",
            f"Use a fraction such as `{arg.written} {suggest}`.",
            arg.written,
            (Edit("change", arg.written, suggest, arg.index),),
        )
    elif fraction > warn:
        what = (
            "the static pool (weights and KV cache); activations, CUDA graphs and NCCL buffers "
            "live in the rest"
            if not adapter(ctx.engine).fraction_covers_everything
            else "everything vLLM allocates; CUDA graphs, NCCL buffers and other processes need "
            "the rest"
        )
        ctx.add(
            "memory-fraction-high",
            f"`{arg.written} {arg.value}` leaves under {1 - warn:.0%} of each GPU outside "
            f"{what}: long prefills and CUDA-graph capture are where it runs out of memory.",
            f"Start at `{arg.written} {suggest}` and raise it while watching peak memory.",
            arg.written,
            (Edit("change", arg.written, suggest, arg.index),),
        )
