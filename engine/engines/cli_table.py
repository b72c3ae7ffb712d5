"""The serving engines' own CLI tables, pinned to the version they were extracted from, read the
same way for every engine; what differs in how an engine's parser reads them (vLLM's ``_`` and
``--config.key`` spellings, SGLang's unique prefixes, which listed choices argparse enforces,
the registries' shapes) is the adapter's (``engine.engines.vllm`` / ``engine.engines.sglang``).

``data/engines/<engine>-<version>-flags.json`` lists every option the engine's argparse parser
accepts; ``<engine>-<version>-registries.json`` the live registries behind the open-ended options.
Where several versions of an engine's tables sit in ``data/engines/``, the newest is used.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from engine.rules import DATA_DIR
from engine.versions import latest

ENGINES_DIR = DATA_DIR / "engines"

ChoicesSource = Literal["argparse", "registry", "metavar-open", "none"]

# argparse action classes that consume no value on the command line.
_NO_VALUE_ACTIONS = frozenset(
    {
        "_StoreTrueAction",
        "_StoreFalseAction",
        "_StoreConstAction",
        "_CountAction",
        "BooleanOptionalAction",
        "EnableDisableAction",
        "DeprecatedStoreTrueAction",
    }
)
# Boolean actions whose aliases include the spelling that turns the option off.
_NEGATABLE_ACTIONS = frozenset({"BooleanOptionalAction", "EnableDisableAction"})


@dataclass(frozen=True)
class FlagInfo:
    """One engine option, shared by all its spellings.

    ``choices`` are argparse choices where the parser enforces them, else the registry values the
    engine validates at start-up, else the open list vLLM shows in the metavar (other strings
    accepted); ``choices_source`` says which, and ``choices_enforced`` is False only for open lists.
    ``dest`` is the option's argparse destination, the name the settings table keys on.
    """

    flag: str
    aliases: tuple[str, ...]
    negations: tuple[str, ...]
    choices: tuple[str, ...] | None
    choices_enforced: bool
    choices_source: ChoicesSource
    takes_value: bool
    deprecated: bool
    default: Any
    help: str
    group: str | None
    dest: str = ""

    @property
    def spellings(self) -> tuple[str, ...]:
        return (self.flag, *self.aliases)

    def is_negation(self, spelling: str) -> bool:
        """True for the "off" spelling of a boolean option (``--no-enable-prefix-caching``)."""
        return spelling in self.negations


class FlagRow(BaseModel):
    """A row of ``<engine>-<version>-flags.json`` as the extractor wrote it."""

    model_config = ConfigDict(extra="allow", frozen=True)

    flag: str = Field(min_length=1)
    aliases: list[str]
    choices: list[str | int | float | None] | None  # None marks an optional Literal
    choices_source: str | None = None  # vLLM only: "argparse" or "metavar(...)"
    default: Any = None
    help: str | None = None
    dest: str
    group: str | None = None
    action: str
    type: str | None = None
    nargs: int | str | None = None
    deprecated: bool
    positional: bool
    registry_values: list[str] | None = None


@dataclass(frozen=True)
class Registries:
    """The live registries of one engine release."""

    version: str
    tool_call_parsers: frozenset[str]
    reasoning_parsers: frozenset[str]
    quantization_methods: frozenset[str]
    kv_cache_dtypes: frozenset[str]
    attention_backends: frozenset[str]
    model_architectures: frozenset[str] | None


@cache
def table_path(engine: str, kind: Literal["flags", "registries"]) -> Path:
    """The JSON file a table is read from (shown as the source of flag facts)."""
    pattern = re.compile(rf"^{re.escape(engine)}-(.+)-{kind}\.json$")
    found = {m.group(1): p for p in ENGINES_DIR.iterdir() if (m := pattern.match(p.name))}
    if not found:
        raise FileNotFoundError(f"no {engine}-<version>-{kind}.json in {ENGINES_DIR}")
    return found[latest(list(found))]


def read_json(engine: str, kind: Literal["flags", "registries"]) -> Any:
    return json.loads(table_path(engine, kind).read_text(encoding="utf-8"))


def _negations(row: FlagRow) -> tuple[str, ...]:
    if row.action not in _NEGATABLE_ACTIONS:
        return ()
    flag = row.flag
    out: list[str] = []
    for alias in row.aliases:
        if (
            alias == "--no-" + flag[2:]
            or (flag.startswith("--enable-") and alias == "--disable-" + flag[9:])
            or (flag.startswith("--disable-") and alias == "--enable-" + flag[10:])
        ):
            out.append(alias)
    return tuple(out)


def _choices(row: FlagRow, listed_enforced: bool) -> tuple[tuple[str, ...] | None, ChoicesSource]:
    # Command-line tokens are strings; a None choice is the unset default, not a typeable value.
    listed = None if row.choices is None else tuple(str(c) for c in row.choices if c is not None)
    open_metavar = (row.choices_source or "").startswith("metavar(open")
    if listed is not None and (listed_enforced or row.choices_source == "argparse"):
        return listed, "argparse"
    if row.registry_values is not None and not open_metavar:
        return tuple(row.registry_values), "registry"
    if listed is not None and not open_metavar:
        # e.g. vLLM --tool-call-parser: the registry, plus names added by --tool-parser-plugin.
        return listed, "registry"
    if listed is not None:
        return listed, "metavar-open"
    return None, "none"


def _to_info(row: FlagRow, listed_enforced: bool) -> FlagInfo:
    choices, source = _choices(row, listed_enforced)
    return FlagInfo(
        flag=row.flag,
        aliases=tuple(row.aliases),
        negations=_negations(row),
        choices=choices,
        choices_enforced=source in ("argparse", "registry"),
        choices_source=source,
        takes_value=row.nargs != 0 and row.action not in _NO_VALUE_ACTIONS,
        deprecated=row.deprecated,
        default=row.default,
        help=row.help or "",
        group=row.group,
        dest=row.dest,
    )


def load_flag_table(engine: str, listed_enforced: bool) -> dict[str, FlagInfo]:
    """Every spelling of ``engine``'s pinned table, aliases and ``--no-X`` included.
    ``listed_enforced``: every listed choice is argparse-enforced (SGLang's parser)."""
    table: dict[str, FlagInfo] = {}
    for raw in read_json(engine, "flags"):
        row = FlagRow.model_validate(raw)
        if row.positional:
            continue
        info = _to_info(row, listed_enforced)
        for spelling in info.spellings:
            if spelling in table:
                raise ValueError(f"{engine}: {spelling} is spelled by two options")
            table[spelling] = info
    return table
