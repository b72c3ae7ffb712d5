"""Step 4, software: engine release, parsers, checkpoint format and special flags for a config.

The facts live in ``data/software.yaml`` (per architecture, per parser family, per quantization
method, each with its source) and in the pinned engine tables of ``data/engines/``. This module
holds the rules that pick a row from config.json fields only (``architectures[0]``, ``model_type``,
the fields a family row names), never from a model's display name, and checks every name it emits
against the engine's own registries. When the model's chat template is at hand, the tool-call and
thinking format written in it checks the family's parsers and replaces one that does not read it
(``engine.software.templates``).

Every reason the report gives is a decision (``engine.decision``): a code and its parameters,
worded by ``engine.text.words``. The notes written in ``data/software.yaml`` are note ids whose
wording lives in the catalogs (``code.software.note.<id>`` in ``data/i18n/<lang>/software.yaml``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from engine import errors as E
from engine.decision import Code, Decision, Name
from engine.engines import ENGINES, Engine, Setting, adapter
from engine.engines.cli_table import ENGINES_DIR, table_path
from engine.errors import InputError
from engine.model.checkpoint import (
    CheckpointFormat,
    ConfigView,
    FieldValue,
    FormatEngine,
    FormatRow,
    IdHint,
    NoteId,
    OptionalNote,
    detect_format,
    formats_data,
    parse_config_view,
)
from engine.model.loader import ChatTemplate
from engine.rules import DATA_DIR, data_yaml, load_checked
from engine.software.templates import (
    ParserOrigin,
    ParserPick,
    TemplateReading,
    pick_parsers,
    read_template,
)
from engine.versions import latest, version_key

SOFTWARE_YAML = DATA_DIR / "software.yaml"


# ---------------------------------------------------------------------------------------------
# data/software.yaml, validated once
# ---------------------------------------------------------------------------------------------


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


_NOTE_FIELDS = frozenset({"note", "notes", "reason", "detail", "unknown_architecture_hint"})


def _note_ids(node: Any, inside: bool = False) -> list[str]:
    """Every note id written in software.yaml (under the keys that hold note ids)."""
    if isinstance(node, Mapping):
        return [i for k, v in node.items() for i in _note_ids(v, k in _NOTE_FIELDS)]
    if isinstance(node, list):
        return [i for v in node for i in _note_ids(v, inside)]
    return [node] if inside and isinstance(node, str) and node else []


# One code per note written in the data, declared when this module loads so the catalogs test
# sees them all; a note id in the data is a data edit plus its wording in both catalogs.
NOTES: dict[str, Code] = {
    i: Code(f"software.note.{i}") for i in dict.fromkeys(_note_ids(data_yaml("software.yaml")))
}


def note(note_id: str) -> Decision:
    """The decision that words a note of software.yaml."""
    return NOTES[note_id]()


class _FlagEntry(_Strict):
    flag: str = Field(pattern=r"^--?[A-Za-z0-9][\w.-]*(=\S+)?$")
    reason: NoteId
    source: str = ""


class _EngineMeta(_Strict):
    tool_parser_companion_flags: list[_FlagEntry]
    unknown_architecture_hint: NoteId


class _EngineArch(_Strict):
    min_version: str | None
    source: str = Field(min_length=1)
    note: OptionalNote = ""
    native: bool = True

    @field_validator("min_version")
    @classmethod
    def _parses(cls, v: str | None) -> str | None:
        if v is not None:
            version_key(v)
        return v


class _ArchRow(_Strict):
    vllm: _EngineArch | None = None
    sglang: _EngineArch | None = None
    fusion: Literal["early"] | None = None
    fusion_source: str | None = None


class _Match(_Strict):
    architectures: list[str] = Field(min_length=1)
    model_types: list[str] | None = None
    fields: dict[str, FieldValue] | None = None
    present: list[str] | None = None
    at_least: dict[str, float] | None = None
    # Repository-name tokens that tell apart checkpoints whose config.json files are identical
    # (DeepSeek-R1 and -V3): the row applies only to a model id carrying one of them.
    model_id_tokens: list[str] | None = None


class _EngineParsers(_Strict):
    tool_call_parser: str | None
    reasoning_parser: str | None
    # parsers other checkpoints of this architecture use, told apart by their chat template only
    alternatives: list[str] = []
    reasoning_alternatives: list[str] = []
    flags: list[_FlagEntry] = []
    min_version: str | None = None
    min_version_source: str | None = None


class _TrustRemoteCode(_Strict):
    engines: list[Engine]
    reason: NoteId
    source: str


class _Family(_Strict):
    name: str
    match: _Match
    vllm: _EngineParsers
    sglang: _EngineParsers
    trust_remote_code: _TrustRemoteCode | None = None
    source: str = Field(min_length=1)
    notes: list[NoteId] = []


class UnregisteredParser(_Strict):
    """A parser name an official command passes that the pinned engine does not register."""

    engine: Engine
    kind: Literal["tool", "reasoning"]
    name: str
    instead: str | None
    models: list[str] = Field(min_length=1)
    source: str = Field(min_length=1)


class _SoftwareFile(_Strict):
    engines: dict[Engine, _EngineMeta]
    architectures: dict[str, _ArchRow]
    parser_families: list[_Family]
    unregistered_recipe_parsers: list[UnregisteredParser] = []
    checkpoint_formats: list[FormatRow]
    model_id_hints: list[IdHint]
    unquantized_dtypes: dict[str, str]


def data_problems(data: _SoftwareFile | None = None) -> list[str]:
    """Names in software.yaml that the pinned engine tables do not know (should be empty)."""
    data = data if data is not None else _data()
    problems: list[str] = []
    for engine in ENGINES:
        tools, reasons, quants = (
            adapter(engine).registries.tool_call_parsers,
            adapter(engine).registries.reasoning_parsers,
            adapter(engine).registries.quantization_methods,
        )
        meta = data.engines[engine]
        flags = [f.flag for f in meta.tool_parser_companion_flags]
        for fam in data.parser_families:
            p: _EngineParsers = getattr(fam, engine)
            if p.tool_call_parser is not None and p.tool_call_parser not in tools:
                problems.append(f"{fam.name}: {engine} tool parser {p.tool_call_parser!r}")
            if p.reasoning_parser is not None and p.reasoning_parser not in reasons:
                problems.append(f"{fam.name}: {engine} reasoning parser {p.reasoning_parser!r}")
            problems += [
                f"{fam.name}: {engine} tool {a!r}" for a in p.alternatives if a not in tools
            ]
            problems += [
                f"{fam.name}: {engine} reasoning {a!r}"
                for a in p.reasoning_alternatives
                if a not in reasons
            ]
            flags += [f.flag for f in p.flags]
        for flag in flags:
            if adapter(engine).lookup(flag) is None:
                problems.append(f"{engine} flag {flag!r} is not in the pinned table")
        for fmt in data.checkpoint_formats:
            resolved = getattr(fmt, engine).resolves_to
            if resolved is not None and resolved not in quants:
                problems.append(f"{fmt.name}: {engine} quantization {resolved!r}")
    for u in data.unregistered_recipe_parsers:
        names = (
            adapter(u.engine).registries.tool_call_parsers
            if u.kind == "tool"
            else adapter(u.engine).registries.reasoning_parsers
        )
        if u.name in names:
            problems.append(f"{u.engine} {u.kind} parser {u.name!r} is registered after all")
        if u.instead is not None and u.instead not in names:
            problems.append(f"{u.engine} {u.kind} parser {u.instead!r} (instead of {u.name})")
    needed_settings: tuple[Setting, ...] = ("trust_remote_code", "language_model_only")
    for needed in needed_settings:
        for engine in ENGINES:
            if not adapter(engine).has(needed):
                problems.append(f"{engine} has no {needed} option in the pinned table")
    return problems


@cache
def _data() -> _SoftwareFile:
    return load_checked(_SoftwareFile, SOFTWARE_YAML.name, data_problems)


# ---------------------------------------------------------------------------------------------
# config.json at the boundary
# ---------------------------------------------------------------------------------------------


_MISSING = object()


def _get(config: Mapping[str, Any], path: str) -> Any:
    """A dotted config field; a top-level key missing at the root is looked up in text_config,
    where multimodal configs keep the language model's fields."""
    head, *rest = path.split(".")
    node: Any = config.get(head, _MISSING)
    if node is _MISSING:
        text = config.get("text_config")
        node = text.get(head, _MISSING) if isinstance(text, Mapping) else _MISSING
    for part in rest:
        if not isinstance(node, Mapping):
            return _MISSING
        node = node.get(part, _MISSING)
    return node


def _model_type(view: ConfigView) -> str | None:
    text_type = (view.text_config or {}).get("model_type")
    return view.model_type or (text_type if isinstance(text_type, str) else None)


def _model_types(view: ConfigView) -> set[str]:
    types = {view.model_type} if view.model_type else set()
    text_type = (view.text_config or {}).get("model_type")
    if isinstance(text_type, str):
        types.add(text_type)
    return types


def _id_tokens(model_id: str | None) -> set[str]:
    if not model_id:
        return set()
    return set(re.split(r"[-_.]+", model_id.rsplit("/", 1)[-1].lower()))


def _matches(
    m: _Match,
    arch: str,
    view: ConfigView,
    config: Mapping[str, Any],
    model_id: str | None = None,
) -> bool:
    if arch not in m.architectures:
        return False
    if m.model_id_tokens is not None and not _id_tokens(model_id) & set(m.model_id_tokens):
        return False
    if m.model_types is not None and not _model_types(view) & set(m.model_types):
        return False
    for path, want in (m.fields or {}).items():
        if _get(config, path) != want:
            return False
    for path in m.present or []:
        if _get(config, path) in (_MISSING, None):
            return False
    for path, floor in (m.at_least or {}).items():
        got = _get(config, path)
        if isinstance(got, bool) or not isinstance(got, int | float) or got < floor:
            return False
    return True


# ---------------------------------------------------------------------------------------------
# The report
# ---------------------------------------------------------------------------------------------


FLAG_NOT_IN_TABLE = Code("software.flag_not_in_table", "flag", "engine", "version")
ARCH_UNKNOWN = Code("software.arch_unknown", "architecture", "engine", "hint")
NO_TOOL_PARSER = Code("software.no_tool_parser", "engine", "family")
NO_PARSER_FAMILY = Code("software.no_parser_family", "architecture")
PARSERS_UNKNOWN = Code("software.parsers_unknown", "architecture")
MIN_UNKNOWN = Code("software.min_version_unknown", "engine", "architecture")
MIN_NEWER = Code("software.min_version_newer", "engine", "min_version", "version")
REMOTE_CODE = Code("software.reason.remote_code", "architecture", "engine")
REMOTE_CODE_NOT_NEEDED = Code("software.remote_code_not_needed", "engine", "architecture")
LANGUAGE_MODEL_ONLY = Code("software.reason.language_model_only")
EARLY_FUSION = Code("software.early_fusion", "architecture")
TEXT_ONLY_HINT = Code("software.text_only_hint")
QUANT_RESOLVES = Code("software.quant_resolves", "engine", "method", "resolved")
QUANT_UNKNOWN = Code("software.quant_unknown", "method", "engine", "version")
TEMPLATE_FAMILY = Code("software.template_family", "format")


@dataclass(frozen=True)
class SoftwareReport:
    """What step 4 tells the user for one engine; ``reasons`` carry the why (decisions, worded
    per language by ``engine.text.words``), ``sources`` the where.

    ``quantization`` is the ``--quantization`` value to pass, and None when the engine reads
    quant_method from config.json itself (the note names what it resolves to).
    ``extra_flags`` are single tokens (``--flag`` or ``--flag=value``) that the engine's pinned
    table accepts; ``flag_decisions`` gives each one's reason. ``family`` is the parser family's
    name in the table, or, where the chat template decided, a decision naming its format.

    ``tool_call_parser_from`` / ``reasoning_parser_from`` say whether the chat template decided
    ("template": its format names the parser, or confirms the table's) or the architecture table
    did ("table"); ``*_alternatives`` are other parsers of the same architecture that only a chat
    template could tell apart (empty when a template decided).
    """

    engine: Engine
    architecture: str
    min_version: str | None
    tool_call_parser: str | None
    reasoning_parser: str | None
    checkpoint_format: str
    quantization: str | None
    extra_flags: list[str]
    reasons: tuple[Decision, ...]
    sources: list[str]
    engine_version: str
    model_type: str | None
    family: Name | Decision | None
    natively_supported: bool
    multimodal: Literal["early-fusion", "multimodal"] | None
    checkpoint: CheckpointFormat
    flag_decisions: dict[str, Decision] = field(default_factory=dict)
    tool_call_parser_from: ParserOrigin | None = None
    reasoning_parser_from: ParserOrigin | None = None
    tool_call_alternatives: tuple[str, ...] = ()
    reasoning_alternatives: tuple[str, ...] = ()
    chat_template: str | None = None  # the file the template was read from
    template_tool_format: str | None = None  # data/chat_templates.yaml tool format id
    template_thinking_format: str | None = None


def _table_source(engine: Engine) -> str:
    return f"data/engines/{table_path(engine, 'flags').relative_to(ENGINES_DIR)}"


def _reading(template: ChatTemplate | str | None) -> TemplateReading | None:
    if template is None:
        return None
    if isinstance(template, str):
        return read_template("chat template", template, len(template))
    return read_template(template.file, template.text, template.chars)


@dataclass
class _Said:
    """What the report gathers as it reads the rows: reasons, sources and the flags to pass
    (each with its reason; a flag the pinned table lacks is said instead of passed)."""

    engine: Engine
    reasons: list[Decision] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    flags: dict[str, Decision] = field(default_factory=dict)

    def flag(self, flag: str, reason: Decision) -> None:
        eng = adapter(self.engine)
        if eng.lookup(flag) is None:
            self.reasons.append(
                FLAG_NOT_IN_TABLE(
                    flag=Name(flag), engine=Name(self.engine), version=Name(eng.version)
                )
            )
        else:
            self.flags.setdefault(flag, reason)


@dataclass(frozen=True)
class _Parsers:
    """The parser family the architecture table matches, and the parsers picked with the chat
    template's word on them."""

    family: _Family | None
    rows: _EngineParsers | None
    reading: TemplateReading | None
    pick: ParserPick
    name: Name | Decision | None


def _architecture(
    said: _Said, data: _SoftwareFile, arch: str, engine: Engine
) -> tuple[_EngineArch | None, bool, list[str]]:
    """The architecture's row: native support and the minimum releases it states."""
    row = data.architectures.get(arch)
    eng_arch: _EngineArch | None = getattr(row, engine) if row is not None else None
    registry_archs = adapter(engine).registries.model_architectures
    native = (
        arch in registry_archs
        if registry_archs is not None
        else eng_arch is not None and eng_arch.native
    )
    minimums: list[str] = []
    if eng_arch is not None:
        said.sources.append(eng_arch.source)
        if eng_arch.min_version is not None:
            minimums.append(eng_arch.min_version)
        if eng_arch.note:
            said.reasons.append(note(eng_arch.note))
    else:
        hint = note(data.engines[engine].unknown_architecture_hint)
        said.reasons.append(ARCH_UNKNOWN(architecture=Name(arch), engine=Name(engine), hint=hint))
    return eng_arch, native, minimums


def _parsers(
    said: _Said,
    data: _SoftwareFile,
    view: ConfigView,
    raw: dict[str, Any],
    model_id: str | None,
    chat_template: ChatTemplate | str | None,
    minimums: list[str],
) -> _Parsers:
    """The parser family (the architecture table), then the chat template's word on it."""
    engine = said.engine
    arch = view.architectures[0] if view.architectures else ""
    family = next(
        (f for f in data.parser_families if _matches(f.match, arch, view, raw, model_id)),
        None,
    )
    rows: _EngineParsers | None = getattr(family, engine) if family is not None else None
    reading = _reading(chat_template)
    pick = pick_parsers(
        reading,
        engine,
        adapter(engine).version,
        rows.tool_call_parser if rows is not None else None,
        rows.reasoning_parser if rows is not None else None,
    )
    decided = reading is not None and reading.tool is not None and bool(pick.tool or pick.reasoning)
    name: Name | Decision | None = Name(family.name) if family is not None else None
    if family is not None and rows is not None:
        _family_rows(said, family, rows, minimums)
    elif decided and reading is not None:
        name = _template_family(reading)
    said.reasons.extend(pick.reasons)
    if decided and reading is not None:
        said.sources.append(_template_source(reading, engine))
    if pick.tool is not None:
        for entry in data.engines[engine].tool_parser_companion_flags:
            said.flag(entry.flag, note(entry.reason))
    return _Parsers(family, rows, reading, pick, name)


def _family_rows(said: _Said, family: _Family, rows: _EngineParsers, minimums: list[str]) -> None:
    """What a parser family's row adds: its notes, minimum release, flags and remote code."""
    said.sources.append(family.source)
    said.reasons.extend(note(n) for n in family.notes)
    if rows.min_version is not None:
        minimums.append(rows.min_version)
        if rows.min_version_source:
            said.sources.append(rows.min_version_source)
    for entry in rows.flags:
        said.flag(entry.flag, note(entry.reason))
    trc = family.trust_remote_code
    if trc is not None and said.engine in trc.engines:
        said.flag(adapter(said.engine).flag("trust_remote_code"), note(trc.reason))
        said.sources.append(trc.source)


def _no_parser(said: _Said, parsers: _Parsers, arch: str, known: bool) -> None:
    """Why the report names no tool-call (or any) parser."""
    tool, reasoning = parsers.pick.tool, parsers.pick.reasoning
    engine = Name(said.engine)
    if parsers.family is not None and tool is None:
        said.reasons.append(NO_TOOL_PARSER(engine=engine, family=Name(parsers.family.name)))
    elif parsers.family is None and tool is None and reasoning is None:
        code = NO_PARSER_FAMILY if known else PARSERS_UNKNOWN
        said.reasons.append(code(architecture=Name(arch)))


def _min_version(said: _Said, minimums: list[str], arch: str, known: bool) -> str | None:
    """The newest minimum release the rows state, said against the pinned release."""
    version = adapter(said.engine).version
    engine = Name(said.engine)
    min_version = latest(minimums) if minimums else None
    if min_version is None and known:
        said.reasons.append(MIN_UNKNOWN(engine=engine, architecture=Name(arch)))
    if min_version is not None and version_key(min_version) > version_key(version):
        said.reasons.append(
            MIN_NEWER(engine=engine, min_version=Name(min_version), version=Name(version))
        )
    return min_version


def _remote_code(said: _Said, view: ConfigView, arch: str, native: bool) -> None:
    """Custom modeling files the engine has no native class for."""
    remote = adapter(said.engine).flag("trust_remote_code")
    engine = Name(said.engine)
    if view.auto_map and not native:
        said.flag(remote, REMOTE_CODE(architecture=Name(arch), engine=engine))
    elif view.auto_map and remote not in said.flags:
        # said only where the plan leaves the flag out: where the official commands pass it
        # anyway, their reason stands alone
        said.reasons.append(REMOTE_CODE_NOT_NEEDED(engine=engine, architecture=Name(arch)))


def _multimodal(
    said: _Said, view: ConfigView, row: _ArchRow | None, arch: str, text_only: bool
) -> Literal["early-fusion", "multimodal"] | None:
    """A multimodal checkpoint, and what serving it for text alone takes."""
    is_mm = view.vision_config is not None or view.audio_config is not None
    early = row is not None and row.fusion == "early"
    multimodal: Literal["early-fusion", "multimodal"] | None = (
        "early-fusion" if early else "multimodal" if is_mm else None
    )
    if multimodal is None:
        return None
    if row is not None and row.fusion_source:
        said.sources.append(row.fusion_source)
    if text_only:
        said.flag(adapter(said.engine).flag("language_model_only"), LANGUAGE_MODEL_ONLY())
    elif early:
        said.reasons.append(EARLY_FUSION(architecture=Name(arch)))
    else:
        said.reasons.append(TEXT_ONLY_HINT())
    return multimodal


def _checkpoint(
    said: _Said, data: _SoftwareFile, view: ConfigView, model_id: str | None
) -> CheckpointFormat:
    """The checkpoint's format and what ``--quantization`` the engine makes of it."""
    engine = said.engine
    ckpt = detect_format(view, model_id, formats_data())
    said.sources.append(ckpt.source)
    said.reasons.extend(ckpt.reasons)
    fmt_row = next((f for f in data.checkpoint_formats if f.name == ckpt.name), None)
    method = ckpt.quant_method
    if fmt_row is not None and method is not None:
        eng_fmt: FormatEngine = getattr(fmt_row, engine)
        if eng_fmt.resolves_to is not None:
            said.reasons.append(
                QUANT_RESOLVES(
                    engine=Name(engine), method=Name(method), resolved=Name(eng_fmt.resolves_to)
                )
            )
        if eng_fmt.note:
            said.reasons.append(note(eng_fmt.note))
    elif method is not None and method not in adapter(engine).registries.quantization_methods:
        version = Name(adapter(engine).version)
        said.reasons.append(
            QUANT_UNKNOWN(method=Name(method), engine=Name(engine), version=version)
        )
    return ckpt


def software_report(
    config: Mapping[str, Any],
    engine: Engine,
    model_id: str | None = None,
    *,
    text_only: bool = False,
    chat_template: ChatTemplate | str | None = None,
) -> SoftwareReport:
    """Minimum engine version, parsers, checkpoint format and special flags for ``config``.

    ``text_only`` says the user serves a multimodal checkpoint for text alone, which adds
    ``--language-model-only`` (the vision tower is then never loaded). ``chat_template`` is the
    model's template when one is at hand (the loader's ``ChatTemplate``, or its text): the tool
    calls and thinking it writes decide the parsers (``engine.software.templates``).
    """
    if engine not in ENGINES:
        raise InputError("engine", E.ONE_OF(choices=tuple(Name(e) for e in ENGINES)))
    view = parse_config_view(config)
    data = _data()
    arch = view.architectures[0] if view.architectures else ""
    said = _Said(engine)
    eng_arch, native, minimums = _architecture(said, data, arch, engine)
    parsers = _parsers(said, data, view, dict(config), model_id, chat_template, minimums)
    _no_parser(said, parsers, arch, known=eng_arch is not None)
    min_version = _min_version(said, minimums, arch, known=eng_arch is not None)
    _remote_code(said, view, arch, native)
    multimodal = _multimodal(said, view, data.architectures.get(arch), arch, text_only)
    ckpt = _checkpoint(said, data, view, model_id)
    said.sources.append(_table_source(engine))
    reading, pick = parsers.reading, parsers.pick
    return SoftwareReport(
        engine=engine,
        architecture=arch,
        min_version=min_version,
        tool_call_parser=pick.tool,
        reasoning_parser=pick.reasoning,
        checkpoint_format=ckpt.name,
        quantization=None,
        extra_flags=list(said.flags),
        reasons=tuple(dict.fromkeys(said.reasons)),
        sources=_unique(said.sources),
        engine_version=adapter(engine).version,
        model_type=_model_type(view),
        family=parsers.name,
        natively_supported=native,
        multimodal=multimodal,
        checkpoint=ckpt,
        flag_decisions=said.flags,
        tool_call_parser_from=pick.tool_from,
        reasoning_parser_from=pick.reasoning_from,
        tool_call_alternatives=_alternatives(parsers, thinking=False),
        reasoning_alternatives=_alternatives(parsers, thinking=True),
        chat_template=reading.file if reading is not None else None,
        template_tool_format=reading.tool.id if reading is not None and reading.tool else None,
        template_thinking_format=(
            reading.thinking.id if reading is not None and reading.thinking else None
        ),
    )


def _alternatives(parsers: _Parsers, *, thinking: bool) -> tuple[str, ...]:
    """Other parsers of this architecture: they stand only where no template placed the model
    (and, for reasoning, where it states no thinking format)."""
    reading, rows = parsers.reading, parsers.rows
    placed = reading is not None and reading.tool is not None
    if rows is None or placed:
        return ()
    if not thinking:
        return tuple(a for a in rows.alternatives if a != parsers.pick.tool)
    if reading is not None and reading.thinking is not None:
        return ()
    return tuple(a for a in rows.reasoning_alternatives if a != parsers.pick.reasoning)


def _template_family(reading: TemplateReading) -> Decision:
    """A family name for a model the table does not know, from its template's tool format."""

    assert reading.tool is not None
    return TEMPLATE_FAMILY(format=Name(reading.tool.shown))


def _template_source(reading: TemplateReading, engine: Engine) -> str:
    parts = [f"{reading.file} (chat template)"]
    if reading.tool is not None:
        parts.append(getattr(reading.tool, engine).source)
    if reading.thinking is not None:
        parts.append(getattr(reading.thinking, engine).source)
    return "; ".join(parts)


def _unique(items: list[str]) -> list[str]:
    return [s for s in dict.fromkeys(items) if s]


def unregistered_recipe_parsers() -> tuple[UnregisteredParser, ...]:
    """Parser names official commands pass that the pinned engines do not register."""
    return tuple(_data().unregistered_recipe_parsers)


def known_architectures() -> frozenset[str]:
    """Architectures with a row in data/software.yaml."""
    return frozenset(_data().architectures)
