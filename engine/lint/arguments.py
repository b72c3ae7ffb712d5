"""The engine's arguments as its own argparse would read them, against the pinned flag tables:
``--flag value`` and ``--flag=value``, vLLM's ``_`` → ``-`` and ``--config.key`` spellings,
SGLang's unique-prefix abbreviations, on/off switches and their ``--no-`` / ``--disable-`` forms,
and the positional model of ``vllm serve``."""

from __future__ import annotations

import bisect
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache, lru_cache
from typing import TYPE_CHECKING

from engine.engines import Engine, adapter

if TYPE_CHECKING:
    from engine.engines.cli_table import FlagInfo

_NUMBER = re.compile(r"-?[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")


@dataclass(frozen=True)
class Arg:
    """One option as written: ``index`` is its word's position in the arguments and ``span`` the
    number of words it takes (2 when the value is a separate word)."""

    written: str  # the spelling in the command (without =value)
    canonical: str | None  # the engine's own spelling; None: not a flag of this engine
    value: str | None
    info: FlagInfo | None
    index: int
    span: int = 1
    negated: bool = False  # the --disable-x / --no-x spelling of an on/off option
    abbreviation_of: str | None = None
    missing_value: bool = False
    inline_value_on_switch: bool = False


@dataclass
class Parsed:
    args: list[Arg] = field(default_factory=list)
    positionals: list[tuple[int, str]] = field(default_factory=list)  # (index, word)
    stray: list[tuple[int, str, str | None]] = field(default_factory=list)  # (index, word, after)
    ambiguous: list[tuple[Arg, tuple[str, ...]]] = field(default_factory=list)
    last: dict[str, Arg] = field(default_factory=dict)  # argparse's last-one-wins view

    def value(self, canonical: str) -> str | None:
        arg = self.last.get(canonical)
        return None if arg is None else arg.value

    def on(self, canonical: str) -> bool:
        arg = self.last.get(canonical)
        return arg is not None and not arg.negated

    def spans(self) -> Mapping[int, int]:
        return {a.index: a.span for a in self.args}


def is_flag(token: str) -> bool:
    return token.startswith("-") and len(token) > 1 and not _NUMBER.fullmatch(token)


@cache
def _spellings(engine: Engine) -> tuple[str, ...]:
    return tuple(sorted(adapter(engine).flags))


def prefixed(engine: Engine, prefix: str) -> list[str]:
    """Every spelling of the engine's table that starts with ``prefix`` (a binary search)."""
    names = _spellings(engine)
    start = bisect.bisect_left(names, prefix)
    end = start
    while end < len(names) and names[end].startswith(prefix):
        end += 1
    return list(names[start:end])


@lru_cache(maxsize=4096)
def _lookup(engine: Engine, name: str) -> tuple[FlagInfo | None, str | None, tuple[str, ...]]:
    """The option a spelling names, the full spelling it abbreviates (SGLang: argparse accepts
    a unique prefix), and the candidates when the prefix is ambiguous."""
    table = adapter(engine).flags
    if name in table:
        return table[name], None, ()
    eng = adapter(engine)
    if not eng.allows_abbreviation:
        return eng.lookup(name), None, ()
    if name.startswith("--"):
        spellings = prefixed(engine, name)
        matches = tuple(sorted({table[k].flag for k in spellings}))
        if len(matches) == 1:
            return table[spellings[0]], spellings[0], ()
        if len(matches) > 1:
            return None, None, tuple(spellings)
    return None, None, ()


def parse(engine: Engine, words: tuple[str, ...]) -> Parsed:
    out = Parsed()
    i = 0
    last_flag: str | None = None
    while i < len(words):
        token = words[i]
        start = i
        if token == "--":
            out.positionals.extend((k, w) for k, w in enumerate(words[i + 1 :], i + 1))
            break
        if not is_flag(token):
            if adapter(engine).model_positional and not out.positionals and not out.args:
                out.positionals.append((i, token))  # vllm serve MODEL
            else:
                out.stray.append((i, token, last_flag))
            i += 1
            continue
        name, eq, inline = token.partition("=")
        info, abbrev, ambiguous = _lookup(engine, name)
        value: str | None = inline if eq else None
        if info is None:
            if value is None and i + 1 < len(words) and not is_flag(words[i + 1]):
                value = words[i + 1]  # an unknown flag probably takes the next bare word
                i += 1
            arg = Arg(name, None, value, None, start, i - start + 1)
            if ambiguous:
                out.ambiguous.append((arg, ambiguous))
            out.args.append(arg)
        elif info.takes_value:
            missing = False
            if value is None:
                if i + 1 < len(words) and not is_flag(words[i + 1]):
                    value = words[i + 1]
                    i += 1
                elif re.fullmatch(r"-O[0-9]+", name):
                    value = name[2:]
                else:
                    missing = True
            arg = Arg(
                name,
                info.flag,
                value,
                info,
                start,
                i - start + 1,
                abbreviation_of=abbrev,
                missing_value=missing,
            )
            out.args.append(arg)
            if "." not in name:  # --config.key merges into --config
                out.last[info.flag] = arg
        else:
            arg = Arg(
                name,
                info.flag,
                value,
                info,
                start,
                1,
                negated=info.is_negation(name),
                abbreviation_of=abbrev,
                inline_value_on_switch=value is not None,
            )
            out.args.append(arg)
            out.last[info.flag] = arg
        last_flag = name
        i += 1
    return out
