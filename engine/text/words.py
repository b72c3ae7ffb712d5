"""Decisions in words: each code of ``engine.decision`` worded once per language.

``say(decision, lang)`` looks up ``code.<code>`` in the language's catalog and fills it with the
decision's parameters, each shown the language's way (a memory figure in GiB, a count with
separators, a name as written, on one line and inert, a nested decision worded by its own code).
This is the only place a decision becomes text: pages, the CLI, the JSON's readable fields, the
Markdown report and the scripts' comments all call it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from engine.decision import Bytes, Decimal, Decision, Name, Percent, Source, Tokens
from engine.i18n import DEFAULT_LANG, Lang, t
from engine.text.safe import inert, one_line
from engine.text.sources import clean
from engine.text.units import GIB, percent


def _value(value: Any, lang: Lang, markdown: bool = True) -> str:
    if isinstance(value, Decision):
        return say(value, lang, markdown=markdown)
    if isinstance(value, tuple):
        return t("words.list_sep", lang).join(_value(v, lang, markdown) for v in value)
    if isinstance(value, bool):
        return t("common.yes" if value else "common.no", lang)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,g}"
    if isinstance(value, Bytes):
        digits = 1 if abs(value.n) >= 10 * GIB else 2
        return f"{value.n / GIB:,.{digits}f} GiB"
    if isinstance(value, Tokens):
        return f"{value.n:,}"
    if isinstance(value, Percent):
        return percent(value.share)
    if isinstance(value, Decimal):
        number = f"{value.value:,.{value.digits}f}"
        return f"{number} {value.unit}" if value.unit else number
    if isinstance(value, Name):
        return inert(value.text, one_line=True) if markdown else one_line(value.text)
    if isinstance(value, Source):
        return clean(value.text)
    raise TypeError(f"not a decision parameter: {type(value).__name__}")


def say(decision: Decision, lang: Lang = DEFAULT_LANG, *, markdown: bool = True) -> str:
    """``decision`` worded in ``lang``. ``markdown=False``: for a place that renders no Markdown
    (a table cell, a terminal, JSON), names are shown as written with only their control
    characters escaped, not Markdown-escaped."""
    params = {name: _value(value, lang, markdown) for name, value in decision.params}
    return t("code." + decision.code, lang, **params)


def say_all(decisions: Iterable[Decision], lang: Lang = DEFAULT_LANG) -> list[str]:
    return [say(d, lang) for d in decisions]


def as_json(decision: Decision) -> dict[str, Any]:
    """A decision for the JSON outputs: its code, its parameters and the English sentence."""
    return {**decision.to_json(), "text": say(decision, DEFAULT_LANG)}


def sources(decisions: Iterable[Decision]) -> list[str]:
    """Every citation in ``decisions`` (nested ones too), in order, once each."""
    found: list[str] = []
    for d in decisions:
        for inner in d.walk():
            found += [v.text for _, v in inner.params if isinstance(v, Source)]
    return list(dict.fromkeys(found))
