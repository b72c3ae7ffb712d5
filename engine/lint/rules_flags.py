"""Rules on the command line itself, against the pinned flag tables: spellings the engine does
not have (with this version's spelling when it renamed one, or the other engine's when the flag
was copied across), values outside the choices, values that are not numbers the engine can use,
repeated flags, a missing model, the memory fraction's range."""

from __future__ import annotations

import difflib
from functools import lru_cache

from engine.decision import Decision, Name, Param, Percent, Source
from engine.engines import Engine, adapter
from engine.engines import other as other_engine
from engine.lint import codes as C
from engine.lint import rules_hardware
from engine.lint.arguments import Arg, prefixed
from engine.lint.command_scenario import shown
from engine.lint.findings import Edit
from engine.lint.lint_context import Ctx
from engine.lint.rule_data import lint_rules


def _choices(code: str, flag: str, value: str, ctx: Ctx, choices: list[str]) -> Decision:
    """What the flag accepts: the first dozen choices, and how many there are when more."""
    limit = 12
    enforced = code == "bad-choice"
    params: dict[str, Param] = {
        "flag": Name(flag),
        "value": Name(shown(value)),
        "engine": ctx.engine_name,
        "choices": tuple(Name(c) for c in choices[:limit]),
    }
    if len(choices) > limit:
        more = C.BAD_CHOICE_MORE if enforced else C.UNKNOWN_CHOICE_MORE
        return more(**params, total=len(choices))
    return (C.BAD_CHOICE if enforced else C.UNKNOWN_CHOICE)(**params)


def spelling(ctx: Ctx) -> None:
    rules = lint_rules()
    table = adapter(ctx.engine).flags
    other: Engine = other_engine(ctx.engine)
    other_table = adapter(other).flags
    ambiguous = {id(arg) for arg, _ in ctx.parsed.ambiguous}
    for arg, candidates in ctx.parsed.ambiguous:
        ctx.add(
            "ambiguous-flag",
            C.AMBIGUOUS(
                flag=Name(arg.written),
                engine=ctx.engine_name,
                candidates=tuple(Name(c) for c in candidates[:5]),
            ),
            C.WRITE(words=Name(candidates[0])),
            arg.written,
            (Edit("rename", candidates[0], index=arg.index),),
        )
    for arg in ctx.parsed.args:
        if arg.info is not None:
            if arg.abbreviation_of is not None:
                ctx.add(
                    "abbreviated-flag",
                    C.ABBREVIATED(
                        flag=Name(arg.written),
                        full=Name(arg.abbreviation_of),
                        engine=ctx.engine_name,
                    ),
                    C.WRITE(words=Name(arg.abbreviation_of)),
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
                    C.RENAMED(
                        flag=Name(name), engine=ctx.engine_name, source=Source(renamed.source)
                    ),
                    C.WRITE(words=Name(f"{renamed.use}{value}")),
                    name,
                    (edit,),
                )
            else:
                ctx.add(
                    "unknown-flag",
                    C.REMOVED(
                        flag=Name(name), engine=ctx.engine_name, source=Source(renamed.source)
                    ),
                    C.DROP(
                        words=Name(name + ("" if arg.value is None else f" {shown(arg.value)}"))
                    ),
                    name,
                    (Edit("drop", name, index=arg.index),),
                )
            continue
        equivalent = rules.equivalent(ctx.engine, dashed)
        if name in other_table or equivalent is not None:
            fix: Decision
            if equivalent is not None:
                edit = _equivalent_edit(ctx, arg.index, equivalent, arg.value)
                value = "" if edit.value is None else f" {edit.value}"
                spelled = C.SPELLED_DROP if edit.kind == "drop" else C.SPELLED
                fix = spelled(engine=ctx.engine_short, words=Name(f"{equivalent}{value}"))
            else:
                fix = C.SPELLED_NONE(engine=ctx.engine_short)
                edit = Edit("drop", name, index=arg.index)
            owner = Name(adapter(other).label)
            known = name in other_table
            ctx.add(
                "wrong-engine-flag" if known else "unknown-flag",
                (C.WRONG_ENGINE if known else C.UNKNOWN_EITHER)(
                    flag=Name(name), engine=ctx.engine_name, owner=owner
                ),
                fix,
                name,
                (edit,),
            )
            continue
        # `--no-X` of an on/off pair the engine spells `--enable-Y` / `--disable-Y` means the
        # other spelling of the pair, never X itself (a near match would invert it); then a
        # unique prefix (`--tensor` for --tensor-parallel-size), then a near spelling
        owners = {table[k].flag for k in prefixed(ctx.engine, name)} if len(name) > 3 else set()
        opposite = _opposite(ctx.engine, name)
        close = (
            [opposite]
            if opposite is not None
            else sorted(owners)
            if len(owners) == 1
            else _near(ctx.engine, name)
        )
        ctx.add(
            "unknown-flag",
            C.UNKNOWN(flag=Name(shown(name, 60)), engine=ctx.engine_name),
            C.DID_YOU_MEAN(words=Name(close[0])) if close else C.DROP(words=Name(shown(name, 60))),
            name,
            (
                Edit("rename", close[0], index=arg.index)
                if close
                else Edit("drop", name, index=arg.index),
            ),
        )


def _opposite(engine: Engine, name: str) -> str | None:
    """``--no-enable-Y`` / ``--no-disable-Y``, which the engine does not accept, as the spelling
    it does accept for the same setting (``--disable-Y`` / ``--enable-Y``), or None."""
    if not name.startswith("--no-"):
        return None
    rest = name[len("--no-") :]
    for said, means in (("enable-", "--disable-"), ("disable-", "--enable-")):
        if rest.startswith(said):
            other = means + rest[len(said) :]
            info = adapter(engine).lookup(other)
            if info is not None and other in info.spellings:
                return other
    return None


@lru_cache(maxsize=1024)
def _near(engine: Engine, name: str) -> list[str]:
    """The closest spelling in the engine's table (names past 100 characters are not flags)."""
    if len(name) > 100:
        return []
    return difflib.get_close_matches(name, list(adapter(engine).flags), n=1, cutoff=0.75)


def _equivalent_edit(ctx: Ctx, index: int, use: str, value: str | None) -> Edit:
    info = adapter(ctx.engine).flags[use]
    if info.flag in ctx.parsed.last:  # the command sets it already: keep that one
        return Edit("drop", use, index=index)
    if info.takes_value:
        if value is None:  # a switch in the other engine (--enable-expert-parallel -> --ep-size N)
            return Edit("change", use, str(ctx.settings.tp), index)
        return Edit("change", use, value, index)
    return Edit("change", use, None, index)


def unset_value(ctx: Ctx, arg: Arg) -> bool:
    """The option's value is a shell variable the text does not set (``--max-model-len
    $MAX_MODEL_LEN``): the shell fills it in before the engine sees it, so the value cannot be
    checked here (the shell-variable note says so)."""
    i = arg.index + (1 if arg.span == 2 else 0)
    if i >= len(ctx.inv.args):
        return False
    return any(not v.resolvable or v.name not in ctx.reading for v in ctx.inv.args[i].variables)


def values(ctx: Ctx) -> None:
    rules = lint_rules()
    for arg in ctx.parsed.args:
        info = arg.info
        if info is None:
            continue
        if arg.missing_value:
            ctx.add(
                "missing-value",
                C.MISSING_VALUE(flag=Name(arg.written)),
                C.MISSING_VALUE_FIX(flag=Name(arg.written)),
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
                C.VALUE_ON_SWITCH(flag=Name(arg.written), value=Name(shown(arg.value or ""))),
                C.VALUE_ON_SWITCH_FIX(flag=Name(target)),
                arg.written,
                (Edit("change", target, None, arg.index),),
            )
        if info.deprecated:
            replacement = rules.deprecated_use(ctx.engine, info.flag)
            help_text = info.help.strip()
            new = replacement.use if replacement is not None else None
            flag, engine = Name(arg.written), ctx.engine_name
            ctx.add(
                "deprecated-flag",
                C.DEPRECATED(
                    flag=flag,
                    engine=engine,
                    help_source=Source(help_text if help_text != "Deprecated." else ""),
                ),
                C.USE(words=Name(new)) if new else C.DEPRECATED_FIX(),
                arg.written,
            )
        if info.choices is None or arg.value is None or "." in arg.written:
            continue
        if unset_value(ctx, arg):
            continue  # the shell fills it in; the shell-variable note says it was not checked
        choices = [str(c) for c in info.choices]
        if arg.value in choices:
            continue
        close = difflib.get_close_matches(arg.value[:100], choices, n=1, cutoff=0.5)
        fix: Decision = C.DID_YOU_MEAN(words=Name(close[0])) if close else C.PICK()
        if info.flag == "--dtype" and arg.value.lower().startswith(("fp8", "fp4", "nvfp4")):
            fix = C.CHOICE_DTYPE()
            close = []
        edit = (
            Edit("change", arg.written, close[0], arg.index)
            if close
            else Edit("drop", arg.written, index=arg.index)
        )
        if info.flag == "--kv-cache-dtype" and close and rules_hardware.fp4_kv(ctx, close[0]):
            # the nearest spelling is an FP4 layout this GPU cannot store: ask for what it can
            edit = rules_hardware.kv_fallback(ctx, arg.written, arg.index)
            fix = (
                C.CHOICE_FP4(value=Name(close[0]), words=Name(f"{arg.written} {edit.value}"))
                if edit.value
                else C.CHOICE_FP4_NONE(value=Name(close[0]))
            )
        plugin = rules.parser_plugin(ctx.engine, info.flag)
        path = ctx.parsed.value(plugin) if plugin is not None else None
        if info.choices_source == "registry" and plugin is not None and path:
            ctx.add(
                "parser-plugin-name",
                C.PLUGIN_NAME(
                    flag=Name(arg.written),
                    value=Name(shown(arg.value)),
                    engine=ctx.engine_name,
                    plugin=Name(plugin),
                    path=Name(shown(path, 40)),
                ),
                C.PLUGIN_NAME_FIX(value=Name(shown(arg.value))),
                arg.written,
            )
            continue
        code = "bad-choice" if info.choices_enforced else "unknown-choice"
        ctx.add(
            code,
            _choices(code, arg.written, arg.value, ctx, choices),
            fix,
            arg.written,
            (edit,),
        )
    for index, token, after in ctx.parsed.stray:
        word = Name(shown(token))
        ctx.add(
            "unexpected-argument",
            C.UNEXPECTED_AFTER(token=word, after=Name(after))
            if after
            else C.UNEXPECTED(token=word),
            C.UNEXPECTED_FIX(token=word),
            after,
            (Edit("drop", token, index=index),),
        )
    for problem in ctx.problems:
        arg = problem.arg
        if unset_value(ctx, arg):
            continue
        ctx.add(
            "bad-value",
            C.BAD_VALUE(
                flag=Name(arg.written),
                value=Name(shown(arg.value or "")),
                engine=ctx.engine_name,
                expected=problem.expected,
            ),
            C.BAD_VALUE_FIX(expected=problem.expected),
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
        spellings = tuple(
            Name(args[k].written + (f" {shown(v)}" if (v := args[k].value) is not None else ""))
            for k in ks
        )
        last = args[ks[-1]]
        kept = canonical if last.value is None else f"{canonical} {shown(last.value)}"
        ctx.add(
            "duplicate-flag",
            C.DUPLICATE(flag=Name(canonical), n=len(ks), spellings=spellings, kept=Name(kept)),
            C.DUPLICATE_FIX(),
            args[ks[0]].written,
            tuple(Edit("drop", args[k].written, index=args[k].index) for k in ks[:-1]),
        )


def model_present(ctx: Ctx) -> None:
    if ctx.settings.model_id is not None or ctx.config_file:
        return
    eng = adapter(ctx.engine)
    model_flag = eng.flag("model")
    fix = (
        C.MISSING_MODEL_FIX_POSITIONAL(
            program=Name(" ".join(eng.program("MODEL"))), flag=Name(model_flag)
        )
        if eng.model_positional
        else C.MISSING_MODEL_FIX(flag=Name(model_flag))
    )
    info = eng.lookup(model_flag)
    serves_default = info is not None and info.default is not None
    given = ctx.choice.loaded.name if ctx.choice.loaded is not None else None
    label = Name(eng.label)
    what = (
        C.MISSING_MODEL_INSTEAD(engine=label, model=Name(given))
        if serves_default and given
        else C.MISSING_MODEL_DEFAULT(engine=label)
        if serves_default
        else C.MISSING_MODEL_REFUSED(engine=label)
    )
    ctx.add(
        "missing-model",
        what,
        fix,
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
            C.FRACTION_RANGE(flag=Name(arg.written), value=Name(shown(arg.value or ""))),
            C.FRACTION_RANGE_FIX(words=Name(f"{arg.written} {suggest}")),
            arg.written,
            (Edit("change", arg.written, suggest, arg.index),),
        )
    elif fraction > warn:
        high = (
            C.FRACTION_HIGH_ALL
            if adapter(ctx.engine).fraction_covers_everything
            else C.FRACTION_HIGH_STATIC
        )
        ctx.add(
            "memory-fraction-high",
            high(
                flag=Name(arg.written),
                value=Name(shown(arg.value or "")),
                share=Percent(round(1 - warn, 4)),
            ),
            C.FRACTION_HIGH_FIX(words=Name(f"{arg.written} {suggest}")),
            arg.written,
            (Edit("change", arg.written, suggest, arg.index),),
        )
