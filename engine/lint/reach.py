"""Which commands of a script bash would run: a function's body only where the function is
called, neither branch of ``if false`` / ``while false`` / ``false && …`` that cannot run, nothing
after an unconditional ``exit`` (or ``exec`` of a program) in the same shell. A command in a
branch whose condition is only known when the script runs may run: it is linted as one that
does.

``reach(commands)`` gives, per command, None (it may run) or the decision that says why it never
does. Here-documents are not commands at all (``engine.lint.shell.Heredoc``); the extractor reads
one as a script only where it feeds a shell.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from engine.decision import Decision, Name
from engine.lint import codes as C
from engine.lint.shell import Command

# a condition bash knows without running anything
_CONSTANT: dict[tuple[str, ...], bool] = {("false",): False, ("true",): True, (":",): True}
_COMPOUND_OPEN = {"if", "while", "until", "for", "select", "case"}


@dataclass
class _Frame:
    """An open compound command: ``if`` (its conditions so far), a loop, ``case``, a ``{ … }``
    group or a function's body."""

    kind: str
    dead: Decision | None  # why nothing in it runs (from the frame around it or its own)
    line: int
    conds: list[bool | None] = field(default_factory=list)
    taken: bool = False  # a branch before this one surely ran (the rest of the if cannot)
    branch: Decision | None = None  # why the branch in progress cannot run
    loop_kind: str = ""
    function: str | None = None


def _constant(words: list[str]) -> bool | None:
    negate = False
    while words and words[0] == "!":
        negate, words = not negate, words[1:]
    value = _CONSTANT.get(tuple(words))
    return None if value is None else value != negate


@dataclass
class _Walk:
    frames: list[_Frame] = field(default_factory=list)
    pending_function: str | None = None
    exited: tuple[int, int] | None = None  # (line, subshell depth) of an unconditional exit
    chain: Decision | None = None  # why the command after && / || cannot run
    functions: dict[str, int] = field(default_factory=dict)  # name -> index of its definition
    member: dict[int, str] = field(default_factory=dict)  # command index -> enclosing function
    called: dict[int, str] = field(default_factory=dict)  # command index -> the name it runs

    def dead(self) -> Decision | None:
        for f in self.frames:
            if f.dead is not None:
                return f.dead
            if f.branch is not None:
                return f.branch
        return None

    def conditional(self) -> bool:
        return any(f.kind not in ("group",) for f in self.frames)

    def function(self) -> str | None:
        return next((f.function for f in reversed(self.frames) if f.function), None)

    def _innermost(self, *kinds: str) -> _Frame | None:
        return next((f for f in reversed(self.frames) if f.kind in kinds), None)

    def reserved(self, words: list[str], line: int) -> list[str]:
        """Take the reserved words that open, continue or close compound commands off the
        front of ``words``; what is left is the simple command (maybe nothing)."""
        while words:
            w = words[0]
            if w in _COMPOUND_OPEN:
                kind = "loop" if w in ("while", "until", "for", "select") else w
                opened = _Frame(kind, self.dead(), line, loop_kind=w)
                self.frames.append(opened)
                if w in ("if", "while", "until"):
                    opened.conds.append(_constant(words[1:]))
                return []
            if w == "function" and len(words) > 1:
                self.pending_function = words[1]
                words = words[2:]
                continue
            frame = self._innermost("if") if w in ("then", "elif", "else", "fi") else None
            if w in ("then", "elif", "else") and frame is not None:
                self._branch(frame, w, words, line)
                if w == "elif":
                    return []
            elif w == "fi" and frame is not None:
                self.frames.remove(frame)
            elif w == "do" and (loop := self._innermost("loop")) is not None:
                cond = loop.conds[-1] if loop.conds else None
                never = (loop.loop_kind == "while" and cond is False) or (
                    loop.loop_kind == "until" and cond is True
                )
                loop.branch = C.IN_DEAD_BRANCH(line=loop.line) if never else None
            elif w == "done" and (ended := self._innermost("loop")) is not None:
                self.frames.remove(ended)
            elif w == "esac" and (case := self._innermost("case")) is not None:
                self.frames.remove(case)
            elif w == "{":
                name, self.pending_function = self.pending_function, None
                self.frames.append(_Frame("function" if name else "group", self.dead(), line))
                self.frames[-1].function = name
            elif w == "}" and (group := self._innermost("group", "function")) is not None:
                self.frames.remove(group)
            elif w != "!":
                return words
            words = words[1:]
        return words

    def _branch(self, frame: _Frame, w: str, words: list[str], line: int) -> None:
        last = frame.conds[-1] if frame.conds else None
        if w == "then":
            if frame.taken or last is False:
                frame.branch = C.IN_DEAD_BRANCH(line=frame.line)
            else:
                frame.branch = None
                frame.taken = frame.taken or last is True
        elif w == "elif":
            frame.conds.append(_constant(words[1:]))
            frame.branch = C.IN_DEAD_BRANCH(line=frame.line) if frame.taken else None
        else:  # else
            frame.branch = C.IN_DEAD_BRANCH(line=frame.line) if frame.taken else None


def _chained(walk: _Walk, before: Command | None, before_words: list[str]) -> Decision | None:
    """Why the command after ``before`` (joined by && or ||) cannot run, if it cannot."""
    if before is None or before.end not in ("&&", "||"):
        return None
    if walk.chain is not None:  # the command before could not run: && goes on skipping
        return walk.chain if before.end == "&&" else None
    value = _constant(before_words)
    if (before.end == "&&" and value is False) or (before.end == "||" and value is True):
        return C.IN_DEAD_BRANCH(line=before.line)
    return None


def _ends_shell(words: list[str], cmd: Command, before: Command | None) -> bool:
    """``exit`` or ``exec PROGRAM``, run for sure (not joined by && / ||, not in a pipe)."""
    terminal = (words[:1] == ["exit"]) or (words[:1] == ["exec"] and len(words) > 1)
    joined = cmd.end in ("&&", "||", "|", "&") or (
        before is not None and before.end in ("&&", "||", "|")
    )
    return terminal and not joined


def reach(cmds: Sequence[Command]) -> list[Decision | None]:
    """Per command: None where bash may run it, else why it never does."""
    walk = _Walk()
    out: list[Decision | None] = []
    before: Command | None = None
    before_words: list[str] = []
    for k, cmd in enumerate(cmds):
        if walk.exited is not None and cmd.subshell < walk.exited[1]:
            walk.exited = None  # the subshell that exited has closed
        words = walk.reserved([w.text for w in cmd.words], cmd.line)
        chained = _chained(walk, before, before_words)
        walk.chain = chained
        why = walk.dead() or chained
        if why is None and walk.exited is not None:
            why = C.AFTER_EXIT(line=walk.exited[0])
        if (name := walk.function()) is not None:
            walk.member[k] = name
        if cmd.end == "()" and words:
            walk.pending_function = words[-1]
            walk.functions[words[-1]] = k
        elif walk.pending_function and words[:1] != ["{"]:
            walk.functions.setdefault(walk.pending_function, k)
        if why is None and not walk.conditional() and _ends_shell(words, cmd, before):
            walk.exited = (cmd.line, cmd.subshell)
        if words:
            walk.called[k] = words[0]  # after then / do / { …: the command's own first word
        out.append(why)
        before, before_words = cmd, words
    return _functions(cmds, walk, out)


def _functions(
    cmds: Sequence[Command], walk: _Walk, out: list[Decision | None]
) -> list[Decision | None]:
    """A function's body runs where the function is called (after it is defined, from code
    that runs); elsewhere its commands are only its definition."""
    called: set[str] = set()
    changed = True
    while changed:
        changed = False
        for k in range(len(cmds)):
            first = walk.called.get(k, "")
            if first not in walk.functions or first in called or out[k] is not None:
                continue
            caller = walk.member.get(k)
            if (
                k > walk.functions[first]
                and caller != first
                and (caller is None or caller in called)
            ):
                called.add(first)
                changed = True
    return [
        why
        if why is not None or walk.member.get(k) in (None, *called)
        else C.IN_FUNCTION(name=Name(walk.member[k]))
        for k, why in enumerate(out)
    ]
