"""Lint an inherited vLLM / SGLang launch command against the Study of the scenario it describes.

The command is read the way the shell and the engine's argparse would read it
(``engine.lint.extract``, ``engine.lint.shell``, ``engine.lint.arguments``), turned into the
scenario it describes (``engine.lint.command_scenario``, ``engine.lint.model``), studied with
the same ``study()`` the planner uses, and checked by rules (``rules_shell``, ``rules_flags``,
``rules_model``, ``rules_hardware``) whose severities and sources live in ``data/lint.yaml``.
The report (``engine.lint.findings``) gives each finding once with a code, a severity, a
message, a fix and the exact edit, every flag explained, and the corrected command.
"""

from engine.engines import Engine
from engine.lint.extract import MAX_COMMAND_CHARS
from engine.lint.findings import (
    Edit,
    Finding,
    FlagExplanation,
    LintReport,
    format_report,
    json_report,
)
from engine.lint.linter import lint_command
from engine.lint.rule_data import Severity
from engine.lint.rules_hardware import dsa_kernel_path

__all__ = [
    "MAX_COMMAND_CHARS",
    "Edit",
    "Engine",
    "Finding",
    "FlagExplanation",
    "LintReport",
    "Severity",
    "dsa_kernel_path",
    "format_report",
    "json_report",
    "lint_command",
]
