"""Flags the model's own recipe makes mandatory on every platform (``data/recipes.yaml``
``base_flags`` rows marked ``required``: DeepSeek-V4's ``--kv-cache-dtype fp8 --block-size 256
--trust-remote-code``, MiniMax-M3's ``--block-size 128``): a command without one, or with another
value, gets a warning whose fix writes the recipe's value; no fix of any rule removes one."""

from __future__ import annotations

from engine.decision import Name, Source
from engine.engines import adapter
from engine.kv.dtype import stored_name
from engine.launch.recipes import RecipeFlag, required_flags
from engine.lint import codes as C
from engine.lint.findings import Edit
from engine.lint.lint_context import Ctx


def _required(ctx: Ctx) -> list[tuple[str, RecipeFlag]]:
    """(the option's canonical spelling, the recipe's flag) for the command's model and GPU."""
    st = ctx.facts
    if st is None:
        return []
    eng = adapter(ctx.engine)
    out: list[tuple[str, RecipeFlag]] = []
    for rf in required_flags(st.config, ctx.engine, ctx.gpu):
        info = eng.lookup(rf.flag)
        out.append((info.flag if info is not None else rf.flag, rf))
    return out


def protected(ctx: Ctx) -> frozenset[str]:
    """Canonical spellings no fix may drop: the recipe's mandatory flags."""
    return frozenset(canonical for canonical, _ in _required(ctx))


def _same(ctx: Ctx, canonical: str, written: str | None, wanted: str | None) -> bool:
    if wanted is None or written == wanted:
        return True
    if written is None:
        return False
    if canonical == ctx.flag("kv_dtype"):  # fp8 and fp8_e4m3 store the same
        return stored_name(written) == stored_name(wanted)
    return written.strip().lower() == wanted.strip().lower()


def recipe_required(ctx: Ctx) -> None:
    """Each mandatory flag: present with the recipe's value, or a warning that writes it."""
    if ctx.config_file:  # the options may live in the file the linter cannot read
        return
    for canonical, rf in _required(ctx):
        shown = rf.flag + (f" {rf.value}" if rf.value is not None else "")
        source = Source(rf.source)
        arg = ctx.arg(canonical)
        if arg is None:
            ctx.add(
                "recipe-required",
                C.REQUIRED_MISSING(words=Name(shown), reason=rf.reason, source=source),
                C.WRITE(words=Name(shown)),
                rf.flag,
                (Edit("add", rf.flag, rf.value),),
            )
        elif not _same(ctx, canonical, arg.value, rf.value):
            assert rf.value is not None
            ctx.add(
                "recipe-required",
                C.REQUIRED_VALUE(
                    flag=Name(arg.written),
                    value=Name(arg.value or ""),
                    wanted=Name(rf.value),
                    reason=rf.reason,
                    source=source,
                ),
                C.USE(words=Name(f"{arg.written} {rf.value}")),
                arg.written,
                (Edit("change", arg.written, rf.value, arg.index),),
            )
