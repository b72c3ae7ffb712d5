"""No function of the engine over 100 lines (STYLE: over 60 is a smell, over 100 is refused):
a walk over ``engine/`` with ``ast`` names every one that is longer."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ENGINE = ROOT / "engine"
MOST_LINES = 100


def long_functions(source: str, where: str) -> list[str]:
    """``where:line name (N lines)`` for each function or method in ``source`` longer than
    MOST_LINES (its whole span, decorators aside, docstring and comments included)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            lines = (node.end_lineno or node.lineno) - node.lineno + 1
            if lines > MOST_LINES:
                found.append(f"{where}:{node.lineno} {node.name} ({lines} lines)")
    return found


def test_no_engine_function_is_over_100_lines() -> None:
    offenders = [
        hit
        for path in sorted(ENGINE.rglob("*.py"))
        for hit in long_functions(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))
    ]
    assert offenders == [], f"functions over {MOST_LINES} lines: {offenders}"


def test_the_walk_names_a_planted_long_function_and_method() -> None:
    body = "".join(f"    x{i} = {i}\n" for i in range(MOST_LINES))
    source = f"def short():\n    return 1\n\ndef long():\n{body}\nclass C:\n    def m(self):\n"
    source += "".join("    " + line + "\n" for line in body.splitlines())
    assert long_functions(source, "planted.py") == [
        f"planted.py:4 long ({MOST_LINES + 1} lines)",
        f"planted.py:{MOST_LINES + 7} m ({MOST_LINES + 1} lines)",
    ]
