"""Rules on the text around the engine's arguments: a doubled subcommand, flags cut off by a
missing ``\\``, a ``\\`` that continues onto nothing, shell variables the linter cannot see,
options read from a file, an engine inferred from a manifest's flags, no GPU to check against."""

from __future__ import annotations

from engine.lint.command import shown
from engine.lint.context import Ctx
from engine.lint.report import Edit


def notes(ctx: Ctx) -> None:
    launcher = ctx.inv.launcher_text
    attached = 0  # where each detached line's words start in inv.detached
    for note in ctx.inv.notes:
        if note.kind == "repeated-subcommand":
            ctx.add(
                "repeated-subcommand",
                f"`{launcher} serve`: the second `serve` is read as the model name and the real "
                "model as an extra argument; the engine stops with 'unrecognized arguments'.",
                f"Write `{launcher}` once.",
            )
        elif note.kind == "detached-flag":
            words = " ".join(shown(w, 40) for w in note.words)
            ctx.add(
                "detached-flag",
                f"Line {note.line} (`{words}`) is not part of the command: line {note.line - 1} "
                "does not end with `\\`, so the shell starts the server without it and then "
                f"fails to run `{shown(note.words[0], 40)}` as a command.",
                f"End line {note.line - 1} with ` \\`.",
                note.words[0],
                tuple(Edit("attach", w, index=attached + k) for k, w in enumerate(note.words)),
            )
            attached += len(note.words)
        else:
            ctx.add(
                "dangling-backslash",
                f"Line {note.line} ends with `\\` and nothing follows: harmless here, but a line "
                "added below would become part of the command.",
                f"Drop the `\\` at the end of line {note.line}.",
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
        ctx.add(
            "shell-variable",
            f"{', '.join(f'`{shown(u, 40)}`' for u in unset)}: set outside this text, so "
            "the values were not checked"
            + (
                f"; the model checks used {ctx.choice.loaded.name}"
                if ctx.choice.loaded is not None
                and ctx.settings.model_id is not None
                and "$" in ctx.settings.model_id
                else ""
            )
            + ".",
            "Paste the command with the values filled in to check them too.",
        )
    chosen = {k: v for k, v in ctx.reading.items() if len(ctx.inv.variables.get(k, ())) > 1}
    if chosen:
        options = "; ".join(f"`${k}` is {' or '.join(ctx.inv.variables[k])}" for k in chosen)
        picked = ", ".join(f"{k}={v}" for k, v in chosen.items())
        where = f" on {ctx.gpu.key}" if ctx.gpu is not None else ""
        ctx.add(
            "shell-variable",
            f"The script sets values per branch ({options}); checked with {picked}, the reading "
            f"with the fewest problems{where}.",
            "Nothing to change if the script picks that branch on this hardware.",
        )


def config_file(ctx: Ctx) -> None:
    arg = ctx.arg("--config")
    if arg is not None:
        ctx.add(
            "config-file",
            f"`{arg.written} {shown(arg.value or '', 40)}` reads more options from a file the "
            "linter cannot see; they were not checked.",
            "Paste the file's options onto the command to check them too.",
            arg.written,
        )


def inferred(ctx: Ctx) -> None:
    if ctx.inv.inferred:
        ctx.add(
            "engine-inferred",
            f"No launcher in the manifest; the flags read as {ctx.label}.",
            "Check that the container image's entrypoint starts this engine.",
        )


def hardware(ctx: Ctx) -> None:
    if ctx.gpu is None:
        ctx.add(
            "no-hardware",
            "No GPU was given: memory fit and kernel checks were skipped.",
            "Give the GPU (and how many) to check them.",
        )
