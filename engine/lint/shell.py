"""Shell text as the shell reads it: words (with their quoting and ``$VARIABLE`` references),
operators, newlines that end a command, and the simple commands between them.

A small POSIX-style tokenizer rather than ``shlex``: the linter needs line numbers (a flag left
on a line of its own by a missing ``\\``), newlines as command ends, ``$VAR`` kept apart from
quoted text, and a single pass over the text (linear time on any input). It reads what bash
reads: a carriage return is an ordinary character of a word (so ``\r#`` starts no comment), and
a here-document's body is the text it hands its command, not commands (``Heredoc``).
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from engine.decision import Code, Name
from engine.errors import InputError

_NAME_START = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
_NAME_CHARS = _NAME_START | frozenset("0123456789")
_SPECIAL_PARAMS = frozenset("@*#?$!-0123456789")
_PLACEHOLDER = re.compile(r"<[A-Za-z_][A-Za-z0-9_.-]{0,63}>")
_BLANK_RUN = re.compile(r"[ \t]+")
# Words and operators in a pasted script; a launch script has a few hundred.
MAX_TOKENS = 8000
# A run of characters with no meaning to the shell: read in one step, not one by one.
_PLAIN_RUN = re.compile(r"[^ \t\n'\"\\$`;&|()<>]+")
_OPERATOR_CHARS = frozenset(";&|()<>")
_SEPARATORS = frozenset({";", "&", "|", "&&", "||", ";;", "(", ")", "\n"})
_REDIRECTS = frozenset({"<", ">", ">>", "<<", "<<-", "<<<", ">&", "<&", "&>", ">|", "<>"})


class Quoted(str):
    """Literal text the shell reads quoted (``'…'``, ``"…"``, ``$'…'`` or a ``\\`` escape): no
    globbing, no brace or tilde expansion. A plain ``str`` part is bare text, as written."""

    __slots__ = ()


@dataclass(frozen=True)
class Var:
    """A parameter reference (``$NAME``, ``${NAME}``, ``${NAME:-…}``), a command substitution
    (``$(…)``, a backquoted command) or a documentation placeholder: never resolved. ``quoted``:
    it stood inside double quotes (one word, no splitting)."""

    name: str
    text: str  # as written, e.g. "${YAML_CONFIG}" or "$(nvidia-smi ...)"
    quoted: bool = False

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


def literal(text: str, line: int = 0) -> Word:
    """A word that is ``text`` and nothing else (a value the linter writes)."""
    return Word((Quoted(text),), line)


@dataclass(frozen=True)
class Op:
    text: str
    line: int


@dataclass(frozen=True)
class Heredoc:
    """A here-document (``<<WORD`` or ``<<-WORD``): the lines after its command up to the
    delimiter are its ``body``, text on the command's standard input. ``quoted``: the delimiter
    was quoted, so the body is passed as written (unquoted, the shell expands ``$…`` and
    ``$(…)`` in it first)."""

    text: str  # the operator: "<<" or "<<-"
    line: int
    delimiter: str
    quoted: bool
    body: str


Token = Word | Op | Heredoc


@dataclass(frozen=True)
class Tokens:
    tokens: tuple[Token, ...]
    dangling: tuple[int, ...]  # lines whose trailing ``\`` joins a blank line or the end


QUOTING = Code("error.command.quoting", "what", "line")
WORDS = Code("error.command.words", "most")


def heredoc_body(text: str, i: int, delimiter: str, strip_tabs: bool) -> tuple[str, int, int]:
    """The body of a here-document starting at ``text[i]`` (the line after its command): the
    lines up to one that is ``delimiter`` (leading tabs removed first for ``<<-``), read as bash
    reads them (to the end of the text when no line ends it). (body, index after the delimiter
    line, lines consumed)."""
    n = len(text)
    lines: list[str] = []
    while i < n:
        nl = text.find("\n", i)
        end = n if nl < 0 else nl
        line = text[i:end]
        i = end + 1
        if (line.lstrip("\t") if strip_tabs else line) == delimiter:
            return "".join(lines), i, len(lines) + 1
        lines.append((line.lstrip("\t") if strip_tabs else line) + "\n")
    return "".join(lines), n, len(lines)


def _balanced_error(what: str, line: int) -> InputError:
    return InputError("command", QUOTING(what=Name(what), line=line))


def _placeholder_end(text: str, i: int) -> int:
    """The index after ``<name>`` at ``text[i]`` when it stands alone as a word, else 0."""
    m = _PLACEHOLDER.match(text, i)
    if m is None:
        return 0
    after = text[m.end() : m.end() + 1]
    return m.end() if after in ("", " ", "\t", "\n", ";", "&", "|") else 0


_OPENERS = {"(": "paren", "{": "brace"}
_BRACKETS = {"paren": ("(", ")"), "brace": ("{", "}")}  # what nests in each, and what ends it


@dataclass
class _Frame:
    """One open context while skipping an expansion: paren ($( … )), brace (${ … }), dq ("…")
    or bq (`…`), its nesting depth and where its text starts."""

    kind: str
    depth: int
    start: int


_COMMENT_AFTER = frozenset(" \t\n;&|()")


def skip_expansion(text: str, j: int) -> int:
    """The index after the expansion that starts at ``text[j]`` (``$(``, ``$((``, ``${`` or a
    backquote), read the way bash finds its end: nested expansions, quotes, backslashes and
    comments inside are skipped as a unit, so ``$(echo ")")`` is one substitution. Iterative
    (an explicit stack): linear in the text, no recursion limit on hostile nesting."""
    n = len(text)
    if text[j] == "`":
        stack = [_Frame("bq", 1, j + 1)]
        k = j + 1
    else:
        stack = [_Frame(_OPENERS[text[j + 1]], 1, j + 2)]
        k = j + 2
    while k < n:
        frame = stack[-1]
        kind = frame.kind
        c = text[k]
        if c == "\\":
            k += 2
            continue
        if kind == "bq":
            if c == "`":
                stack.pop()
                k += 1
                if not stack:
                    return k
                continue
            k += 1
            continue
        if c == "$" and k + 1 < n and text[k + 1] in "({":
            stack.append(_Frame(_OPENERS[text[k + 1]], 1, k + 2))
            k += 2
            continue
        if c == "`":
            stack.append(_Frame("bq", 1, k + 1))
            k += 1
            continue
        if kind == "dq":
            if c == '"':
                stack.pop()
            k += 1
            continue
        if c == '"':
            stack.append(_Frame("dq", 1, k + 1))
            k += 1
            continue
        if c == "'":
            end = text.find("'", k + 1)
            if end < 0:
                break
            k = end + 1
            continue
        if kind == "paren" and c == "#" and (k == frame.start or text[k - 1] in _COMMENT_AFTER):
            end = text.find("\n", k)
            k = n if end < 0 else end
            continue
        opens, closes = _BRACKETS[kind]
        if c == opens:
            frame.depth += 1
        elif c == closes:
            frame.depth -= 1
            if frame.depth == 0:
                stack.pop()
                if not stack:
                    return k + 1
        k += 1
    opener = {"paren": "$(", "brace": "${", "dq": '"', "bq": "`"}[stack[0].kind]
    raise _balanced_error(opener, text.count("\n", 0, j) + 1)


_ANSI_SIMPLE = {
    "a": "\a",
    "b": "\b",
    "e": "\x1b",
    "E": "\x1b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
    "\\": "\\",
    "'": "'",
    '"': '"',
    "?": "?",
}
_ANSI_HEX = {"x": 2, "u": 4, "U": 8}


def read_ansi_c(text: str, j: int) -> tuple[str, int]:
    """bash's ``$'…'`` starting at ``text[j] == '$'``: its decoded text and the index after the
    closing quote (``\\n``, ``\\e``, ``\\xHH`` and octal ``\\NNN`` bytes, ``\\uHHHH`` as UTF-8,
    ``\\cX``). Bytes that are not UTF-8 are kept as surrogate escapes, as Python keeps argv."""
    n = len(text)
    out = bytearray()
    k = j + 2
    while k < n:
        c = text[k]
        if c == "'":
            return out.decode("utf-8", "surrogateescape"), k + 1
        if c != "\\" or k + 1 >= n:
            out += c.encode("utf-8", "surrogateescape")
            k += 1
            continue
        e = text[k + 1]
        if e in _ANSI_SIMPLE:
            out += _ANSI_SIMPLE[e].encode()
            k += 2
        elif e in _ANSI_HEX:
            m = k + 2
            digits = ""
            while m < n and len(digits) < _ANSI_HEX[e] and text[m] in string.hexdigits:
                digits += text[m]
                m += 1
            if not digits:
                out += ("\\" + e).encode()
            elif e == "x":
                out.append(int(digits, 16))
            else:
                code = int(digits, 16)
                ok = code <= 0x10FFFF and not 0xD800 <= code <= 0xDFFF
                out += (chr(code) if ok else "\ufffd").encode()
            k = m
        elif e in "01234567":
            m = k + 1
            digits = ""
            while m < n and len(digits) < 3 and text[m] in "01234567":
                digits += text[m]
                m += 1
            out.append(int(digits, 8) & 0xFF)
            k = m
        elif e == "c" and k + 2 < n:
            out.append(ord(text[k + 2]) & 0x1F)
            k += 3
        else:
            out += ("\\" + e).encode()
            k += 2
    raise _balanced_error("$'", text.count("\n", 0, j) + 1)


def _read_heredocs(
    text: str, j: int, tokens: list[Token], pending: list[tuple[int, Word]]
) -> tuple[int, int]:
    """Each pending here-document's body, from ``text[j]`` on: its ``<<`` token becomes a
    Heredoc. (The index after the bodies, the lines they took.)"""
    used = 0
    for at, word in pending:
        op = tokens[at]
        body, j, lines = heredoc_body(text, j, word.text, op.text == "<<-")
        quoted = any(isinstance(p, Quoted) for p in word.parts)
        tokens[at] = Heredoc(op.text, op.line, word.text, quoted, body)
        used += lines
    pending.clear()
    return j, used


class _Lexer:
    """The tokenizer's state over one text: the tokens so far, the word being read (its parts,
    and a buffer of text of one quoting), the line, and the here-documents whose bodies come
    next. One method a kind of character run; ``run`` dispatches on the character at ``i``."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.n = len(text)
        self.i = 0
        self.line = 1
        self.tokens: list[Token] = []
        self.dangling: list[int] = []
        self.parts: list[Part] = []
        self.buf: list[str] = []
        self.buf_quoted = False
        self.in_word = False
        self.word_line = 1
        self.heredoc_op: int | None = None  # the index of a << whose delimiter word comes next
        # here-documents whose bodies start at the next line
        self.pending: list[tuple[int, Word]] = []

    def run(self) -> Tokens:
        text, n = self.text, self.n
        while self.i < n:
            c = text[self.i]
            if c in " \t":
                self.blanks()
            elif c == "\n":
                self.newline()
            elif c == "#" and not self.in_word:
                end = text.find("\n", self.i)
                self.i = n if end < 0 else end
            elif c == "\\":
                self.backslash()
            elif c == "'":
                self.single_quoted()
            elif c == "$" and text[self.i + 1 : self.i + 2] == "'":
                self.ansi_c()
            elif c == '"' or (c == "$" and text[self.i + 1 : self.i + 2] == '"'):
                # "…", and bash's $"…" (a translated string: the same text in the C locale)
                self.double_quoted()
            elif c == "$":
                self.start_word()
                self.i = self.take_dollar(self.i, False)
            elif c == "`":
                self.start_word()
                self.i = self.take_expansion(self.i, False)
            elif c == "<" and not self.in_word and (end := _placeholder_end(text, self.i)) > 0:
                # "<head_node_ip>": a documentation placeholder, not a redirection
                self.start_word()
                self.add_var(Var("", text[self.i : end]))
                self.i = end
            elif c in _OPERATOR_CHARS:
                self.operator(c)
            else:
                self.start_word()
                run = _PLAIN_RUN.match(text, self.i)
                end = run.end() if run is not None else self.i + 1
                self.add(text[self.i : end], False)
                self.i = end
        self.end_word()
        _read_heredocs(text, n, self.tokens, self.pending)  # one on the last line: no body
        return Tokens(tuple(self.tokens), tuple(self.dangling))

    # --- the word being read -----------------------------------------------------------------

    def flush_buf(self) -> None:
        if self.buf:  # an empty quoted string stays a part: ~'' is not the home folder
            joined = "".join(self.buf)
            self.parts.append(Quoted(joined) if self.buf_quoted else joined)
            self.buf.clear()

    def add(self, chunk: str, quoted: bool) -> None:
        if self.buf and self.buf_quoted != quoted:
            self.flush_buf()
        self.buf_quoted = quoted
        self.buf.append(chunk)

    def add_var(self, var: Var) -> None:
        self.flush_buf()
        self.parts.append(var)

    def end_word(self) -> None:
        self.flush_buf()
        if self.in_word:
            word = Word(tuple(self.parts), self.word_line)
            self.tokens.append(word)
            if self.heredoc_op is not None:
                self.pending.append((self.heredoc_op, word))
                self.heredoc_op = None
            if len(self.tokens) > MAX_TOKENS:
                raise InputError("command", WORDS(most=MAX_TOKENS))
        self.parts.clear()
        self.in_word = False

    def start_word(self) -> None:
        if not self.in_word:
            self.in_word = True
            self.word_line = self.line

    # --- expansions ----------------------------------------------------------------------------

    def take_expansion(self, j: int, quoted: bool) -> int:
        """``$(…)``, ``${…}`` or a backquoted command at ``j``: one variable part."""
        end = skip_expansion(self.text, j)
        body = self.text[j:end]
        name = ""
        if body.startswith("${"):
            inner = body[2:-1]
            name = inner if inner and all(ch in _NAME_CHARS for ch in inner) else ""
        self.add_var(Var(name, body, quoted))
        self.line += body.count("\n")
        return end

    def take_dollar(self, j: int, quoted: bool) -> int:
        """A ``$`` at ``j`` (bare or inside double quotes): a variable part, or a literal $."""
        text, n = self.text, self.n
        c = text[j + 1] if j + 1 < n else ""
        if c in ("(", "{"):
            return self.take_expansion(j, quoted)
        if c and c in _NAME_START:
            k = j + 1
            while k < n and text[k] in _NAME_CHARS:
                k += 1
            self.add_var(Var(text[j + 1 : k], text[j:k], quoted))
            return k
        if c and c in _SPECIAL_PARAMS:
            self.add_var(Var(c, text[j : j + 2], quoted))
            return j + 2
        self.add("$", True)
        return j + 1

    # --- one run of characters each, from ``i`` -------------------------------------------------

    def blanks(self) -> None:
        if self.in_word:
            self.end_word()
        blank = _BLANK_RUN.match(self.text, self.i)
        self.i = blank.end() if blank is not None else self.i + 1

    def newline(self) -> None:
        """A command's end; the bodies of the here-documents its line opened follow it."""
        self.end_word()
        self.tokens.append(Op("\n", self.line))
        self.line += 1
        self.i, used = _read_heredocs(self.text, self.i + 1, self.tokens, self.pending)
        self.line += used

    def backslash(self) -> None:
        """An escaped character, or a line continuation (noted when it joins a blank line or
        the end: a flag left on a line of its own)."""
        text, i = self.text, self.i
        if i + 1 >= self.n:
            self.dangling.append(self.line)
            self.i += 1
        elif text[i + 1] == "\n":
            k = i + 2
            while k < self.n and text[k] in " \t":
                k += 1
            if k >= self.n or text[k] == "\n":
                self.dangling.append(self.line)
            self.line += 1
            self.i += 2
        else:
            self.start_word()
            self.add(text[i + 1], True)
            self.i += 2

    def single_quoted(self) -> None:
        self.start_word()
        end = self.text.find("'", self.i + 1)
        if end < 0:
            raise _balanced_error("'", self.line)
        self.add(self.text[self.i + 1 : end], True)
        self.line += self.text.count("\n", self.i, end)
        self.i = end + 1

    def ansi_c(self) -> None:
        self.start_word()
        start_line = self.line
        decoded, end = read_ansi_c(self.text, self.i)
        self.add(decoded, True)
        self.line = start_line + self.text.count("\n", self.i, end)
        self.i = end

    def double_quoted(self) -> None:
        """``"…"`` or ``$"…"``: quoted text, with ``$`` and backquote expansions kept apart."""
        text, n = self.text, self.n
        self.start_word()
        start_line = self.line
        self.i += 1 if text[self.i] == '"' else 2
        mark = (len(self.parts), len(self.buf))
        while True:
            if self.i >= n:
                raise _balanced_error('"', start_line)
            ch = text[self.i]
            if ch == '"':
                self.i += 1
                if (len(self.parts), len(self.buf)) == mark:
                    self.add("", True)  # "" is an empty string, not nothing
                return
            if ch == "\\" and self.i + 1 < n and text[self.i + 1] in '"\\$`\n':
                if text[self.i + 1] == "\n":
                    self.line += 1
                else:
                    self.add(text[self.i + 1], True)
                self.i += 2
            elif ch == "$":
                self.i = self.take_dollar(self.i, True)
            elif ch == "`":
                self.i = self.take_expansion(self.i, True)
            else:
                if ch == "\n":
                    self.line += 1
                self.add(ch, True)
                self.i += 1

    def operator(self, c: str) -> None:
        """An operator of one to three characters; ``<<`` and ``<<-`` wait for their
        delimiter word."""
        digits = not self.parts and not self.buf_quoted and "".join(self.buf).isdigit()
        if c in "<>" and self.in_word and digits:
            self.buf.clear()  # "2>&1": the digits name a file descriptor
            self.in_word = False
        self.end_word()
        i = self.i
        two, three = self.text[i : i + 2], self.text[i : i + 3]
        if three in ("<<-", "<<<"):
            op = three
        elif two in ("&&", "||", ";;", ">>", "<<", ">&", "<&", "&>", ">|", "<>"):
            op = two
        else:
            op = c
        self.tokens.append(Op(op, self.line))
        self.i += len(op)
        if op in ("<<", "<<-"):
            self.heredoc_op = len(self.tokens) - 1


def tokenize(text: str) -> Tokens:
    """Words and operators of ``text``; ``InputError("command", ...)`` on unclosed quotes.
    Each word keeps its parts apart: bare text (``str``), quoted text (``Quoted``) and
    expansions (``Var``, with whether they stood in double quotes)."""
    return _Lexer(text).run()


@dataclass(frozen=True)
class Command:
    """A simple command: its words up to the operator that ends it, the here-documents it
    reads, and how many subshells ``( … )`` it stands in."""

    # the separator after it ("\n", ";", "&", "|", ...), "" at the end of the text, "()" after
    # a function's name (``name() { …; }``)
    words: tuple[Word, ...]
    end: str
    heredocs: tuple[Heredoc, ...] = ()
    subshell: int = 0  # the ( … ) it stands in

    @property
    def line(self) -> int:
        return self.words[0].line if self.words else 0

    @property
    def last_line(self) -> int:
        return self.words[-1].line if self.words else 0


def commands(tokens: Iterable[Token]) -> list[Command]:
    """Split tokens into simple commands; redirections and their targets are dropped (a
    here-document stays with its command). ``name ( )`` ends a command with the end ``()``: a
    function definition's head."""
    toks = list(tokens)
    out: list[Command] = []
    words: list[Word] = []
    docs: list[Heredoc] = []
    skip_next = False
    depth = 0
    start_depth = 0
    i = 0
    while i < len(toks):
        tok = toks[i]
        i += 1
        if isinstance(tok, Word):
            if skip_next:
                skip_next = False
                continue
            if not words:
                start_depth = depth
            words.append(tok)
            continue
        if isinstance(tok, Heredoc):
            docs.append(tok)
        if tok.text in _REDIRECTS:
            skip_next = True
            continue
        if tok.text not in _SEPARATORS:
            continue
        end = tok.text
        if end == "(" and words and i < len(toks) and toks[i].text == ")":
            end, i = "()", i + 1  # name ( ): a function definition
        elif end == "(":
            depth += 1
        elif end == ")" and depth:
            depth -= 1
        if words or docs:
            out.append(Command(tuple(words), end, tuple(docs), start_depth))
        words, docs = [], []
        skip_next = False
    if words or docs:
        out.append(Command(tuple(words), "", tuple(docs), start_depth))
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


# --- words back to shell text ---------------------------------------------------------------

_PLAIN = re.compile(r"[A-Za-z0-9_@%+=:,./-]+")


def _unsafe_char(ch: str) -> bool:
    """A character a terminal or an editor acts on or hides: C0 / C1 controls, DEL, format
    characters (bidi overrides, zero-width), line and paragraph separators."""
    return unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Zl", "Zp")


def _ansi_c(text: str) -> str:
    """``text`` as bash's ``$'…'``: every unsafe character as an escape, nothing else changed."""
    out = []
    for ch in text:
        if ch == "\\":
            out.append("\\\\")
        elif ch == "'":
            out.append("\\'")
        elif _unsafe_char(ch):
            # bytes, not \\u: bash reads \\u by the locale, \\x the same in every locale
            raw = ch.encode("utf-8", "surrogateescape")
            out.append("".join(f"\\x{b:02x}" for b in raw))
        else:
            out.append(ch)
    return "$'" + "".join(out) + "'"


def quote_literal(text: str) -> str:
    """``text`` as one shell word that is exactly ``text``: bare when nothing in it means
    anything to the shell, else single-quoted, else (control characters) ``$'…'``."""
    if _PLAIN.fullmatch(text):
        return text
    if any(_unsafe_char(ch) for ch in text):
        return _ansi_c(text)
    return "'" + text.replace("'", "'\\''") + "'"


def _quoted_always(text: str) -> str:
    if any(_unsafe_char(ch) for ch in text):
        return _ansi_c(text)
    return "'" + text.replace("'", "'\\''") + "'"


def _bare(text: str) -> str:
    """Bare text as written (globs, braces and a leading ``~`` keep their meaning); a control
    character inside is written as ``$'…'``, which reads as the same character."""
    if not any(_unsafe_char(ch) for ch in text):
        return text
    out: list[str] = []
    run: list[str] = []
    for ch in text:
        if _unsafe_char(ch):
            if run:
                out.append("".join(run))
                run.clear()
            out.append(_ansi_c(ch))
        else:
            run.append(ch)
    if run:
        out.append("".join(run))
    return "".join(out)


class UnsafeWord(ValueError):
    """A word that cannot be written back without changing it (a control character inside a
    command substitution)."""


def requote(parts: tuple[Part, ...]) -> str:
    """One word as shell text, rebuilt from its parts: quoted text stays literal (single
    quotes), bare text stays as written, each expansion stays that expansion in the quoting it
    had (``"$X"`` or ``$X``). Never the text re-wrapped in double quotes, so nothing that was
    literal can become a command substitution."""
    if not parts:
        return "''"
    if all(isinstance(p, str) for p in parts):
        joined = "".join(parts)  # type: ignore[arg-type]
        if _PLAIN.fullmatch(joined):
            return joined
    out: list[str] = []
    for p in parts:
        if isinstance(p, Var):
            if any(_unsafe_char(ch) and ch not in "\t\n" for ch in p.text):
                raise UnsafeWord(p.text)  # an escape sequence inside a command: not rewritable
            out.append(f'"{p.text}"' if p.quoted else p.text)
        elif isinstance(p, Quoted):
            out.append(_quoted_always(p))
        else:
            out.append(_bare(p))
    return "".join(out)


def shape(word: Word) -> tuple[tuple[str, str, bool], ...]:
    """What a word is made of for the shell, quoting style aside: its literal text and its
    expansions (as written, and whether double-quoted), in order. Two words of one shape give
    the same value in the same environment."""
    out: list[tuple[str, str, bool]] = []
    for p in word.parts:
        if isinstance(p, Var):
            out.append(("var", p.text, p.quoted))
        elif out and out[-1][0] == "lit":
            out[-1] = ("lit", out[-1][1] + p, False)
        else:
            out.append(("lit", p, False))
    return tuple(out)
