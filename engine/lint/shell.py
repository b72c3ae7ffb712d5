"""Shell text as the shell reads it: words (with their quoting and ``$VARIABLE`` references),
operators, newlines that end a command, and the simple commands between them.

A small POSIX-style tokenizer rather than ``shlex``: the linter needs line numbers (a flag left
on a line of its own by a missing ``\\``), newlines as command ends, ``$VAR`` kept apart from
quoted text, and a single pass over the text (linear time on any input).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from engine.errors import InputError

_NAME_START = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
_NAME_CHARS = _NAME_START | frozenset("0123456789")
_SPECIAL_PARAMS = frozenset("@*#?$!-0123456789")
_PLACEHOLDER = re.compile(r"<[A-Za-z_][A-Za-z0-9_.-]{0,63}>")
_BLANK_RUN = re.compile(r"[ \t\r]+")
# Words and operators in a pasted script; a launch script has a few hundred.
MAX_TOKENS = 8000
# A run of characters with no meaning to the shell: read in one step, not one by one.
_PLAIN_RUN = re.compile(r"[^ \t\r\n'\"\\$`;&|()<>]+")
_OPERATOR_CHARS = frozenset(";&|()<>")
_SEPARATORS = frozenset({";", "&", "|", "&&", "||", ";;", "(", ")", "\n"})
_REDIRECTS = frozenset({"<", ">", ">>", "<<", ">&", "<&", "&>", ">|", "<>"})


@dataclass(frozen=True)
class Var:
    """A parameter reference (``$NAME``, ``${NAME}``) or a command substitution (never resolved)."""

    name: str
    text: str  # as written, e.g. "${YAML_CONFIG}" or "$(nvidia-smi ...)"

    @property
    def resolvable(self) -> bool:
        return bool(self.name) and self.name[0] in _NAME_START


Part = str | Var


@dataclass(frozen=True)
class Word:
    parts: tuple[Part, ...]
    line: int

    @property
    def text(self) -> str:
        """The word with quotes removed and references as written."""
        return "".join(p if isinstance(p, str) else p.text for p in self.parts)

    @property
    def variables(self) -> tuple[Var, ...]:
        return tuple(p for p in self.parts if isinstance(p, Var))

    def expand(self, values: Mapping[str, str]) -> str:
        """The word with every known variable replaced by its value."""
        out: list[str] = []
        for p in self.parts:
            if isinstance(p, str):
                out.append(p)
            elif p.name in values:
                out.append(values[p.name])
            else:
                out.append(p.text)
        return "".join(out)


@dataclass(frozen=True)
class Op:
    text: str
    line: int


Token = Word | Op


@dataclass(frozen=True)
class Tokens:
    tokens: tuple[Token, ...]
    dangling: tuple[int, ...]  # lines whose trailing ``\`` joins a blank line or the end


def _balanced_error(what: str, line: int) -> InputError:
    return InputError("command", f"balanced shell quoting (an unclosed {what} on line {line})")


def _placeholder_end(text: str, i: int) -> int:
    """The index after ``<name>`` at ``text[i]`` when it stands alone as a word, else 0."""
    m = _PLACEHOLDER.match(text, i)
    if m is None:
        return 0
    after = text[m.end() : m.end() + 1]
    return m.end() if after in ("", " ", "\t", "\n", "\r", ";", "&", "|") else 0


def tokenize(text: str) -> Tokens:
    """Words and operators of ``text``; ``InputError("command", ...)`` on unclosed quotes."""
    tokens: list[Token] = []
    dangling: list[int] = []
    parts: list[Part] = []
    buf: list[str] = []
    in_word = False
    word_line = 1
    line = 1
    i = 0
    n = len(text)

    def flush_buf() -> None:
        if buf:
            parts.append("".join(buf))
            buf.clear()

    def end_word() -> None:
        nonlocal in_word
        flush_buf()
        if in_word:
            tokens.append(Word(tuple(parts), word_line))
            if len(tokens) > MAX_TOKENS:
                raise InputError(
                    "command", f"a launch command or script of at most {MAX_TOKENS:,} words"
                )
        parts.clear()
        in_word = False

    def start_word() -> None:
        nonlocal in_word, word_line
        if not in_word:
            in_word = True
            word_line = line

    def continuation_at(j: int) -> None:
        """``\\`` at j-1 and a newline at j: note a continuation onto a blank line or the end."""
        k = j + 1
        while k < n and text[k] in " \t\r":
            k += 1
        if k >= n or text[k] == "\n":
            dangling.append(line)

    def read_dollar(j: int) -> tuple[Var | None, int]:
        """A reference starting at ``text[j] == '$'``: the Var and the index after it."""
        nonlocal line
        if j + 1 >= n:
            return None, j + 1
        c = text[j + 1]
        if c == "{":
            end = text.find("}", j + 2)
            if end < 0:
                raise _balanced_error("${", line)
            inner = text[j + 2 : end]
            name = inner if inner and all(ch in _NAME_CHARS for ch in inner) else ""
            line += text.count("\n", j, end)
            return Var(name, text[j : end + 1]), end + 1
        if c == "(":
            depth, k, start_line = 0, j + 1, line
            while k < n:
                ch = text[k]
                if ch == "(":
                    depth += 1
                elif ch == ")":
                    depth -= 1
                    if depth == 0:
                        break
                elif ch == "\n":
                    line += 1
                k += 1
            if k >= n:
                raise _balanced_error("$(", start_line)
            return Var("", text[j : k + 1]), k + 1
        if c in _NAME_START:
            k = j + 1
            while k < n and text[k] in _NAME_CHARS:
                k += 1
            return Var(text[j + 1 : k], text[j:k]), k
        if c in _SPECIAL_PARAMS:
            return Var(c, text[j : j + 2]), j + 2
        return None, j + 1

    def take_dollar(j: int) -> int:
        """A ``$`` at ``j`` (bare or inside double quotes): a variable part, or a literal $."""
        var, k = read_dollar(j)
        if var is None:
            buf.append("$")
        else:
            flush_buf()
            parts.append(var)
        return k

    def take_backtick(j: int) -> int:
        """A backquoted command substitution at ``j``: kept whole as one variable part."""
        nonlocal line
        end = text.find("`", j + 1)
        if end < 0:
            raise _balanced_error("`", line)
        flush_buf()
        parts.append(Var("", text[j : end + 1]))
        line += text.count("\n", j, end)
        return end + 1

    while i < n:
        c = text[i]
        if c in " \t\r":
            if in_word:
                end_word()
            blank = _BLANK_RUN.match(text, i)
            i = blank.end() if blank is not None else i + 1
        elif c == "\n":
            end_word()
            tokens.append(Op("\n", line))
            line += 1
            i += 1
        elif c == "#" and not in_word:
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif c == "\\":
            if i + 1 >= n:
                dangling.append(line)
                i += 1
            elif text[i + 1] == "\n":
                continuation_at(i + 1)
                line += 1
                i += 2
            else:
                start_word()
                buf.append(text[i + 1])
                i += 2
        elif c == "'":
            start_word()
            end = text.find("'", i + 1)
            if end < 0:
                raise _balanced_error("'", line)
            buf.append(text[i + 1 : end])
            line += text.count("\n", i, end)
            i = end + 1
        elif c == '"':
            start_word()
            start_line = line
            i += 1
            while True:
                if i >= n:
                    raise _balanced_error('"', start_line)
                ch = text[i]
                if ch == '"':
                    i += 1
                    break
                if ch == "\\" and i + 1 < n and text[i + 1] in '"\\$`\n':
                    if text[i + 1] == "\n":
                        line += 1
                    else:
                        buf.append(text[i + 1])
                    i += 2
                elif ch == "$":
                    i = take_dollar(i)
                elif ch == "`":
                    i = take_backtick(i)
                else:
                    if ch == "\n":
                        line += 1
                    buf.append(ch)
                    i += 1
        elif c == "$":
            start_word()
            i = take_dollar(i)
        elif c == "`":
            start_word()
            i = take_backtick(i)
        elif c == "<" and not in_word and (end := _placeholder_end(text, i)) > 0:
            # "<head_node_ip>": a documentation placeholder, not a redirection
            start_word()
            parts.append(Var("", text[i:end]))
            i = end
        elif c in _OPERATOR_CHARS:
            if c in "<>" and in_word and not parts and buf and "".join(buf).isdigit():
                buf.clear()  # "2>&1": the digits name a file descriptor
                in_word = False
            end_word()
            two = text[i : i + 2]
            if two in ("&&", "||", ";;", ">>", "<<", ">&", "<&", "&>", ">|", "<>"):
                tokens.append(Op(two, line))
                i += 2
            else:
                tokens.append(Op(c, line))
                i += 1
        else:
            start_word()
            run = _PLAIN_RUN.match(text, i)
            end = run.end() if run is not None else i + 1
            buf.append(text[i:end])
            i = end
    end_word()
    return Tokens(tuple(tokens), tuple(dangling))


@dataclass(frozen=True)
class Command:
    """A simple command: its words up to the operator that ends it."""

    words: tuple[Word, ...]
    end: str  # the separator after it ("\n", ";", "&", "|", ...) or "" at the end of the text

    @property
    def line(self) -> int:
        return self.words[0].line if self.words else 0

    @property
    def last_line(self) -> int:
        return self.words[-1].line if self.words else 0


def commands(tokens: Iterable[Token]) -> list[Command]:
    """Split tokens into simple commands; redirections and their targets are dropped."""
    out: list[Command] = []
    words: list[Word] = []
    skip_next = False
    for tok in tokens:
        if isinstance(tok, Word):
            if skip_next:
                skip_next = False
                continue
            words.append(tok)
        elif tok.text in _REDIRECTS:
            skip_next = True
        elif tok.text in _SEPARATORS:
            if words:
                out.append(Command(tuple(words), tok.text))
            words = []
            skip_next = False
    if words:
        out.append(Command(tuple(words), ""))
    return out


def assignment(word: Word) -> tuple[str, Word] | None:
    """``NAME=value`` as (NAME, the value as a word), or None."""
    first = word.parts[0] if word.parts else ""
    if not isinstance(first, str) or "=" not in first:
        return None
    name, _, rest = first.partition("=")
    if not name or name[0] not in _NAME_START or any(ch not in _NAME_CHARS for ch in name):
        return None
    value_parts: tuple[Part, ...] = ((rest,) if rest else ()) + word.parts[1:]
    return name, Word(value_parts, word.line)


_DECLARE = frozenset({"export", "declare", "readonly", "local", "typeset"})
MAX_VALUES = 8  # a variable set per branch takes a few values; more are not read


def script_variables(cmds: Iterable[Command]) -> dict[str, tuple[str, ...]]:
    """Every value each variable is set to by the script's own assignments (``NAME=value`` alone
    on a line, or after ``export``), in order, each expanded with what was known before it."""
    values: dict[str, list[str]] = {}
    known: dict[str, str] = {}  # the variables with exactly one value so far
    for cmd in cmds:
        words = list(cmd.words)
        if words and words[0].text in _DECLARE:
            words = [w for w in words[1:] if not w.text.startswith("-")]
        pairs = [assignment(w) for w in words]
        if not words or any(p is None for p in pairs):
            continue
        for pair in pairs:
            assert pair is not None
            name, value = pair
            text = value.expand(known)
            if any(v.resolvable and v.name not in known for v in value.variables):
                continue  # depends on something the script does not set
            if any(not v.resolvable for v in value.variables):
                continue  # a command substitution: only known where it runs
            seen = values.setdefault(name, [])
            if text not in seen and len(seen) < MAX_VALUES:
                seen.append(text)
                if len(seen) == 1:
                    known[name] = text
                else:
                    known.pop(name, None)
    return {k: tuple(v) for k, v in values.items()}
