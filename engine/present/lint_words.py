"""The linter's report in words: the CLI's text, the JSON (``message`` and ``fix`` in English
beside each decision's code and parameters) and the table rows. The linter decides
(``engine.lint``); this module says it."""

from __future__ import annotations

from dataclasses import asdict, fields
from typing import Any

from engine.engines import adapter
from engine.i18n import DEFAULT_LANG, Lang, t
from engine.lint.findings import Finding, FlagExplanation, LintReport
from engine.text.safe import json_text, plain
from engine.text.words import say


def message(f: Finding, lang: Lang = DEFAULT_LANG) -> str:
    """What is wrong (the CLI's text and the JSON's readable field)."""
    return say(f.what, lang, markdown=False)


def fix(f: Finding, lang: Lang = DEFAULT_LANG) -> str:
    return say(f.remedy, lang, markdown=False)


def meaning(e: FlagExplanation, lang: Lang = DEFAULT_LANG) -> str:
    """What a flag does: the linter's note and the engine's help (as the engine writes it)."""
    note = say(e.note, lang, markdown=False) if e.note is not None else ""
    return " ".join(part for part in (note, e.help) if part)


def reason(e: FlagExplanation, lang: Lang = DEFAULT_LANG) -> str:
    return say(e.why, lang, markdown=False) if e.why is not None else ""


def finding_json(f: Finding) -> dict[str, Any]:
    """The documented keys (``message`` and ``fix`` in English) and each decision's code and
    parameters beside them."""
    return {
        "severity": f.severity,
        "code": f.code,
        "message": message(f),
        "fix": fix(f),
        "flag": f.flag,
        "source": f.source,
        "edits": [asdict(e) for e in f.edits],
        "message_code": f.what.to_json(),
        "fix_code": f.remedy.to_json(),
    }


def explanation_json(e: FlagExplanation) -> dict[str, Any]:
    return {
        "flag": e.flag,
        "canonical": e.canonical,
        "value": e.value,
        "meaning": meaning(e),
        "reason": reason(e),
        "meaning_code": e.note.to_json() if e.note is not None else None,
        "reason_code": e.why.to_json() if e.why is not None else None,
    }


def report_rows(report: LintReport) -> list[dict[str, str]]:
    """The findings as table rows: severity, code, message, fix (English)."""
    return [
        {"severity": f.severity, "code": f.code, "message": message(f), "fix": fix(f)}
        for f in report.findings
    ]


def report_dict(report: LintReport) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in fields(report):
        value = getattr(report, f.name)
        if f.name in ("findings", "remaining"):
            value = [finding_json(x) for x in value]
        elif f.name in ("explanations", "left_to_engine"):
            value = [explanation_json(x) for x in value]
        elif isinstance(value, tuple):
            value = list(value)
        elif isinstance(value, dict):
            value = dict(value)
        out[f.name] = value
    out["launcher"] = report.launcher or t("lint_page.entrypoint")
    return out


def json_report(report: LintReport) -> str:
    """The report as JSON, every control character of the command escaped."""
    return json_text(report_dict(report))


def format_report(report: LintReport) -> str:
    """The report as plain text (the CLI without --json)."""
    launcher = report.launcher or t("lint_page.entrypoint")
    head = f"engine: {adapter(report.engine).label} {report.engine_version} ({launcher})"
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
            lines.append(f"  {f.severity:<7} {f.code}{where}: {message(f)}")
            lines.append(f"          fix: {fix(f)}")
            lines.extend(f"          see: {cited}" for cited in f.cited)
    else:
        lines.append("findings: none")
    lines.append("flags:")
    for e in report.explanations:
        value = f" {e.value}" if e.value is not None and e.flag != e.value else ""
        lines.append(
            f"  {e.flag}{value}: {meaning(e)}" + (f" — {reason(e)}" if e.why is not None else "")
        )
    if report.left_to_engine:
        lines.append("left to the engine:")
        for e in report.left_to_engine:
            lines.append(f"  {e.flag}: {reason(e)}")
    if report.corrected_clean:
        lines.append("corrected command: (each fix applied and linted again: no errors)")
        lines.extend("  " + line for line in report.corrected.splitlines())
    else:
        lines.append("no clean correction: these remain after every fix the linter knows:")
        for f in report.remaining:
            if f.severity == "error":
                lines.append(f"  {f.severity:<7} {f.code}: {message(f)}")
    if report.corrected_clean and report.remaining:
        lines.append("  still to check (warnings):")
        lines.extend(f"    {f.code}: {message(f)}" for f in report.remaining)
    return plain("\n".join(lines))  # the command's ESC or OSC shows as an escape
