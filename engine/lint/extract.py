"""Find the engine invocation in pasted text: a shell command or script (``vllm serve``,
``python -m vllm.entrypoints.openai.api_server``, ``sglang serve``, ``python -m
sglang.launch_server``, behind environment prefixes, ``export`` lines, ``docker run`` or ``sh
-c``), or a Kubernetes manifest's ``command:`` / ``args:`` lists.

Hostile input is refused early and cheaply: at most 64 KB of text, a bounded ``sh -c`` depth,
YAML with a bounded number of aliases, and one linear pass of the shell tokenizer per level.
"""

from __future__ import annotations

import dataclasses
import itertools
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import yaml

from engine import errors as E
from engine.decision import Code, Decision, Name
from engine.engines import ENGINES, Engine, adapter
from engine.engines import other as other_engine
from engine.errors import InputError
from engine.lint import codes as C
from engine.lint.reach import reach
from engine.lint.rule_data import lint_rules
from engine.lint.shell import (
    Command,
    Word,
    assignment,
    commands,
    literal,
    script_variables,
    tokenize,
)

# A launch command or a pod manifest is a few KB; anything far larger is not one.
MAX_COMMAND_CHARS = 64 * 1024

SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ash"})
MAX_YAML_DEPTH = 64  # a pod manifest nests about ten levels

# what the linter reads, and each way a text can fail to be it (data/i18n/<lang>/errors.yaml)
LAUNCH = Code("error.command.launch")
EMPTY = Code("error.command.empty", "launch")
NO_LAUNCHER = Code("error.command.no_launcher", "launch")
YAML_NO_ENGINE = Code("error.command.yaml_no_engine", "launch")
SH_DEPTH = Code("error.command.sh_depth", "most")
YAML_VALUES = Code("error.command.yaml_values", "most")
YAML_ALIASES = Code("error.command.yaml_aliases", "most")
YAML_DEPTH = Code("error.command.yaml_depth")
YAML_VALID = Code("error.command.yaml_valid")
YAML_VALID_AT = Code("error.command.yaml_valid_at", "line")
YAML_SCALAR = Code("error.command.yaml_scalar", "where", "got")
YAML_LIST = Code("error.command.yaml_list", "where", "got")
WHERE_LIST = Code("error.command.where_list")
TEXT = Code("error.command.text", "got")
SIZE = Code("error.command.size", "most", "got")
NUL = Code("error.command.nul")
ARGUMENTS = Code("error.command.arguments", "most", "got")
# Lines that mark a YAML manifest rather than a shell command ([ \t] only: linear on any input).
_YAML_HINT = re.compile(r"^[ \t]*(?:-[ \t]+)?(?:command|args)[ \t]*:", re.MULTILINE)
_YAML_LIST = re.compile(r"[ \t]*-[ \t]+\S")

NoteKind = Literal["repeated-subcommand", "detached-flag", "dangling-backslash"]


@dataclass(frozen=True)
class ShellNote:
    """Something about the shell text around the command: a doubled subcommand, flags cut off by
    a missing ``\\``, a ``\\`` that continues onto nothing."""

    kind: NoteKind
    line: int
    words: tuple[str, ...] = ()


@dataclass(frozen=True)
class Invocation:
    engine: Engine
    launcher: tuple[str, ...]  # the words that start the engine, as written
    env_prefix: tuple[str, ...]  # NAME=value words on the same command, before the launcher
    args: tuple[Word, ...]  # the words the engine receives
    detached: tuple[Word, ...]  # flags on lines of their own after the command
    env: Mapping[str, str]  # environment the script sets (exported or prefixed), single values
    variables: Mapping[str, tuple[str, ...]]  # every value each script variable takes
    parsed_from: Literal["shell", "yaml"]
    inferred: bool = False  # args-only manifest: engine read from the flags
    notes: tuple[ShellNote, ...] = ()
    yaml_launcher: tuple[str, ...] = ()  # a manifest's launcher words (command: list)
    prefix_words: tuple[Word, ...] = ()  # env_prefix as parsed (quoting and expansions kept)
    launcher_words: tuple[Word, ...] = ()  # launcher as parsed
    # why bash never runs this command as written (in a here-document's text, a function never
    # called, a branch that cannot run, after exit), or why what it runs is not known from the
    # text: linted as written, with no corrected command
    not_run: Decision | None = None

    @property
    def launcher_text(self) -> str:
        return " ".join(self.launcher)

    def readings(self, limit: int) -> list[dict[str, str]]:
        """The variable values to expand the arguments with: one mapping per combination of
        the values a variable takes in different branches of the script (at most ``limit``)."""
        used: list[str] = []
        for w in (*self.args, *self.detached):
            for v in w.variables:
                if v.resolvable and v.name not in used:
                    used.append(v.name)
        single = {k: v[0] for k, v in self.variables.items() if len(v) == 1}
        multi = [(k, self.variables[k]) for k in used if len(self.variables.get(k, ())) > 1]
        if not multi:
            return [single]
        names = [k for k, _ in multi]
        counts = {len(v) for _, v in multi}
        if len(counts) == 1:
            # the same number of values each: one per branch of an if / else, set together
            combos: Iterable[tuple[str, ...]] = zip(*(v for _, v in multi), strict=True)
        else:
            combos = itertools.product(*(v for _, v in multi))
        return [
            single | dict(zip(names, combo, strict=True))
            for combo in itertools.islice(combos, limit)
        ]


# --- shell ----------------------------------------------------------------------------------


def _base(word: str) -> str:
    return word.rsplit("/", 1)[-1]


@dataclass
class _Found:
    engine: Engine
    launcher_start: int
    args_start: int
    env: dict[str, str] = field(default_factory=dict)


def _docker(words: list[str], i: int) -> tuple[int, str, dict[str, str], bool] | None:
    """``docker run [options] IMAGE ...`` starting at ``words[i]``: the image's index, the
    image, the environment given with -e / --env, and whether --entrypoint replaces the image's."""
    rules = lint_rules().docker_run
    if _base(words[i]) not in rules.programs or i + 1 >= len(words) or words[i + 1] != "run":
        return None
    env: dict[str, str] = {}
    entrypoint = False
    j = i + 2
    while j < len(words):
        w = words[j]
        if w == "--":
            j += 1
            break
        if not w.startswith("-"):
            break
        name, eq, inline = w.partition("=")
        if name in rules.options_with_value:
            value = inline if eq else (words[j + 1] if j + 1 < len(words) else "")
            if name in rules.env_options and "=" in value:
                k, _, v = value.partition("=")
                env[k] = v
            entrypoint = entrypoint or name == "--entrypoint"
            j += 1 if eq else 2
        else:
            j += 1
    if j >= len(words):
        return None
    return j, words[j], env, entrypoint


def _find_launcher(words: list[str]) -> _Found | None:
    """The first engine launcher among ``words`` (expanded text), or None. A ``docker run`` whose
    image's entrypoint is the launcher counts when no launcher follows the image."""
    rules = lint_rules()
    env: dict[str, str] = {}
    pending: _Found | None = None
    i = 0
    while i < len(words):
        w = words[i]
        base = _base(w)
        nxt = words[i + 1] if i + 1 < len(words) else ""
        engine = rules.program(base, nxt)
        if engine is not None:
            return _Found(engine, i, i + 2, env)
        if base.startswith("python") or base in ("uv", "uvx"):
            for j in range(i + 1, min(i + 6, len(words) - 1)):
                if words[j] == "-m":
                    engine = rules.module(words[j + 1])
                    if engine is not None:
                        return _Found(engine, i, j + 2, env)
                    break
        docker = _docker(words, i)
        if docker is not None:
            image_at, image, docker_env, entrypoint = docker
            env.update(docker_env)
            row = rules.entrypoint(image)
            # `IMAGE bash -lc '...'`: the script the author means to run, not entrypoint args
            scripted = _dash_c(words[image_at + 1 :]) is not None
            pending = (
                _Found(row.engine, i, image_at + 1, dict(env))
                if row is not None and not entrypoint and not scripted
                else None
            )
            i = image_at + 1
            continue
        i += 1
    return pending


def _dash_c(words: list[str]) -> int | None:
    """The index of the script word in ``sh [-opts] -c SCRIPT``, or None."""
    for i, w in enumerate(words[:-1]):
        if _base(w) in SHELLS:
            for j in range(i + 1, min(i + 4, len(words) - 1)):
                if words[j] == "-c" or (words[j].startswith("-") and words[j].endswith("c")):
                    return j + 1
                if not words[j].startswith("-"):
                    break
    return None


def _feeds_shell(cmd: Command, expanded: list[str]) -> bool:
    """The command is a shell reading its script from standard input (``bash <<EOF``,
    ``bash -s``, ``docker exec -i c sh <<'EOF'``): its here-document is that script."""
    at = next((i for i, w in enumerate(expanded) if _base(w) in SHELLS), None)
    if at is None or not cmd.heredocs:
        return False
    rest = expanded[at + 1 :]
    return all(w.startswith("-") and w != "-c" for w in rest) or rest[:1] == ["-s"]


def _in_heredocs(
    cmd: Command,
    expanded: list[str],
    why: Decision | None,
    parsed_from: Literal["shell", "yaml"],
    depth: int,
) -> Invocation | None:
    """The engine command in the here-documents of ``cmd``: a script where they feed a shell
    (one the outer shell expands first, when its delimiter is unquoted: not known as written),
    else text the script hands a command (never run as written)."""
    shell = _feeds_shell(cmd, expanded)
    for doc in cmd.heredocs:
        try:
            inner = _from_shell(doc.body, parsed_from, depth + 1)
        except InputError:  # text that is no script ("it's ..."): no command in it
            continue
        if inner is None:
            continue
        if not shell:
            reason: Decision | None = C.IN_HEREDOC(line=doc.line)
        elif not doc.quoted and any(ch in doc.body for ch in "$`\\"):
            reason = C.EXPANDED_HEREDOC(line=doc.line)
        else:
            reason = None
        return _not_run(inner, why or reason)
    return None


def _not_run(inv: Invocation, why: Decision | None) -> Invocation:
    if why is None or inv.not_run is not None:
        return inv
    return dataclasses.replace(inv, not_run=why)


def _from_shell(
    text: str, parsed_from: Literal["shell", "yaml"], depth: int = 0
) -> Invocation | None:
    """The first engine command bash would run in ``text`` (a here-document feeding a shell and
    ``sh -c`` read as scripts); where none would run, the first one written (``not_run`` says
    why), or None."""
    limit = int(lint_rules().thresholds.max_sh_c_depth.value)
    if depth > limit:
        raise InputError("command", SH_DEPTH(most=limit))
    toks = tokenize(text)
    cmds = commands(toks.tokens)
    variables = script_variables(cmds)
    single = {k: v[0] for k, v in variables.items() if len(v) == 1}
    reached = reach(cmds)
    written: Invocation | None = None  # the first engine command bash never runs
    for k, cmd in enumerate(cmds):
        expanded = [w.expand(single) for w in cmd.words]
        found = _find_launcher(expanded)
        inv: Invocation | None = None
        if found is not None:
            inv = _not_run(
                _invocation(cmds, k, found, variables, toks.dangling, parsed_from), reached[k]
            )
        elif (script_at := _dash_c(expanded)) is not None:
            inv = _from_shell(expanded[script_at], parsed_from, depth + 1)
            inv = _not_run(inv, reached[k]) if inv is not None else None
        elif cmd.heredocs:
            inv = _in_heredocs(cmd, expanded, reached[k], parsed_from, depth)
        if inv is not None and inv.not_run is None:
            return inv
        written = written or inv
    return written


def _invocation(
    cmds: list[Command],
    k: int,
    found: _Found,
    variables: dict[str, tuple[str, ...]],
    dangling: tuple[int, ...],
    parsed_from: Literal["shell", "yaml"],
) -> Invocation:
    cmd = cmds[k]
    words = cmd.words
    env: dict[str, str] = {}
    for name, values in variables.items():
        if len(values) == 1:
            env[name] = values[0]
    prefix: list[Word] = []
    for w in words[: found.launcher_start]:
        pair = assignment(w)
        if pair is not None:
            prefix.append(w)
            env[pair[0]] = pair[1].text
    env.update(found.env)
    launcher_words = words[found.launcher_start : found.args_start]
    launcher = tuple(w.text for w in launcher_words)
    args = words[found.args_start :]
    notes: list[ShellNote] = []
    if args and args[0].text == launcher[-1] == "serve":
        notes.append(ShellNote("repeated-subcommand", args[0].line, ("serve",)))
        args = args[1:]
    detached: list[Word] = []
    if cmd.end == "\n":
        for nxt in cmds[k + 1 :]:
            first = nxt.words[0].text
            if len(first) > 1 and first.startswith("-") and not first[1].isdigit():
                detached.extend(nxt.words)
                notes.append(ShellNote("detached-flag", nxt.line, tuple(w.text for w in nxt.words)))
                if nxt.end != "\n":
                    break
            else:
                break
    last = (detached[-1] if detached else (args[-1] if args else words[-1])).line
    for line in dangling:
        if cmd.line <= line <= last + 1:
            notes.append(ShellNote("dangling-backslash", line))
    return Invocation(
        engine=found.engine,
        launcher=launcher,
        env_prefix=tuple(w.text for w in prefix),
        args=tuple(args),
        detached=tuple(detached),
        env=env,
        variables=variables,
        parsed_from=parsed_from,
        notes=tuple(notes),
        prefix_words=tuple(prefix),
        launcher_words=tuple(launcher_words),
    )


# --- YAML -----------------------------------------------------------------------------------


# libyaml when the wheel has it (about ten times faster on a 64 KB manifest), else pure Python.
_LOADER: Any = yaml.CSafeLoader if yaml.__with_libyaml__ else yaml.SafeLoader
_OPENS = (yaml.SequenceStartEvent, yaml.MappingStartEvent)
_CLOSES = (yaml.SequenceEndEvent, yaml.MappingEndEvent)


def _yaml_docs(text: str) -> list[Any]:
    """The documents of ``text``, after a pass over the parser's events (no recursion, no
    expansion) has refused an alias bomb or nesting too deep for the composer's recursion."""
    limit = int(lint_rules().thresholds.max_yaml_aliases.value)
    most = 4 * int(lint_rules().thresholds.max_arguments.value)
    try:
        aliases = depth = 0
        for count, event in enumerate(yaml.parse(text, Loader=_LOADER), 1):
            if count > most:
                raise InputError("command", YAML_VALUES(most=most))
            if isinstance(event, yaml.AliasEvent):
                aliases += 1
                if aliases > limit:
                    raise InputError("command", YAML_ALIASES(most=limit))
            elif isinstance(event, _OPENS):
                depth += 1
                if depth > MAX_YAML_DEPTH:
                    raise InputError("command", YAML_DEPTH())
            elif isinstance(event, _CLOSES):
                depth -= 1
        return list(yaml.load_all(text, Loader=_LOADER))
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        valid = YAML_VALID_AT(line=mark.line + 1) if mark is not None else YAML_VALID()
        raise InputError("command", valid) from None
    except RecursionError:
        raise InputError("command", YAML_DEPTH()) from None


def _yaml_scalar(value: object, where: Name | Decision) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int | float):
        return str(value)
    raise InputError("command", YAML_SCALAR(where=where, got=E.got(value)))


def _yaml_words(value: object, where: Name | Decision) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [_yaml_scalar(v, where) for v in value]
    raise InputError("command", YAML_LIST(where=where, got=Name(type(value).__name__)))


def _containers(node: object) -> Iterator[Mapping[str, object]]:
    """Every mapping with a ``command`` or ``args`` key, each shared node visited once."""
    seen: set[int] = set()
    stack: list[tuple[object, int]] = [(node, 0)]
    found: list[Mapping[str, object]] = []
    while stack:
        item, depth = stack.pop()
        if id(item) in seen or not isinstance(item, Mapping | list):
            continue
        seen.add(id(item))
        if depth > MAX_YAML_DEPTH:
            raise InputError("command", YAML_DEPTH())
        if isinstance(item, Mapping):
            if "command" in item or "args" in item:
                found.append(item)
            children: Iterable[object] = list(item.values())
        else:
            children = item
        stack.extend((c, depth + 1) for c in reversed(list(children)))
    yield from found


def _infer_engine(args: list[str]) -> Engine | None:
    counts: dict[Engine, int] = {}
    for engine in ENGINES:
        table = adapter(engine).flags
        counts[engine] = sum(1 for a in args if a.startswith("--") and a.split("=")[0] in table)
    best = max(ENGINES, key=lambda e: counts[e])
    other: Engine = other_engine(best)
    if counts[best] == 0 or counts[best] == counts[other]:
        return None
    return best


def _literal(words: list[str]) -> tuple[Word, ...]:
    return tuple(literal(w) for w in words)


def _from_yaml(text: str) -> Invocation:
    for doc in _yaml_docs(text):
        groups: list[tuple[list[str], list[str]]] = []
        if isinstance(doc, list) and all(not isinstance(v, dict | list) for v in doc):
            groups.append(([], _yaml_words(doc, WHERE_LIST())))
        for c in _containers(doc):
            groups.append(
                (
                    _yaml_words(c.get("command"), Name("command:")),
                    _yaml_words(c.get("args"), Name("args:")),
                )
            )
        for command, args in groups:
            words = command + args
            script_at = _dash_c(words)
            if script_at is not None:
                inner = _from_shell(words[script_at], "yaml", 1)
                if inner is not None:
                    return inner
            found = _find_launcher(words)
            if found is not None:
                return Invocation(
                    engine=found.engine,
                    launcher=tuple(words[found.launcher_start : found.args_start]),
                    env_prefix=(),
                    args=_literal(words[found.args_start :]),
                    detached=(),
                    env=found.env,
                    variables={},
                    parsed_from="yaml",
                    yaml_launcher=tuple(words[: found.args_start]),
                )
            engine = _infer_engine(words)
            if engine is not None:  # args-only: the image's entrypoint launches the engine
                return Invocation(
                    engine=engine,
                    launcher=(),
                    env_prefix=(),
                    args=_literal(words),
                    detached=(),
                    env={},
                    variables={},
                    parsed_from="yaml",
                    inferred=True,
                )
    raise InputError("command", YAML_NO_ENGINE(launch=LAUNCH()))


# --- entry point ----------------------------------------------------------------------------


def extract(text: str) -> Invocation:
    """The engine invocation in ``text``; ``InputError("command", ...)`` when there is none."""
    if not isinstance(text, str):
        raise InputError("command", TEXT(got=Name(type(text).__name__)))
    if len(text) > MAX_COMMAND_CHARS:
        raise InputError("command", SIZE(most=MAX_COMMAND_CHARS // 1024, got=len(text)))
    if "\x00" in text:
        raise InputError("command", NUL())
    if not text.strip():
        raise InputError("command", EMPTY(launch=LAUNCH()))
    first_line = next(line for line in text.splitlines() if line.strip())
    if _YAML_HINT.search(text) or _YAML_LIST.match(first_line):
        inv = _from_yaml(text)
    else:
        found = _from_shell(text, "shell")
        if found is None:
            raise InputError("command", NO_LAUNCHER(launch=LAUNCH()))
        inv = found
    most = int(lint_rules().thresholds.max_arguments.value)
    if len(inv.args) + len(inv.detached) > most:
        raise InputError("command", ARGUMENTS(most=most, got=len(inv.args) + len(inv.detached)))
    return inv
