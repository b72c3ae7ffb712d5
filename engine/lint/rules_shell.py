"""Rules on the text around the engine's arguments: a doubled subcommand, flags cut off by a
missing ``\\``, a ``\\`` that continues onto nothing, shell variables the linter cannot see,
options read from a file, an engine inferred from a manifest's flags, no GPU to check against."""

from __future__ import annotations

from engine.decision import Name
from engine.lint import codes as C
from engine.lint.command_scenario import shown
from engine.lint.findings import Edit
from engine.lint.lint_context import Ctx


def notes(ctx: Ctx) -> None:
    launcher = ctx.inv.launcher_text
    if ctx.inv.not_run is not None:
        ctx.add("not-run", C.NOT_RUN(why=ctx.inv.not_run), C.NOT_RUN_FIX())
    attached = 0  # where each detached line's words start in inv.detached
    for note in ctx.inv.notes:
        if note.kind == "repeated-subcommand":
            name = Name(launcher)
            ctx.add("repeated-subcommand", C.REPEATED(launcher=name), C.REPEATED_FIX(launcher=name))
        elif note.kind == "detached-flag":
            words = " ".join(shown(w, 40) for w in note.words)
            ctx.add(
                "detached-flag",
                C.DETACHED(
                    line=note.line,
                    previous=note.line - 1,
                    words=Name(words),
                    first=Name(shown(note.words[0], 40)),
                ),
                C.DETACHED_FIX(previous=note.line - 1),
                note.words[0],
                tuple(Edit("attach", w, index=attached + k) for k, w in enumerate(note.words)),
            )
            attached += len(note.words)
        else:
            ctx.add(
                "dangling-backslash", C.DANGLING(line=note.line), C.DANGLING_FIX(line=note.line)
            )


def variables(ctx: Ctx) -> None:
    """Shell variables in the arguments: the values the script gives them, or none."""
    seen: list[str] = []
    unset: list[str] = []
    for w in ctx.inv.args:
        for v in w.variables:
            label = v.text
            if label in seen:
                continue
            seen.append(label)
            if not v.resolvable or v.name not in ctx.reading:
                unset.append(label)
    if unset:
        names = tuple(Name(shown(u, 40)) for u in unset)
        loaded = ctx.choice.loaded
        model_id = ctx.settings.model_id
        ctx.add(
            "shell-variable",
            C.UNSET_MODEL(names=names, model=Name(loaded.name))
            if loaded is not None and model_id is not None and "$" in model_id
            else C.UNSET(names=names),
            C.UNSET_FIX(),
        )
    chosen = {k: v for k, v in ctx.reading.items() if len(ctx.inv.variables.get(k, ())) > 1}
    if chosen:
        options = tuple(
            C.BRANCH_OPTION(name=Name(k), values=tuple(Name(v) for v in ctx.inv.variables[k]))
            for k in chosen
        )
        picked = tuple(C.BRANCH_VALUE(name=Name(k), value=Name(v)) for k, v in chosen.items())
        ctx.add(
            "shell-variable",
            C.BRANCHES_GPU(options=options, picked=picked, gpu=Name(ctx.gpu.key))
            if ctx.gpu is not None
            else C.BRANCHES(options=options, picked=picked),
            C.BRANCHES_FIX(),
        )


def config_file(ctx: Ctx) -> None:
    arg = ctx.arg("--config")
    if arg is not None:
        ctx.add(
            "config-file",
            C.CONFIG_FILE(flag=Name(arg.written), value=Name(shown(arg.value or "", 40))),
            C.CONFIG_FILE_FIX(),
            arg.written,
        )


def inferred(ctx: Ctx) -> None:
    if ctx.inv.inferred:
        ctx.add("engine-inferred", C.INFERRED(engine=ctx.engine_name), C.INFERRED_FIX())


def hardware(ctx: Ctx) -> None:
    if ctx.gpu is None:
        ctx.add("no-hardware", C.NO_HARDWARE(), C.NO_HARDWARE_FIX())
