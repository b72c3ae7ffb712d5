"""What the linter hands back: findings (each with a code, a severity, a message, a fix and the
exact edit), the flags explained, the flags left to the engine, and the corrected command."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any, Literal

import yaml

from engine.decision import Decision
from engine.engines import Engine, adapter
from engine.lint.rule_data import SEVERITIES, Severity, finding_rule
from engine.text.safe import json_text, plain
from engine.text.words import say, sources

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
    """One finding: its code (``data/lint.yaml``), severity and public source, what is wrong and
    how to fix it as decisions (``engine.lint.codes``, worded by ``engine.text.words`` in the
    reader's language), the flag it is about and the exact edit its fix makes."""

    severity: Severity
    code: str
    what: Decision  # what is wrong
    remedy: Decision  # how to fix it
    flag: str | None = None  # the flag as written, when the finding is about one
    source: str = ""
    edits: tuple[Edit, ...] = ()

    @property
    def message(self) -> str:
        """What is wrong, in English (the CLI's text and the JSON's readable field)."""
        return say(self.what, markdown=False)

    @property
    def fix(self) -> str:
        return say(self.remedy, markdown=False)

    @property
    def cited(self) -> list[str]:
        """The citations the message and fix carry (a renamed flag's table, a recipe and its
        words), shown beside the finding rather than inside its sentence."""
        return [text for text in sources([self.what, self.remedy]) if text]

    def to_json(self) -> dict[str, Any]:
        """The documented keys (``message`` and ``fix`` in English) and each decision's code and
        parameters beside them."""
        return {
            "severity": self.severity,
            "code": self.code,
            "message": self.message,
            "fix": self.fix,
            "flag": self.flag,
            "source": self.source,
            "edits": [asdict(e) for e in self.edits],
            "message_code": self.what.to_json(),
            "fix_code": self.remedy.to_json(),
        }


def finding(
    engine: Engine,
    code: str,
    what: Decision,
    remedy: Decision,
    flag: str | None = None,
    edits: tuple[Edit, ...] = (),
    severity: Severity | None = None,
) -> Finding:
    """A finding whose severity and source come from ``data/lint.yaml`` (``severity`` overrides
    for the few codes whose weight depends on what the linter could verify)."""
    rule = finding_rule(code)
    return Finding(
        severity or rule.for_engine(engine), code, what, remedy, flag, rule.source, edits
    )


@dataclass(frozen=True)
class FlagExplanation:
    """One flag of the command: what the engine's own help says it does (quoted, as the engine
    writes it), what the linter adds about it (another spelling, not a flag), and why it is
    (or is not) in this command."""

    flag: str  # as written
    canonical: str  # the engine's own spelling
    value: str | None
    help: str  # the engine's help text, as written ("" when none)
    note: Decision | None  # what the linter says the flag is, where the help does not
    why: Decision | None  # why it is (or is not) in this command

    @property
    def meaning(self) -> str:
        """What it does, in English: the linter's note and the engine's help."""
        note = say(self.note, markdown=False) if self.note is not None else ""
        return " ".join(part for part in (note, self.help) if part)

    @property
    def reason(self) -> str:
        return say(self.why, markdown=False) if self.why is not None else ""

    def to_json(self) -> dict[str, Any]:
        return {
            "flag": self.flag,
            "canonical": self.canonical,
            "value": self.value,
            "meaning": self.meaning,
            "reason": self.reason,
            "meaning_code": self.note.to_json() if self.note is not None else None,
            "reason_code": self.why.to_json() if self.why is not None else None,
        }


ENTRYPOINT = "image entrypoint"  # the launcher of a manifest with only args:


@dataclass(frozen=True)
class LintReport:
    engine: Engine
    engine_version: str
    launcher: str  # "vllm serve", "python3 -m sglang.launch_server", ... or ENTRYPOINT
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
        """The findings as table rows: severity, code, message, fix (English)."""
        return [
            {"severity": f.severity, "code": f.code, "message": f.message, "fix": f.fix}
            for f in self.findings
        ]

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name in ("findings", "remaining", "explanations", "left_to_engine"):
                value = [x.to_json() for x in value]
            elif isinstance(value, tuple):
                value = list(value)
            elif isinstance(value, dict):
                value = dict(value)
            out[f.name] = value
        return out


def ordered(findings: list[Finding]) -> tuple[Finding, ...]:
    """Each finding once (same code, flag and message), errors first, in the order found."""
    seen: set[tuple[str, str | None, Decision]] = set()
    unique: list[Finding] = []
    for f in findings:
        key = (f.code, f.flag, f.what)
        if key not in seen:
            seen.add(key)
            unique.append(f)
    return tuple(sorted(unique, key=lambda f: _ORDER[f.severity]))


def format_report(report: LintReport) -> str:
    """The report as plain text (the CLI without --json)."""
    head = f"engine: {adapter(report.engine).label} {report.engine_version} ({report.launcher})"
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
            lines.extend(f"          see: {cited}" for cited in f.cited)
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
