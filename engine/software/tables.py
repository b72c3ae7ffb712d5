"""The serving engines' own CLI tables, pinned to the version they were extracted from.

``data/engines/<engine>-<version>-flags.json`` lists every option the engine's argparse parser
accepts; ``<engine>-<version>-registries.json`` lists the live registries behind the open-ended
options (tool-call and reasoning parsers, quantization methods, KV-cache dtypes, attention
backends). Both were produced by ``tools/extract_engine_flags.py`` from the installed package, so
a command built or linted against them uses only spellings and values that engine accepts.

Where several versions of an engine's tables sit in ``data/engines/``, the newest is used.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

from engine.errors import InputError
from engine.rules import DATA_DIR
from engine.software.versions import latest

Engine = Literal["vllm", "sglang"]
ENGINES: tuple[Engine, ...] = get_args(Engine)
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

    @property
    def spellings(self) -> tuple[str, ...]:
        return (self.flag, *self.aliases)

    def is_negation(self, spelling: str) -> bool:
        """True for the "off" spelling of a boolean option (``--no-enable-prefix-caching``)."""
        return spelling in self.negations


class _FlagRow(BaseModel):
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


class _VllmRegistries(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)

    vllm_version: str
    tool_call_parsers: list[str] = Field(min_length=1)
    reasoning_parsers: list[str] = Field(min_length=1)
    quantization_methods: list[str] = Field(min_length=1)
    kv_cache_dtypes_registered: list[str] = Field(min_length=1)
    attention_backends: dict[str, str | None]
    model_architectures: list[str] | None = None  # written by newer extractor runs only


class _SglangRegistries(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)

    sglang_version: str
    tool_call_parsers_live: list[str] | None = None
    reasoning_parsers_live: list[str] | None = None
    tool_call_parser_names_static: list[str] = Field(min_length=1)
    reasoning_parser_names_static: list[str] = Field(min_length=1)
    choices_module: dict[str, list[str]]
    model_architectures: list[str] | None = None  # written by newer extractor runs only


@dataclass(frozen=True)
class _Registries:
    version: str
    tool_call_parsers: frozenset[str]
    reasoning_parsers: frozenset[str]
    quantization_methods: frozenset[str]
    kv_cache_dtypes: frozenset[str]
    attention_backends: frozenset[str]
    model_architectures: frozenset[str] | None


def _check_engine(engine: str) -> Engine:
    if engine not in ENGINES:
        raise InputError("engine", f"one of {', '.join(ENGINES)}")
    return engine


@cache
def _table_path(engine: Engine, kind: Literal["flags", "registries"]) -> Path:
    pattern = re.compile(rf"^{engine}-(.+)-{kind}\.json$")
    found = {m.group(1): p for p in ENGINES_DIR.iterdir() if (m := pattern.match(p.name))}
    if not found:
        raise FileNotFoundError(f"no {engine}-<version>-{kind}.json in {ENGINES_DIR}")
    return found[latest(list(found))]


def table_path(engine: Engine, kind: Literal["flags", "registries"]) -> Path:
    """The JSON file a table is read from (shown as the source of flag facts)."""
    return _table_path(_check_engine(engine), kind)


def _negations(row: _FlagRow) -> tuple[str, ...]:
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


def _choices(row: _FlagRow, engine: Engine) -> tuple[tuple[str, ...] | None, ChoicesSource]:
    # Command-line tokens are strings; a None choice is the unset default, not a typeable value.
    listed = None if row.choices is None else tuple(str(c) for c in row.choices if c is not None)
    open_metavar = (row.choices_source or "").startswith("metavar(open")
    if listed is not None and (engine == "sglang" or row.choices_source == "argparse"):
        return listed, "argparse"
    if row.registry_values is not None and not open_metavar:
        return tuple(row.registry_values), "registry"
    if listed is not None and not open_metavar:
        # e.g. vLLM --tool-call-parser: the registry, plus names added by --tool-parser-plugin.
        return listed, "registry"
    if listed is not None:
        return listed, "metavar-open"
    return None, "none"


def _to_info(row: _FlagRow, engine: Engine) -> FlagInfo:
    choices, source = _choices(row, engine)
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
    )


@cache
def _flag_table(engine: Engine) -> Mapping[str, FlagInfo]:
    rows = json.loads(_table_path(engine, "flags").read_text(encoding="utf-8"))
    table: dict[str, FlagInfo] = {}
    for raw in rows:
        row = _FlagRow.model_validate(raw)
        if row.positional:
            continue
        info = _to_info(row, engine)
        for spelling in info.spellings:
            if spelling in table:
                raise ValueError(f"{engine}: {spelling} is spelled by two options")
            table[spelling] = info
    return table


def flag_table(engine: Engine) -> Mapping[str, FlagInfo]:
    """Every option spelling the engine's parser accepts (aliases and ``--no-X`` included).
    Read-only and loaded once: callers share the one table."""
    return MappingProxyType(_flag_table(_check_engine(engine)))


def lookup_flag(engine: Engine, spelling: str) -> FlagInfo | None:
    """The option a command-line token names, or None.

    Accepts ``--flag=value``. For vLLM also ``--flag_with_underscores`` (its FlexibleArgumentParser
    turns ``_`` into ``-`` in option names) and ``--json-option.key`` / ``-cc.key`` (dotted keys
    into a dict-valued option such as ``--speculative-config.method``). For SGLang also a unique
    prefix (``--tp`` for ``--tp-size``): its parser is a plain ``argparse.ArgumentParser``, whose
    ``allow_abbrev`` is on.
    """
    table = _flag_table(_check_engine(engine))
    name = spelling.split("=", 1)[0]
    if name in table:
        return table[name]
    if engine == "vllm" and name.startswith("-"):
        dashes = "--" if name.startswith("--") else "-"
        dashed = dashes + name[len(dashes) :].replace("_", "-")
        if dashed in table:
            return table[dashed]
        head = dashed.split(".", 1)[0]
        if "." in dashed and head in table and table[head].takes_value:
            return table[head]
    if engine == "sglang" and name.startswith("--"):
        owners = {id(info): info for flag, info in table.items() if flag.startswith(name)}
        if len(owners) == 1:
            return next(iter(owners.values()))
    return None


@cache
def _registries(engine: Engine) -> _Registries:
    raw = json.loads(_table_path(engine, "registries").read_text(encoding="utf-8"))
    archs: list[str] | None
    if engine == "vllm":
        v = _VllmRegistries.model_validate(raw)
        archs = v.model_architectures
        return _Registries(
            version=v.vllm_version,
            tool_call_parsers=frozenset(v.tool_call_parsers),
            reasoning_parsers=frozenset(v.reasoning_parsers),
            quantization_methods=frozenset(v.quantization_methods),
            kv_cache_dtypes=frozenset(v.kv_cache_dtypes_registered),
            attention_backends=frozenset(v.attention_backends),
            model_architectures=frozenset(archs) if archs is not None else None,
        )
    s = _SglangRegistries.model_validate(raw)
    flags = _flag_table(engine)
    kv = flags["--kv-cache-dtype"].choices or ()
    archs = s.model_architectures
    return _Registries(
        version=s.sglang_version,
        tool_call_parsers=frozenset(s.tool_call_parsers_live or s.tool_call_parser_names_static),
        reasoning_parsers=frozenset(s.reasoning_parsers_live or s.reasoning_parser_names_static),
        quantization_methods=frozenset(s.choices_module["QUANTIZATION_CHOICES"]),
        kv_cache_dtypes=frozenset(kv),
        attention_backends=frozenset(s.choices_module["ATTENTION_BACKEND_CHOICES"]),
        model_architectures=frozenset(archs) if archs is not None else None,
    )


def engine_version(engine: Engine) -> str:
    """The engine release the bundled tables were extracted from, e.g. "0.33.0"."""
    return _registries(_check_engine(engine)).version


def tool_call_parsers(engine: Engine) -> frozenset[str]:
    """Registered ``--tool-call-parser`` names (SGLang's CLI also accepts ``auto``: no parser)."""
    return _registries(_check_engine(engine)).tool_call_parsers


def reasoning_parsers(engine: Engine) -> frozenset[str]:
    """Registered ``--reasoning-parser`` names."""
    return _registries(_check_engine(engine)).reasoning_parsers


def quantization_methods(engine: Engine) -> frozenset[str]:
    """Values ``--quantization`` accepts (vLLM ``QUANTIZATION_METHODS``, SGLang's choices)."""
    return _registries(_check_engine(engine)).quantization_methods


def kv_cache_dtypes(engine: Engine) -> frozenset[str]:
    """Values ``--kv-cache-dtype`` accepts."""
    return _registries(_check_engine(engine)).kv_cache_dtypes


def attention_backends(engine: Engine) -> frozenset[str]:
    """Values ``--attention-backend`` accepts."""
    return _registries(_check_engine(engine)).attention_backends


def supported_architectures(engine: Engine) -> frozenset[str] | None:
    """Model classes the engine implements natively, when the extractor recorded them.

    The bundled 0.33.0 / 0.5.23 tables predate that field, so this is None for them; callers then
    fall back to the per-architecture rows in ``data/software.yaml``.
    """
    return _registries(_check_engine(engine)).model_architectures
