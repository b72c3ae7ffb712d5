"""The corrected command, built by construction: each finding's edit applied to the parsed words
(a word the linter did not touch keeps its parts, so literal text stays literal and an
expansion stays that expansion; a value the linter writes is one quoted literal), then written
back word by word (``engine.lint.shell.requote``) and read back to check that every word has
the shape it was meant to have."""

from __future__ import annotations

from collections.abc import Sequence

from engine.lint.findings import Edit
from engine.lint.shell import (
    Quoted,
    UnsafeWord,
    Word,
    assignment,
    commands,
    literal,
    requote,
    shape,
    tokenize,
)


def _renamed(word: Word, flag: str) -> Word:
    """``--old=value`` as ``--new=value``, the value's parts kept; ``--old`` as ``--new``."""
    for k, part in enumerate(word.parts):
        if not isinstance(part, str):
            break  # the spelling reaches an expansion before any "="
        if "=" in part:
            rest = part.split("=", 1)[1]
            kept: tuple[str, ...] = ()
            if rest:
                kept = (Quoted(rest) if isinstance(part, Quoted) else rest,)
            return Word((flag + "=", *kept, *word.parts[k + 1 :]), word.line)
    return literal(flag, word.line)


def apply_edits(
    words: Sequence[Word],
    flag_spans: dict[int, int],
    edits: Sequence[Edit],
    detached: Sequence[Word] = (),
) -> list[Word]:
    """The arguments after ``edits``. ``flag_spans`` maps a flag's index to the number of words it
    spans (1, or 2 with a separate value); ``detached``: the words an ``attach`` edit brings back
    onto the command (by index)."""
    dropped: set[int] = set()
    replaced: dict[int, list[Word]] = {}
    added: list[Word] = []
    for e in edits:
        if e.kind == "add":
            added.append(literal(e.flag))
            if e.value is not None:
                added.append(literal(e.value))
            continue
        if e.kind == "attach":
            if e.index is not None and 0 <= e.index < len(detached):
                added.append(detached[e.index])
            continue
        if e.index is None or not 0 <= e.index < len(words):
            continue
        span = flag_spans.get(e.index, 1)
        if e.kind == "drop":
            dropped.update(range(e.index, e.index + span))
        elif e.kind == "change":
            replaced[e.index] = [literal(e.flag)] + ([literal(e.value)] if e.value else [])
            dropped.update(range(e.index + 1, e.index + span))
        elif e.kind == "rename":
            old = words[e.index]
            inline = old.text.startswith("-") and "=" in old.text and span == 1
            replaced[e.index] = [_renamed(old, e.flag) if inline else literal(e.flag)]
    out: list[Word] = []
    for i, w in enumerate(words):
        if i in replaced and i not in dropped:
            out.extend(replaced[i])
        elif i not in dropped:
            out.append(w)
    return out + added


def _prefix_text(word: Word) -> str:
    """An environment assignment before the launcher: ``NAME=`` bare (so the shell still reads
    an assignment) and the value rebuilt; any other word rebuilt."""
    pair = assignment(word)
    if pair is None:
        return requote(word.parts)
    name, value = pair
    return f"{name}={requote(value.parts) if value.parts else ''}"


def render_shell(prefix: Sequence[Word], launcher: Sequence[Word], args: Sequence[Word]) -> str:
    """The environment, the launcher (and a positional model) on the first line, then one flag
    with its value per continued line. Raises ``UnsafeWord`` for a word that cannot be written
    back as it was."""
    first = [_prefix_text(w) for w in prefix] + [requote(w.parts) for w in launcher]
    i = 0
    while i < len(args) and not args[i].text.startswith("-"):
        first.append(requote(args[i].parts))
        i += 1
    lines = [" ".join(first)]
    group: list[str] = []
    for w in args[i:]:
        if w.text.startswith("-") and group:
            lines.append(" ".join(group))
            group = []
        group.append(requote(w.parts))
    if group:
        lines.append(" ".join(group))
    return " \\\n  ".join(line for line in lines if line)


def reads_back(text: str, words: Sequence[Word]) -> bool:
    """``text`` is one command whose words have the shapes of ``words`` (the last line of
    defence: a rebuilt word that would read differently is never handed out)."""
    try:
        cmds = commands(tokenize(text).tokens)
    except ValueError:
        return False
    if len(cmds) != 1 or len(cmds[0].words) != len(words):
        return False
    return all(shape(a) == shape(b) for a, b in zip(cmds[0].words, words, strict=True))


def shell_text(
    prefix: Sequence[Word], launcher: Sequence[Word], args: Sequence[Word]
) -> str | None:
    """The command as shell text, or None when a word cannot be written back unchanged."""
    try:
        text = render_shell(prefix, launcher, args)
    except UnsafeWord:
        return None
    return text if reads_back(text, [*prefix, *launcher, *args]) else None
