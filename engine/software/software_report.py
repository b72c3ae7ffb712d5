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
from engine.rules import DATA_DIR, data_yaml, load_data
from engine.software.templates import ParserOrigin, TemplateReading, pick_parsers, read_template
from engine.text.words import as_json, say
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
    data = load_data(_SoftwareFile, SOFTWARE_YAML.name)
    problems = data_problems(data)
    if problems:
        raise ValueError(f"{SOFTWARE_YAML.name} disagrees with data/engines/: {problems}")
    return data


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
    table accepts; ``flag_decisions`` gives each one's reason. ``notes`` and ``flag_reasons`` are
    the English wording of both, for readers that take text.

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
    family: str | None
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

    @property
    def notes(self) -> list[str]:

        return [say(d) for d in self.reasons]

    @property
    def flag_reasons(self) -> dict[str, str]:

        return {flag: say(d) for flag, d in self.flag_decisions.items()}

    def to_json(self) -> dict[str, Any]:
        """The documented keys (reasons as English text under ``notes`` and ``flag_reasons``)
        plus each reason's code and parameters (``note_codes``, ``flag_reason_codes``)."""

        return {
            "engine": self.engine,
            "architecture": self.architecture,
            "min_version": self.min_version,
            "tool_call_parser": self.tool_call_parser,
            "reasoning_parser": self.reasoning_parser,
            "checkpoint_format": self.checkpoint_format,
            "quantization": self.quantization,
            "extra_flags": list(self.extra_flags),
            "notes": self.notes,
            "sources": list(self.sources),
            "engine_version": self.engine_version,
            "model_type": self.model_type,
            "family": self.family,
            "natively_supported": self.natively_supported,
            "multimodal": self.multimodal,
            "checkpoint": self.checkpoint.to_json(),
            "flag_reasons": self.flag_reasons,
            "note_codes": [as_json(d) for d in self.reasons],
            "flag_reason_codes": {f: as_json(d) for f, d in self.flag_decisions.items()},
            "parsers": {
                "tool_call_from": self.tool_call_parser_from,
                "reasoning_from": self.reasoning_parser_from,
                "tool_call_alternatives": list(self.tool_call_alternatives),
                "reasoning_alternatives": list(self.reasoning_alternatives),
                "chat_template": self.chat_template,
                "template_tool_format": self.template_tool_format,
                "template_thinking_format": self.template_thinking_format,
            },
        }


def _table_source(engine: Engine) -> str:
    return f"data/engines/{table_path(engine, 'flags').relative_to(ENGINES_DIR)}"


def _reading(template: ChatTemplate | str | None) -> TemplateReading | None:
    if template is None:
        return None
    if isinstance(template, str):
        return read_template("chat template", template, len(template))
    return read_template(template.file, template.text, template.chars)


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
        raise InputError("engine", f"one of {', '.join(ENGINES)}")
    view = parse_config_view(config)
    data = _data()
    raw = dict(config)
    arch = view.architectures[0] if view.architectures else ""
    version = adapter(engine).version
    reasons: list[Decision] = []
    sources: list[str] = []
    flags: dict[str, Decision] = {}

    def add_flag(flag: str, reason: Decision) -> None:
        if adapter(engine).lookup(flag) is None:
            reasons.append(
                FLAG_NOT_IN_TABLE(flag=Name(flag), engine=Name(engine), version=Name(version))
            )
        else:
            flags.setdefault(flag, reason)

    # Architecture: native support and the minimum release.
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
        sources.append(eng_arch.source)
        if eng_arch.min_version is not None:
            minimums.append(eng_arch.min_version)
        if eng_arch.note:
            reasons.append(note(eng_arch.note))
    else:
        hint = note(data.engines[engine].unknown_architecture_hint)
        reasons.append(ARCH_UNKNOWN(architecture=Name(arch), engine=Name(engine), hint=hint))

    # Parser family (the architecture table), then the chat template's word on it.
    family = next(
        (f for f in data.parser_families if _matches(f.match, arch, view, raw, model_id)),
        None,
    )
    parsers: _EngineParsers | None = getattr(family, engine) if family is not None else None
    reading = _reading(chat_template)
    pick = pick_parsers(
        reading,
        engine,
        version,
        parsers.tool_call_parser if parsers is not None else None,
        parsers.reasoning_parser if parsers is not None else None,
    )
    tool, reasoning = pick.tool, pick.reasoning
    family_name = family.name if family is not None else None
    if family is not None and parsers is not None:
        sources.append(family.source)
        reasons.extend(note(n) for n in family.notes)
        if parsers.min_version is not None:
            minimums.append(parsers.min_version)
            if parsers.min_version_source:
                sources.append(parsers.min_version_source)
        for entry in parsers.flags:
            add_flag(entry.flag, note(entry.reason))
        trc = family.trust_remote_code
        if trc is not None and engine in trc.engines:
            add_flag(adapter(engine).flag("trust_remote_code"), note(trc.reason))
            sources.append(trc.source)
    elif reading is not None and reading.tool is not None and (tool or reasoning):
        family_name = _template_family(reading)
    reasons.extend(pick.reasons)
    if reading is not None and reading.tool is not None and (tool or reasoning):
        sources.append(_template_source(reading, engine))
    if tool is not None:
        for entry in data.engines[engine].tool_parser_companion_flags:
            add_flag(entry.flag, note(entry.reason))
    if family is not None and tool is None:
        reasons.append(NO_TOOL_PARSER(engine=Name(engine), family=Name(family.name)))
    elif family is None and tool is None and reasoning is None:
        if eng_arch is not None:
            reasons.append(NO_PARSER_FAMILY(architecture=Name(arch)))
        else:
            reasons.append(PARSERS_UNKNOWN(architecture=Name(arch)))

    min_version = latest(minimums) if minimums else None
    if min_version is None and eng_arch is not None:
        reasons.append(MIN_UNKNOWN(engine=Name(engine), architecture=Name(arch)))
    if min_version is not None and version_key(min_version) > version_key(version):
        reasons.append(
            MIN_NEWER(engine=Name(engine), min_version=Name(min_version), version=Name(version))
        )

    # Remote code: custom modeling files the engine has no native class for.
    if view.auto_map and not native:
        remote = adapter(engine).flag("trust_remote_code")
        add_flag(remote, REMOTE_CODE(architecture=Name(arch), engine=Name(engine)))
    elif view.auto_map and adapter(engine).flag("trust_remote_code") not in flags:
        # said only where the plan leaves the flag out: where the official commands pass it
        # anyway, their reason stands alone
        reasons.append(REMOTE_CODE_NOT_NEEDED(engine=Name(engine), architecture=Name(arch)))

    # Multimodal checkpoints served for text only.
    is_mm = view.vision_config is not None or view.audio_config is not None
    early = row is not None and row.fusion == "early"
    multimodal: Literal["early-fusion", "multimodal"] | None = (
        "early-fusion" if early else "multimodal" if is_mm else None
    )
    if multimodal is not None:
        if row is not None and row.fusion_source:
            sources.append(row.fusion_source)
        if text_only:
            add_flag(adapter(engine).flag("language_model_only"), LANGUAGE_MODEL_ONLY())
        elif early:
            reasons.append(EARLY_FUSION(architecture=Name(arch)))
        else:
            reasons.append(TEXT_ONLY_HINT())

    # Checkpoint format and what --quantization the engine wants.
    ckpt = detect_format(view, model_id, formats_data())
    sources.append(ckpt.source)
    reasons.extend(ckpt.reasons)
    fmt_row = next((f for f in data.checkpoint_formats if f.name == ckpt.name), None)
    if fmt_row is not None and ckpt.quant_method is not None:
        eng_fmt: FormatEngine = getattr(fmt_row, engine)
        if eng_fmt.resolves_to is not None:
            reasons.append(
                QUANT_RESOLVES(
                    engine=Name(engine),
                    method=Name(ckpt.quant_method),
                    resolved=Name(eng_fmt.resolves_to),
                )
            )
        if eng_fmt.note:
            reasons.append(note(eng_fmt.note))
    elif (
        ckpt.quant_method is not None
        and ckpt.quant_method not in adapter(engine).registries.quantization_methods
    ):
        reasons.append(
            QUANT_UNKNOWN(
                method=Name(ckpt.quant_method), engine=Name(engine), version=Name(version)
            )
        )

    sources.append(_table_source(engine))
    # other parsers of this architecture stand only where no template placed the model
    placed = reading is not None and reading.tool is not None
    thinks = reading is not None and reading.thinking is not None
    alternatives = (
        tuple(a for a in parsers.alternatives if a != tool)
        if parsers is not None and not placed
        else ()
    )
    reasoning_alternatives = (
        tuple(a for a in parsers.reasoning_alternatives if a != reasoning)
        if parsers is not None and not placed and not thinks
        else ()
    )
    return SoftwareReport(
        engine=engine,
        architecture=arch,
        min_version=min_version,
        tool_call_parser=tool,
        reasoning_parser=reasoning,
        checkpoint_format=ckpt.name,
        quantization=None,
        extra_flags=list(flags),
        reasons=tuple(dict.fromkeys(reasons)),
        sources=_unique(sources),
        engine_version=version,
        model_type=_model_type(view),
        family=family_name,
        natively_supported=native,
        multimodal=multimodal,
        checkpoint=ckpt,
        flag_decisions=flags,
        tool_call_parser_from=pick.tool_from,
        reasoning_parser_from=pick.reasoning_from,
        tool_call_alternatives=alternatives,
        reasoning_alternatives=reasoning_alternatives,
        chat_template=reading.file if reading is not None else None,
        template_tool_format=reading.tool.id if reading is not None and reading.tool else None,
        template_thinking_format=(
            reading.thinking.id if reading is not None and reading.thinking else None
        ),
    )


def _template_family(reading: TemplateReading) -> str:
    """A family name for a model the table does not know, from its template's tool format."""

    assert reading.tool is not None
    return say(TEMPLATE_FAMILY(format=Name(reading.tool.shown)))


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
