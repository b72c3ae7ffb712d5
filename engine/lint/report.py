"""What the linter hands back: findings (each with a code, a severity, a message, a fix and the
exact edit), the flags explained, the flags left to the engine, and the corrected command."""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import asdict, dataclass
from typing import Any, Literal

from engine.lint.data import SEVERITIES, Severity, finding_rule
from engine.software.tables import Engine

ENGINE_LABEL = {"vllm": "vLLM", "sglang": "SGLang"}
_ORDER = {s: i for i, s in enumerate(SEVERITIES)}

EditKind = Literal["add", "drop", "change", "rename"]


@dataclass(frozen=True)
class Edit:
    """The change a fix makes to the command: ``add`` a flag (with its value), ``drop`` the flag
    (and its value) or the bare word at ``index``, ``change`` its value, ``rename`` its spelling
    (keeping the value)."""

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
    corrected: str  # the command with every error and warning fix applied
    corrected_argv: tuple[str, ...]

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
    lines.append("corrected command:")
    lines.extend("  " + line for line in report.corrected.splitlines())
    return "\n".join(lines)


# --- the corrected command ------------------------------------------------------------------

_PLAIN = re.compile(r"[A-Za-z0-9_@%+=:,./-]+")
_PLAIN_WITH_VARS = re.compile(r"[A-Za-z0-9_@%+=:,./${}-]+")


def shell_word(word: str, has_variables: bool = False) -> str:
    """``word`` quoted for a POSIX shell; a word that refers to ``$VARIABLES`` keeps them live."""
    if _PLAIN.fullmatch(word):
        return word
    if has_variables:
        if _PLAIN_WITH_VARS.fullmatch(word):
            return word
        return '"' + re.sub(r'(["\\`])', r"\\\1", word) + '"'
    return shlex.quote(word)


@dataclass(frozen=True)
class ArgWord:
    """One word of the command's arguments: its text for the shell (variables as written) and
    whether it refers to variables."""

    text: str
    has_variables: bool = False


def apply_edits(
    words: tuple[ArgWord, ...], flag_spans: dict[int, int], edits: list[Edit]
) -> list[ArgWord]:
    """The arguments after ``edits``. ``flag_spans`` maps a flag's index to the number of words it
    spans (1, or 2 with a separate value)."""
    dropped: set[int] = set()
    replaced: dict[int, list[ArgWord]] = {}
    added: list[ArgWord] = []
    for e in edits:
        if e.kind == "add":
            added.append(ArgWord(e.flag))
            if e.value is not None:
                added.append(ArgWord(e.value))
            continue
        if e.index is None or not 0 <= e.index < len(words):
            continue
        span = flag_spans.get(e.index, 1)
        if e.kind == "drop":
            dropped.update(range(e.index, e.index + span))
        elif e.kind == "change":
            replaced[e.index] = [ArgWord(e.flag)] + ([ArgWord(e.value)] if e.value else [])
            dropped.update(range(e.index + 1, e.index + span))
        elif e.kind == "rename":
            old = words[e.index].text
            inline = "=" in old and old.startswith("-") and span == 1
            if inline:
                replaced[e.index] = [ArgWord(e.flag + "=" + old.split("=", 1)[1])]
            else:
                replaced[e.index] = [ArgWord(e.flag)]
    out: list[ArgWord] = []
    for i, w in enumerate(words):
        if i in replaced and i not in dropped:
            out.extend(replaced[i])
        elif i not in dropped:
            out.append(w)
    return out + added


def render_shell(prefix: list[ArgWord], args: list[ArgWord]) -> str:
    """The launcher (and a positional model) on the first line, then one flag with its value
    per continued line."""
    first = [shell_word(w.text, w.has_variables) for w in prefix]
    i = 0
    while i < len(args) and not args[i].text.startswith("-"):
        first.append(shell_word(args[i].text, args[i].has_variables))
        i += 1
    lines = [" ".join(first)]
    group: list[str] = []
    for w in args[i:]:
        if w.text.startswith("-") and group:
            lines.append(" ".join(group))
            group = []
        group.append(shell_word(w.text, w.has_variables))
    if group:
        lines.append(" ".join(group))
    return " \\\n  ".join(line for line in lines if line)


def render_yaml(launcher: list[str], args: list[str]) -> str:
    """A container's ``command:`` and ``args:`` lists (YAML from the YAML library)."""
    import yaml

    data: dict[str, list[str]] = {}
    if launcher:
        data["command"] = launcher
    data["args"] = args
    text: str = yaml.safe_dump(data, sort_keys=False, default_flow_style=False)
    return text.rstrip("\n")


def json_report(report: LintReport) -> str:
    return json.dumps(report.to_dict(), indent=2, ensure_ascii=False)
