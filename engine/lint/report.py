"""What the linter hands back: findings (each with a code, a severity, a message, a fix and the
exact edit), the flags explained, the flags left to the engine, and the corrected command."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

import yaml

from engine.lint.data import SEVERITIES, Severity, finding_rule
from engine.present.safe import json_text, plain
from engine.software.tables import Engine

ENGINE_LABEL = {"vllm": "vLLM", "sglang": "SGLang"}
_ORDER = {s: i for i, s in enumerate(SEVERITIES)}

EditKind = Literal["add", "drop", "change", "rename", "attach"]


@dataclass(frozen=True)
class Edit:
    """The change a fix makes to the command: ``add`` a flag (with its value), ``drop`` the flag
    (and its value) or the bare word at ``index``, ``change`` its value, ``rename`` its spelling
    (keeping the value), ``attach`` the word cut off on a line of its own (``index`` among those
    words) back onto the command."""

    kind: EditKind
    flag: str
    value: str | None = None
    index: int | None = None  # position of the word in the command's arguments


@dataclass(frozen=True)
class Finding:
    severity: Severity
    code: str
    message: str
    fix: str
    flag: str | None = None  # the flag as written, when the finding is about one
    source: str = ""
    edits: tuple[Edit, ...] = ()


def finding(
    engine: Engine,
    code: str,
    message: str,
    fix: str,
    flag: str | None = None,
    edits: tuple[Edit, ...] = (),
    severity: Severity | None = None,
) -> Finding:
    """A finding whose severity and source come from ``data/lint.yaml`` (``severity`` overrides
    for the few codes whose weight depends on what the linter could verify)."""
    rule = finding_rule(code)
    return Finding(
        severity or rule.for_engine(engine), code, message, fix, flag, rule.source, edits
    )


@dataclass(frozen=True)
class FlagExplanation:
    flag: str  # as written
    canonical: str  # the engine's own spelling
    value: str | None
    meaning: str  # what the engine's help says it does
    reason: str  # why it is (or is not) in this command


@dataclass(frozen=True)
class LintReport:
    engine: Engine
    engine_version: str
    launcher: str  # "vllm serve", "python3 -m sglang.launch_server", ...
    model: str | None  # the model the command names
    linted_against: str | None  # the config the model checks used (None: none could be loaded)
    gpu: str | None
    gpus: int | None  # the GPUs the command's layout uses
    parsed_from: Literal["shell", "yaml"]
    findings: tuple[Finding, ...]
    explanations: tuple[FlagExplanation, ...]
    left_to_engine: tuple[FlagExplanation, ...]
    corrected: str  # the command with the fixes applied and linted again ("" when not rebuilt)
    corrected_argv: tuple[str, ...]
    corrected_clean: bool  # the corrected command lints with no error
    remaining: tuple[Finding, ...]  # its errors and warnings (what no fix could remove)
    variables: dict[str, str]  # the script's variable values the check expanded

    @property
    def codes(self) -> tuple[str, ...]:
        return tuple(f.code for f in self.findings)

    @property
    def errors(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.severity == "error")

    @property
    def warnings(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.severity == "warning")

    def rows(self) -> list[dict[str, str]]:
        """The findings as table rows: severity, code, message, fix."""
        return [
            {"severity": f.severity, "code": f.code, "message": f.message, "fix": f.fix}
            for f in self.findings
        ]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def ordered(findings: list[Finding]) -> tuple[Finding, ...]:
    """Each finding once (same code, flag and message), errors first, in the order found."""
    seen: set[tuple[str, str | None, str]] = set()
    unique: list[Finding] = []
    for f in findings:
        key = (f.code, f.flag, f.message)
        if key not in seen:
            seen.add(key)
            unique.append(f)
    return tuple(sorted(unique, key=lambda f: _ORDER[f.severity]))


def format_report(report: LintReport) -> str:
    """The report as plain text (the CLI without --json)."""
    head = f"engine: {ENGINE_LABEL[report.engine]} {report.engine_version} ({report.launcher})"
    if report.model:
        head += f", model {report.model}"
    if report.linted_against and report.linted_against != report.model:
        head += f" (checked as {report.linted_against})"
    if report.gpu:
        head += f", {report.gpus or '?'} × {report.gpu}"
    lines = [head]
    if report.findings:
        lines.append("findings:")
        for f in report.findings:
            where = f" [{f.flag}]" if f.flag else ""
            lines.append(f"  {f.severity:<7} {f.code}{where}: {f.message}")
            lines.append(f"          fix: {f.fix}")
    else:
        lines.append("findings: none")
    lines.append("flags:")
    for e in report.explanations:
        value = f" {e.value}" if e.value is not None and e.flag != e.value else ""
        lines.append(f"  {e.flag}{value}: {e.meaning}" + (f" — {e.reason}" if e.reason else ""))
    if report.left_to_engine:
        lines.append("left to the engine:")
        for e in report.left_to_engine:
            lines.append(f"  {e.flag}: {e.reason}")
    if report.corrected_clean:
        lines.append("corrected command: (each fix applied and linted again: no errors)")
        lines.extend("  " + line for line in report.corrected.splitlines())
    else:
        lines.append("no clean correction: these remain after every fix the linter knows:")
        for f in report.remaining:
            if f.severity == "error":
                lines.append(f"  {f.severity:<7} {f.code}: {f.message}")
    if report.corrected_clean and report.remaining:
        lines.append("  still to check (warnings):")
        lines.extend(f"    {f.code}: {f.message}" for f in report.remaining)
    return plain("\n".join(lines))  # the command's ESC or OSC shows as an escape


# --- the corrected command ------------------------------------------------------------------


def render_yaml(launcher: list[str], args: list[str]) -> str:
    """A container's ``command:`` and ``args:`` lists (YAML from the YAML library)."""
    data: dict[str, list[str]] = {}
    if launcher:
        data["command"] = launcher
    data["args"] = args
    text: str = yaml.safe_dump(data, sort_keys=False, default_flow_style=False)
    return text.rstrip("\n")


def json_report(report: LintReport) -> str:
    """The report as JSON, every control character of the command escaped."""
    return json_text(report.to_dict())
