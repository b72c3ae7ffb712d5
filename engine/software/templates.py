"""Parsers from the chat template: the tool-call and thinking format a template writes, and the
parser each engine registers for it.

A model's chat template is the one place that says how its tool calls look (``<tool_call>`` JSON,
Qwen3-Coder's ``<function=…>`` XML, Kimi's ``<|tool_calls_section_begin|>``, DeepSeek's
``<｜tool▁calls▁begin｜>`` …), and each engine's parser looks for the same markers in the output.
``data/chat_templates.yaml`` keeps those markers with the engine file and function they were
read from. The template is hostile text: it is scanned as a string for those markers (``in``),
never rendered, never echoed, and a template longer than the data's limit is not scanned at all.

``pick_parsers`` joins the template's reading with the architecture table's answer: the table's
parser stands when it reads the template's format; otherwise the format decides.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from engine.decision import Code, Decision, Name
from engine.engines import ENGINES, Engine, adapter
from engine.rules import load_checked

TEMPLATES_YAML = "chat_templates.yaml"

# ---------------------------------------------------------------------------------------------
# data/chat_templates.yaml, validated once
# ---------------------------------------------------------------------------------------------


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class _Limits(_Strict):
    max_template_chars: int = Field(gt=0)
    max_file_bytes: int = Field(gt=0)


class _EngineTool(_Strict):
    parsers: list[str]
    source: str = Field(min_length=1)


class _Pair(_Strict):
    vllm: str | None
    sglang: str | None


class ToolFormat(_Strict):
    """One tool-call format: the markers a template shows and the parsers that read it."""

    id: str = Field(pattern=r"^[a-z0-9_]+$")
    shown: str = Field(min_length=1)
    all: list[str] = Field(min_length=1)
    any: list[str] = []
    vllm: _EngineTool
    sglang: _EngineTool
    reasoning: _Pair | None = None
    thinking_known: bool = True

    def matches(self, text: str) -> bool:
        return all(m in text for m in self.all) and (
            not self.any or any(m in text for m in self.any)
        )

    def parsers(self, engine: Engine) -> list[str]:
        return list(getattr(self, engine).parsers)

    def paired_reasoning(self, engine: Engine) -> str | None:
        return None if self.reasoning is None else getattr(self.reasoning, engine)


class _EngineThinking(_Strict):
    parsers: list[str]
    default: str | None
    source: str = Field(min_length=1)


class ThinkingFormat(_Strict):
    """One way a template marks thinking, and the reasoning parsers that read it."""

    id: str = Field(pattern=r"^[a-z0-9_]+$")
    shown: str = Field(min_length=1)
    any: list[str] = Field(min_length=1)
    vllm: _EngineThinking
    sglang: _EngineThinking

    def matches(self, text: str) -> bool:
        return any(m in text for m in self.any)

    def parsers(self, engine: Engine) -> list[str]:
        return list(getattr(self, engine).parsers)

    def default(self, engine: Engine) -> str | None:
        value: str | None = getattr(self, engine).default
        return value


class _TemplatesFile(_Strict):
    limits: _Limits
    tool_formats: list[ToolFormat] = Field(min_length=1)
    thinking_formats: list[ThinkingFormat] = Field(min_length=1)


def template_problems(data: _TemplatesFile | None = None) -> list[str]:
    """Names in chat_templates.yaml the pinned registries do not know (should be empty)."""
    data = data if data is not None else _data()
    problems: list[str] = []
    for engine in ENGINES:
        tools, reasons = (
            adapter(engine).registries.tool_call_parsers,
            adapter(engine).registries.reasoning_parsers,
        )
        for fmt in data.tool_formats:
            problems += [
                f"{fmt.id}: {engine} tool {p!r}" for p in fmt.parsers(engine) if p not in tools
            ]
            paired = fmt.paired_reasoning(engine)
            if paired is not None and paired not in reasons:
                problems.append(f"{fmt.id}: {engine} reasoning {paired!r}")
        for think in data.thinking_formats:
            names = think.parsers(engine)
            problems += [f"{think.id}: {engine} reasoning {p!r}" for p in names if p not in reasons]
            default = think.default(engine)
            if default is not None and default not in names:
                problems.append(f"{think.id}: {engine} default {default!r} is not in its parsers")
    ids = [f.id for f in data.tool_formats] + [f.id for f in data.thinking_formats]
    problems += [f"format id {i!r} given twice" for i in sorted(set(ids)) if ids.count(i) > 1]
    return problems


@cache
def _data() -> _TemplatesFile:
    return load_checked(_TemplatesFile, TEMPLATES_YAML, template_problems)


def tool_formats() -> tuple[ToolFormat, ...]:
    """Every tool-call format, in matching order (for the engine adapters and the docs)."""
    return tuple(_data().tool_formats)


def thinking_formats() -> tuple[ThinkingFormat, ...]:
    return tuple(_data().thinking_formats)


def max_template_chars() -> int:
    return _data().limits.max_template_chars


def max_file_bytes() -> int:
    return _data().limits.max_file_bytes


# ---------------------------------------------------------------------------------------------
# Reading a template
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TemplateReading:
    """What a chat template shows: its tool-call format and its thinking format (None: none of
    the known ones). ``skipped`` says why the text was not scanned ("too_large")."""

    file: str
    chars: int
    tool: ToolFormat | None
    thinking: ThinkingFormat | None
    skipped: Literal["too_large"] | None = None


def read_template(file: str, text: str | None, chars: int) -> TemplateReading:
    """Scan ``text`` (a template, as a plain string) for the known formats' markers. ``text``
    None is a template the loader did not keep (``chars`` long: over the limits)."""
    if text is None or len(text) > max_template_chars():
        return TemplateReading(file, max(chars, len(text or "")), None, None, "too_large")
    tool = next((f for f in _data().tool_formats if f.matches(text)), None)
    thinking = next((f for f in _data().thinking_formats if f.matches(text)), None)
    return TemplateReading(file, len(text), tool, thinking)


# ---------------------------------------------------------------------------------------------
# Joining the template with the architecture table
# ---------------------------------------------------------------------------------------------

TOOL_CONFIRMED = Code("software.template.tool_confirmed", "file", "format", "parser")
TOOL_PICKED = Code("software.template.tool_picked", "file", "format", "parser", "engine")
TOOL_OVERRIDES = Code(
    "software.template.tool_overrides", "file", "format", "parser", "table_parser"
)
TOOL_UNREGISTERED = Code(
    "software.template.tool_unregistered", "file", "format", "engine", "version"
)
NO_TOOL_FORMAT = Code("software.template.no_tool_format", "file")
REASONING_CONFIRMED = Code("software.template.reasoning_confirmed", "file", "format", "parser")
REASONING_PICKED = Code("software.template.reasoning_picked", "file", "format", "parser")
REASONING_OVERRIDES = Code(
    "software.template.reasoning_overrides", "file", "format", "parser", "table_parser"
)
REASONING_UNREGISTERED = Code(
    "software.template.reasoning_unregistered", "file", "format", "engine", "version"
)
NO_THINKING = Code("software.template.no_thinking", "file", "table_parser")
TOO_LARGE = Code("software.template.too_large", "file", "chars", "limit")
NO_TEMPLATE = Code("software.template.none")

ParserOrigin = Literal["template", "table"]


@dataclass(frozen=True)
class ParserPick:
    """One engine's parser choice and where it came from."""

    tool: str | None
    reasoning: str | None
    tool_from: ParserOrigin | None
    reasoning_from: ParserOrigin | None
    reasons: tuple[Decision, ...]


def pick_parsers(
    reading: TemplateReading | None,
    engine: Engine,
    version: str,
    table_tool: str | None,
    table_reasoning: str | None,
) -> ParserPick:
    """The tool-call and reasoning parser for ``engine``: the architecture table's answer
    (``table_tool`` / ``table_reasoning``), checked against and, where it does not read the
    template's format, replaced by what the chat template shows."""
    origin: ParserOrigin = "table"
    table_from = origin if table_tool is not None else None
    table_r_from = origin if table_reasoning is not None else None
    if reading is None:
        return ParserPick(table_tool, table_reasoning, table_from, table_r_from, (NO_TEMPLATE(),))
    file = Name(reading.file)
    if reading.skipped == "too_large":
        reason = TOO_LARGE(file=file, chars=reading.chars, limit=max_template_chars())
        return ParserPick(table_tool, table_reasoning, table_from, table_r_from, (reason,))
    reasons: list[Decision] = []
    tool, tool_from = _tool(reading, engine, version, table_tool, reasons)
    reasoning, reasoning_from = _reasoning(reading, engine, version, table_reasoning, reasons)
    return ParserPick(tool, reasoning, tool_from, reasoning_from, tuple(reasons))


def _tool(
    reading: TemplateReading,
    engine: Engine,
    version: str,
    table: str | None,
    reasons: list[Decision],
) -> tuple[str | None, ParserOrigin | None]:
    file = Name(reading.file)
    fmt = reading.tool
    if fmt is None:
        reasons.append(NO_TOOL_FORMAT(file=file))
        return table, "table" if table is not None else None
    shown = Name(fmt.shown)
    names = fmt.parsers(engine)
    if table is not None and table in names:
        reasons.append(TOOL_CONFIRMED(file=file, format=shown, parser=Name(table)))
        return table, "template"
    if not names:
        reasons.append(
            TOOL_UNREGISTERED(file=file, format=shown, engine=Name(engine), version=Name(version))
        )
        return None, None
    pick = names[0]
    if table is not None:
        reasons.append(
            TOOL_OVERRIDES(file=file, format=shown, parser=Name(pick), table_parser=Name(table))
        )
    else:
        reasons.append(TOOL_PICKED(file=file, format=shown, parser=Name(pick), engine=Name(engine)))
    return pick, "template"


def _reasoning(
    reading: TemplateReading,
    engine: Engine,
    version: str,
    table: str | None,
    reasons: list[Decision],
) -> tuple[str | None, ParserOrigin | None]:
    file = Name(reading.file)
    think = reading.thinking
    if think is None:
        if reading.tool is None or not reading.tool.thinking_known:
            # a template this table cannot place says nothing either way: the table stands
            return table, "table" if table is not None else None
        if table is not None:
            reasons.append(NO_THINKING(file=file, table_parser=Name(table)))
        return None, None
    shown = Name(think.shown)
    names = think.parsers(engine)
    if table is not None and table in names:
        reasons.append(REASONING_CONFIRMED(file=file, format=shown, parser=Name(table)))
        return table, "template"
    paired = reading.tool.paired_reasoning(engine) if reading.tool is not None else None
    pick = paired if paired is not None and paired in names else think.default(engine)
    if pick is None:
        reasons.append(
            REASONING_UNREGISTERED(
                file=file, format=shown, engine=Name(engine), version=Name(version)
            )
        )
        return None, None
    if table is not None:
        reasons.append(
            REASONING_OVERRIDES(
                file=file, format=shown, parser=Name(pick), table_parser=Name(table)
            )
        )
    else:
        reasons.append(REASONING_PICKED(file=file, format=shown, parser=Name(pick)))
    return pick, "template"
