"""What the rules share while they read one command: the invocation, its parsed arguments, the
settings it describes, the config and the Studies (at the command's layout, and unpinned), the
GPU, and the findings so far."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from engine.decision import Decision, Name
from engine.engines import Engine, Setting, adapter
from engine.lint import codes as C
from engine.lint.arguments import Arg, Parsed
from engine.lint.command_scenario import Settings, ValueProblem, flag_for
from engine.lint.extract import Invocation
from engine.lint.findings import Edit, Finding, finding
from engine.lint.model import ModelChoice
from engine.lint.rule_data import Severity, lint_rules

if TYPE_CHECKING:
    from engine.hardware.gpus import Gpu
    from engine.study import Study


@dataclass
class Ctx:
    engine: Engine
    inv: Invocation
    args: tuple[str, ...]  # the arguments as the engine receives them (variables expanded)
    parsed: Parsed
    settings: Settings
    problems: list[ValueProblem]
    gpu: Gpu | None
    gpus: int | None  # GPUs available (--gpus, or the app's hardware); None: not given
    choice: ModelChoice
    study: Study | None = None  # the Study of the command's own layout
    base: Study | None = None  # the Study of the same model and GPUs, layout chosen by search
    layout_problem: str | None = None  # why the command's layout could not be studied
    scenario_fields: dict[str, Any] | None = None  # the Scenario of the command's layout
    reading: dict[str, str] = field(default_factory=dict)  # variable values expanded
    findings: list[Finding] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)  # findings per code, over the cap too

    @property
    def label(self) -> str:
        return f"{adapter(self.engine).label} {adapter(self.engine).version}"

    @property
    def name(self) -> str:
        return adapter(self.engine).label

    @property
    def engine_name(self) -> Name:
        """The engine with its pinned version (``vLLM 0.33.0``), as a decision names it."""
        return Name(self.label)

    @property
    def engine_short(self) -> Name:
        """The engine alone (``vLLM``), as a decision names it."""
        return Name(self.name)

    @property
    def facts(self) -> Study | None:
        """The Study the model facts are read from (the command's layout when it could be
        studied, else the search's)."""
        return self.study or self.base

    def add(
        self,
        code: str,
        what: Decision,
        remedy: Decision,
        flag: str | None = None,
        edits: tuple[Edit, ...] = (),
        severity: Severity | None = None,
    ) -> None:
        n = self.counts[code] = self.counts.get(code, 0) + 1
        if n <= int(lint_rules().thresholds.max_findings_per_code.value):
            self.findings.append(finding(self.engine, code, what, remedy, flag, edits, severity))

    def close(self) -> None:
        """One line for each code past the cap: how many more, and that the fix is the same."""
        cap = int(lint_rules().thresholds.max_findings_per_code.value)
        for code, n in self.counts.items():
            if n > cap:
                first = next(f for f in self.findings if f.code == code)
                self.findings.append(
                    finding(
                        self.engine,
                        code,
                        C.MORE(n=n - cap, code=Name(code)),
                        C.MORE_FIX(cap=cap),
                        severity=first.severity,
                    )
                )

    def findings_by(self, severity: Severity) -> list[Finding]:
        return [f for f in self.findings if f.severity == severity]

    @property
    def config_file(self) -> bool:
        """``--config FILE``: options the linter cannot see, so an absent flag proves nothing."""
        return "--config" in self.parsed.last

    def flag(self, setting: Setting) -> str:
        return flag_for(setting, self.engine)

    def arg(self, canonical: str) -> Arg | None:
        return self.parsed.last.get(canonical)

    def written(self, setting: Setting) -> str:
        """The flag as the command spells it (or this engine's spelling when absent)."""
        arg = self.arg(self.flag(setting))
        return arg.written if arg is not None else self.flag(setting)

    def set_value(self, setting: Setting, value: str) -> Edit:
        """The edit that sets ``setting`` to ``value``: change it where present, else add it."""
        flag = self.flag(setting)
        arg = self.arg(flag)
        if arg is None:
            return Edit("add", flag, value)
        return Edit("change", arg.written, value, arg.index)
