"""Decisions as data: a stable code and its typed parameters (ruff's rule codes, rustc's
diagnostics).

The engine never words a decision for a reader. Where it decides something a reader must be
told — a verdict, a gate, why a layout won or lost, a flag and its reason, a lint finding and
its fix — it returns a ``Decision``: a code declared once with ``Code`` and the values that
code names. ``engine/text/words.py`` words each code once per language from the catalogs
(``data/i18n/<lang>.yaml`` and ``data/i18n/<lang>/*.yaml``, key ``code.<code>``); the CLI
text, the JSON's readable fields, the pages, the Markdown report and the downloads all go
through it, so a Korean page cannot fall back to English and the wording cannot drift from
the decision.

Parameters are typed so each language can show them its own way: a plain ``int`` is a count,
``Bytes`` a memory figure (GiB, exact bytes beside it), ``Tokens`` a token count, ``Percent``
a share, ``Decimal`` a measured or fitted number, ``Name`` a proper name or an identifier
that stays as written in every language (a model, a GPU, a flag, a config field, a value from
a config — shown inert), ``Source`` a citation, a nested ``Decision`` a clause worded by its
own code, and a tuple a list of any of them.

Every code lives in one registry (``CODES``); a test walks it and proves both catalogs word
every code with every one of its parameters.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Union


@dataclass(frozen=True)
class Bytes:
    """A memory figure in bytes (worded as GiB, 2^30)."""

    n: float


@dataclass(frozen=True)
class Tokens:
    """A number of tokens."""

    n: int


@dataclass(frozen=True)
class Percent:
    """A share, 0.0 – 1.0 (worded as a whole percent unless it needs a decimal)."""

    share: float


@dataclass(frozen=True)
class Decimal:
    """A measured or derived number shown with ``digits`` decimals and an optional unit that is
    the same in every language (``ms``, ``tok/s``, ``TB/s``)."""

    value: float
    digits: int = 1
    unit: str = ""


@dataclass(frozen=True)
class Name:
    """A proper name or identifier kept as written in every language: a model, a GPU, a flag,
    a config field, a parser, or a value read from a config (made inert when shown)."""

    text: str


@dataclass(frozen=True)
class Source:
    """A citation: where a rule or a fact was read (shown without the fact base's tags)."""

    text: str


Param = Union[  # a runtime alias with a forward reference
    int, float, bool, Bytes, Tokens, Percent, Decimal, Name, Source, "Decision", tuple[Any, ...]
]


@dataclass(frozen=True)
class Decision:
    """One decision: its code and its parameters (sorted by name, so equal decisions are equal
    and hashable — a Study is cached by scenario and holds many of them)."""

    code: str
    params: tuple[tuple[str, Param], ...] = ()

    def __getitem__(self, name: str) -> Param:
        for key, value in self.params:
            if key == name:
                return value
        raise KeyError(name)

    def __iter__(self) -> Iterator[Any]:
        raise TypeError(f"{self.code}: a decision is not text; word it with text.words.say")

    def __contains__(self, item: object) -> bool:
        raise TypeError(f"{self.code}: a decision is not text; word it with text.words.say")

    def get(self, name: str, default: Param | None = None) -> Param | None:
        return next((v for k, v in self.params if k == name), default)

    @property
    def values(self) -> Mapping[str, Param]:
        return dict(self.params)

    def walk(self) -> Iterator[Decision]:
        """This decision and every decision nested in its parameters."""
        yield self
        for _, value in self.params:
            yield from _nested(value)

    def to_json(self) -> dict[str, Any]:
        """``{"code": …, "params": {…}}`` with numbers as numbers and names as text."""
        return {"code": self.code, "params": {k: _json(v) for k, v in self.params}}


def _nested(value: Any) -> Iterator[Decision]:
    if isinstance(value, Decision):
        yield from value.walk()
    elif isinstance(value, tuple):
        for item in value:
            yield from _nested(item)


def _json(value: Any) -> Any:
    if isinstance(value, Decision):
        return value.to_json()
    if isinstance(value, tuple):
        return [_json(v) for v in value]
    if isinstance(value, Bytes | Tokens):
        return value.n
    if isinstance(value, Percent):
        return value.share
    if isinstance(value, Decimal):
        return value.value
    if isinstance(value, Name | Source):
        return value.text
    return value


_PARAM_TYPES = (bool, int, float, Bytes, Tokens, Percent, Decimal, Name, Source, Decision, tuple)


class Code:
    """A decision code declared once, with the names of its parameters: ``FIT =
    Code("gate.fit.fail", "weights", "usable")``, then ``FIT(weights=Bytes(w), usable=…)``.
    Calling it checks that exactly the declared parameters are given."""

    __slots__ = ("code", "params")
    code: str
    params: frozenset[str]

    def __init__(self, code: str, *params: str) -> None:
        if code in CODES and CODES[code].params != frozenset(params):
            raise ValueError(f"decision code {code!r} declared twice with other parameters")
        self.code = code
        self.params = frozenset(params)
        CODES[code] = self

    def __call__(self, **params: Param) -> Decision:
        if params.keys() != self.params:
            raise TypeError(
                f"{self.code}: parameters {sorted(params)} given, {sorted(self.params)} declared"
            )
        for name, value in params.items():
            if isinstance(value, str):
                raise TypeError(f"{self.code}: {name} is text; wrap it as Name(…) or Source(…)")
            if not isinstance(value, _PARAM_TYPES):
                raise TypeError(f"{self.code}: {name} is a {type(value).__name__}, not a Param")
        return Decision(self.code, tuple(sorted(params.items())))

    def __repr__(self) -> str:
        return f"Code({self.code!r}, {', '.join(sorted(self.params))})"


CODES: dict[str, Code] = {}
