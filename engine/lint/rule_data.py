"""``data/lint.yaml``, validated once: severities and sources per finding, thresholds, the other
engine's spellings, renamed flags, entrypoint images and the checkpoint-name rules."""

from __future__ import annotations

import re
from functools import cache
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from engine.engines import ENGINES, Engine, adapter
from engine.engines import other as other_engine
from engine.rules import DATA_DIR, Strict, load_checked, load_data

LINT_YAML = DATA_DIR / "lint.yaml"

Severity = Literal["error", "warning", "info"]
SEVERITIES: tuple[Severity, ...] = ("error", "warning", "info")


class FindingRule(Strict):
    """A finding code: its severity (one, or one per engine) and the public source shown with it."""

    severity: Severity | dict[Engine, Severity]
    source: str = Field(min_length=1)

    def for_engine(self, engine: Engine) -> Severity:
        if isinstance(self.severity, dict):
            return self.severity[engine]
        return self.severity


class Threshold(Strict):
    value: float
    source: str = Field(min_length=1)


class _Thresholds(Strict):
    memory_fraction_warn: Threshold
    memory_fraction_suggest: Threshold
    max_parallel_size: Threshold
    max_context_tokens: Threshold
    max_sh_c_depth: Threshold
    max_yaml_aliases: Threshold
    max_expansions: Threshold
    max_findings_per_code: Threshold
    max_arguments: Threshold


class Equivalent(Strict):
    written: str = Field(pattern=r"^--[a-z0-9-]+$")
    use: str = Field(pattern=r"^--[a-z0-9-]+$")


class _Equivalents(Strict):
    vllm: list[Equivalent]
    sglang: list[Equivalent]
    source: str = Field(min_length=1)


class Renamed(Strict):
    written: str = Field(pattern=r"^--[a-z0-9-]+$")
    use: str | None
    source: str = Field(min_length=1)


class Replacement(Strict):
    flag: str
    use: str
    source: str = Field(min_length=1)


class Launcher(Strict):
    """``program subcommand`` (vllm serve) or ``python -m module``."""

    engine: Engine
    program: str | None = None
    subcommand: str | None = None
    module: str | None = None
    source: str = Field(min_length=1)


class EntrypointImage(Strict):
    image: str = Field(min_length=1)
    engine: Engine
    launcher: str
    source: str = Field(min_length=1)


class DockerRun(Strict):
    programs: list[str]
    options_with_value: list[str]
    env_options: list[str]
    source: str = Field(min_length=1)


class PerEngineName(Strict):
    vllm: str
    sglang: str
    source: str = Field(min_length=1)


class PerEngineNames(Strict):
    vllm: list[str]
    sglang: list[str]
    source: str = Field(min_length=1)


class _Nvfp4(Strict):
    weight_methods: dict[Engine, list[str]]
    kv_dtypes: list[str]
    blackwell_only_kv_dtypes: list[str]
    source: str = Field(min_length=1)


class ParserPlugin(Strict):
    parser: str  # the parser option
    plugin: str  # the option that loads a file registering more names for it


class ParserPlugins(Strict):
    vllm: list[ParserPlugin]
    sglang: list[ParserPlugin]
    source: str = Field(min_length=1)


class ParserNotNeeded(Strict):
    engine: Engine
    architecture: str
    kind: Literal["tool", "reasoning"]
    why: str
    source: str = Field(min_length=1)


class ModelNames(Strict):
    variant_tokens: list[str]
    variant_token_pattern: str
    size_token_pattern: str
    distinct_tokens: list[str]
    min_shared_prefix: int = Field(ge=1)
    source: str = Field(min_length=1)
    quantization_configs: dict[str, dict[str, Any]]
    quantization_source: str = Field(min_length=1)

    @field_validator("variant_token_pattern", "size_token_pattern")
    @classmethod
    def _compiles(cls, v: str) -> str:
        re.compile(v)
        return v

    def is_variant(self, token: str) -> bool:
        return (
            token in self.variant_tokens
            or re.fullmatch(self.variant_token_pattern, token) is not None
        )

    def is_size(self, token: str) -> bool:
        return re.fullmatch(self.size_token_pattern, token) is not None


class Fp8KvBackend(Strict):
    """A backend and the GPU generations where it reads FP8 KV (why, and the fix, are worded
    per engine and backend in data/i18n/<lang>/lint.yaml, ``lint.fp8_kv_backend.*``)."""

    backend: str
    works_on: list[str]


class Fp8KvBackends(Strict):
    source: str
    vllm: list[Fp8KvBackend]
    sglang: list[Fp8KvBackend]

    def for_engine(self, engine: Engine) -> list[Fp8KvBackend]:
        rows: list[Fp8KvBackend] = getattr(self, engine)
        return rows


class LintRules(Strict):
    findings: dict[str, FindingRule]
    thresholds: _Thresholds
    flag_equivalents: _Equivalents
    renamed_flags: dict[Engine, list[Renamed]]
    deprecated_replacements: dict[Engine, list[Replacement]]
    launchers: list[Launcher]
    entrypoint_images: list[EntrypointImage]
    docker_run: DockerRun
    long_context_overrides: PerEngineName
    parser_plugins: ParserPlugins
    nvfp4: _Nvfp4
    fp8_kv_backends: Fp8KvBackends
    parsers_not_needed: list[ParserNotNeeded]
    forcing_reasoning_parsers: PerEngineNames
    model_names: ModelNames

    def equivalent(self, engine: Engine, written: str) -> str | None:
        """This engine's spelling of a flag written in the other engine's spelling."""
        rows: list[Equivalent] = getattr(self.flag_equivalents, engine)
        return next((r.use for r in rows if r.written == written), None)

    def renamed(self, engine: Engine, written: str) -> Renamed | None:
        return next((r for r in self.renamed_flags[engine] if r.written == written), None)

    def deprecated_use(self, engine: Engine, flag: str) -> Replacement | None:
        return next((r for r in self.deprecated_replacements[engine] if r.flag == flag), None)

    def parser_plugin(self, engine: Engine, parser: str) -> str | None:
        """The option that loads a plugin registering more names for ``parser``, or None."""
        rows: list[ParserPlugin] = getattr(self.parser_plugins, engine)
        return next((r.plugin for r in rows if r.parser == parser), None)

    def forces_reasoning(self, engine: Engine, parser: str) -> bool:
        """The reasoning parser files text without </think> as reasoning."""
        names: list[str] = getattr(self.forcing_reasoning_parsers, engine)
        return parser in names

    def program(self, program: str, subcommand: str) -> Engine | None:
        """The engine ``program subcommand`` starts (``vllm serve``), or None."""
        return next(
            (
                r.engine
                for r in self.launchers
                if (r.program, r.subcommand) == (program, subcommand)
            ),
            None,
        )

    def module(self, module: str) -> Engine | None:
        """The engine ``python -m module`` starts, or None."""
        return next((r.engine for r in self.launchers if r.module == module), None)

    def entrypoint(self, image: str) -> EntrypointImage | None:
        """The row whose image is ``image`` without its tag or registry host."""
        name = image.rsplit(":", 1)[0] if ":" in image.rsplit("/", 1)[-1] else image
        name = name.split("@", 1)[0]
        return next(
            (r for r in self.entrypoint_images if name == r.image or name.endswith("/" + r.image)),
            None,
        )


def data_problems(rules: LintRules) -> list[str]:
    """Spellings in data/lint.yaml the pinned engine tables disagree with (should be empty)."""
    problems: list[str] = []
    for engine in ENGINES:
        other: Engine = other_engine(engine)
        for eq in getattr(rules.flag_equivalents, engine):
            if adapter(engine).lookup(eq.use) is None:
                problems.append(f"{engine}: equivalent {eq.use} is not a flag")
            if eq.written != "--enable-moe-ep" and adapter(other).lookup(eq.written) is None:
                problems.append(f"{other}: {eq.written} is not a flag of the other engine")
        for r in rules.renamed_flags[engine]:
            if r.use is not None and adapter(engine).lookup(r.use) is None:
                problems.append(f"{engine}: renamed {r.written} -> {r.use} is not a flag")
            if r.written in _exact_table(engine):
                problems.append(f"{engine}: {r.written} is still accepted")
        for row in getattr(rules.parser_plugins, engine):
            for flag in (row.parser, row.plugin):
                if adapter(engine).lookup(flag) is None:
                    problems.append(f"{engine}: parser plugin option {flag} is not a flag")
        for rep in rules.deprecated_replacements[engine]:
            info = adapter(engine).lookup(rep.flag)
            if info is None or not info.deprecated or adapter(engine).lookup(rep.use) is None:
                problems.append(f"{engine}: deprecated {rep.flag} -> {rep.use}")
    for code, rule in rules.findings.items():
        if not re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", code):
            problems.append(f"finding code {code!r} is not kebab-case")
        if isinstance(rule.severity, dict) and set(rule.severity) != set(ENGINES):
            problems.append(f"{code}: per-engine severity needs both engines")
    return problems


def _exact_table(engine: Engine) -> frozenset[str]:
    return frozenset(adapter(engine).flags)


@cache
def lint_rules() -> LintRules:
    """``data/lint.yaml``, read and validated once."""
    return load_checked(LintRules, LINT_YAML.name, data_problems)


def finding_rule(code: str) -> FindingRule:
    """The severity and source of a finding code (every code the rules use is in the data)."""
    return lint_rules().findings[code]


# --- parser names that are one parser (data/parser_aliases.yaml) ---------------------------


class _AliasGroup(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    names: list[str] = Field(min_length=2)
    same_behaviour: bool


class _EngineAliases(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    tool_call: list[_AliasGroup]
    reasoning: list[_AliasGroup]


class _ParserAliases(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    vllm: _EngineAliases
    sglang: _EngineAliases


@cache
def _parser_aliases() -> _ParserAliases:
    return load_data(_ParserAliases, "parser_aliases.yaml")


def same_parser(engine: Engine, kind: Literal["tool", "reasoning"], a: str, b: str) -> bool:
    """True when the engine's registry maps both names to one parser that behaves the same
    (SGLang ``qwen`` and ``qwen25``; vLLM ``glm45`` and ``glm47``)."""
    if a == b:
        return True
    rows: _EngineAliases = getattr(_parser_aliases(), engine)
    groups = rows.tool_call if kind == "tool" else rows.reasoning
    return any(g.same_behaviour and a in g.names and b in g.names for g in groups)
