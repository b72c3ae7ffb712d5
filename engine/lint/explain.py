"""Every flag of the command with what the engine's help says it does and why it is there (the
Study's plan's reason where the plan sets the same value), and the flags the plan leaves to the
engine that the command leaves out too."""

from __future__ import annotations

from engine.decision import Decision, Name, Percent
from engine.engines import adapter
from engine.launch.plan import PARALLEL_FLAGS
from engine.lint import codes as C
from engine.lint.command_scenario import shown
from engine.lint.findings import FlagExplanation
from engine.lint.lint_context import Ctx

# What a command cannot say: the workload. The plan's reasons for these read the Study's
# default users and prefix overlap, so the linter does not repeat them.
_WORKLOAD_FLAGS = frozenset(
    {
        "--speculative-config",
        "--speculative-algorithm",
        "--enable-prefix-caching",
        "--disable-radix-cache",
    }
)


def _reason(ctx: Ctx, canonical: str, value: str | None) -> Decision | None:
    st = ctx.study or ctx.base
    plan = st.plan if st is not None else None
    if plan is not None and canonical not in PARALLEL_FLAGS | _WORKLOAD_FLAGS:
        for f in plan.flags:
            if f.flag == canonical and (f.value == value or (f.value is None and value is None)):
                return f.why
    shown_value = Name(shown(value or "", 40))
    if canonical in ("--tensor-parallel-size", "--tp-size"):
        latent = st is not None and st.family.attention_family in ("MLA", "DSA")
        return (C.TP_REASON_LATENT if latent else C.TP_REASON)(value=shown_value)
    if canonical == "--mem-fraction-static":
        number = None
        if value is not None and len(value) <= 32:
            try:
                number = float(value)
            except ValueError:
                number = None
        if number is not None and 0 < number <= 1:
            return C.STATIC_REASON_LEFT(value=shown_value, free=Percent(round(1 - number, 4)))
        return C.STATIC_REASON(value=shown_value)
    typical = C.TYPICAL.get(canonical)
    if typical is None:
        return None
    code, named = typical
    return code(value=shown_value) if named else code()


def _help(text: str) -> str:
    """The first line of the engine's help text, as the engine writes it."""
    return text.strip().split("\n")[0]


def explanations(ctx: Ctx) -> tuple[FlagExplanation, ...]:
    out: list[FlagExplanation] = []
    if adapter(ctx.engine).model_positional and ctx.parsed.positionals:
        _, word = ctx.parsed.positionals[0]
        out.append(FlagExplanation("MODEL", "model_tag", word, "", C.POSITIONAL(), None))
    for arg in ctx.parsed.args:
        if arg.info is None or arg.canonical is None:
            out.append(
                FlagExplanation(
                    arg.written,
                    "",
                    arg.value,
                    "",
                    C.NOT_A_FLAG(engine=ctx.engine_name),
                    C.SEE_FINDINGS(),
                )
            )
            continue
        alias = arg.canonical != arg.written and arg.abbreviation_of is None
        out.append(
            FlagExplanation(
                arg.written,
                arg.canonical,
                arg.value,
                _help(arg.info.help),
                C.ALIAS(canonical=Name(arg.canonical)) if alias else None,
                _reason(ctx, arg.canonical, arg.value),
            )
        )
    return tuple(out)


def left_to_engine(ctx: Ctx) -> tuple[FlagExplanation, ...]:
    """What the plan deliberately leaves to the engine and the command leaves out as well."""
    st = ctx.study or ctx.base
    if st is None or st.plan is None:
        return ()
    table = adapter(ctx.engine).flags
    set_here = {a.canonical for a in ctx.parsed.args if a.canonical is not None}
    out: list[FlagExplanation] = []
    for x in st.plan.left_to_engine:
        info = table.get(x.flag)
        if info is None or info.flag in set_here or info.flag in _WORKLOAD_FLAGS:
            continue
        out.append(FlagExplanation(x.flag, info.flag, None, _help(info.help), None, x.why))
    return tuple(out)
