"""Step 6's results in words: the back-calculation's explanation, table and JSON, and the
kernel checks' notes, table and JSON (``--json`` keeps English text beside each decision's code
and parameters). The measurements decide (``engine.measure``); this module says them."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from engine.i18n import DEFAULT_LANG, Lang
from engine.measure.backcalc import BackcalcResult
from engine.text.words import as_json, say, say_all

if TYPE_CHECKING:  # the kernels need torch: only their result type is read here
    from engine.measure.kernels.common import CheckResult


# --- the back-calculation -------------------------------------------------------------------


def explanation(result: BackcalcResult, lang: Lang = DEFAULT_LANG) -> str:
    """The findings in ``lang``, one sentence each, then the sizing step's notes."""
    return " ".join([*say_all(result.findings, lang), *say_all(result.notes, lang)])


def backcalc_dict(result: BackcalcResult) -> dict[str, Any]:
    """The seven public fields, in the order the CLI prints them, then the findings as codes with
    their parameters (``explanation`` is their English sentences)."""
    return {
        "engine": result.engine,
        "tokens_capacity": result.tokens_capacity,
        "kv_bytes_available": result.kv_bytes_available,
        "bytes_per_token_measured": round(result.bytes_per_token_measured, 1),
        "bytes_per_token_predicted": round(result.bytes_per_token_predicted, 1),
        "ratio": round(result.ratio, 4),
        "explanation": explanation(result),
        "explanation_codes": [as_json(d) for d in result.findings],
    }


def backcalc_json(result: BackcalcResult) -> str:
    return json.dumps(backcalc_dict(result), indent=2)


def _bytes_text(value: float) -> str:
    if value >= 1024**3:
        return f"{value / 1024**3:,.2f} GiB"
    return f"{value / 1024**2:,.1f} MiB" if value >= 1024**2 else f"{value:,.0f} B"


def backcalc_text(result: BackcalcResult) -> str:
    """The CLI's table: the measured and predicted bytes per token, then the explanation."""
    rows = [
        ("engine", result.engine),
        ("tokens_capacity", f"{result.tokens_capacity:,}"),
        (
            "kv_bytes_available",
            f"{result.kv_bytes_available:,} ({_bytes_text(result.kv_bytes_available)})",
        ),
        ("bytes/token measured", f"{result.bytes_per_token_measured:,.1f}"),
        ("bytes/token predicted", f"{result.bytes_per_token_predicted:,.1f}"),
        ("ratio", f"{result.ratio:.3f}"),
    ]
    width = max(len(name) for name, _ in rows)
    lines = [f"{name:<{width}}  {value}" for name, value in rows]
    return "\n".join([*lines, "", explanation(result)])


# --- the kernel checks ----------------------------------------------------------------------


def check_note(r: CheckResult, lang: Lang = DEFAULT_LANG) -> str:
    return say(r.why, lang) if r.why is not None else ""


def check_dict(r: CheckResult, lang: Lang = DEFAULT_LANG) -> dict[str, Any]:
    """One check's row: the numbers (a non-finite one as None), the note in ``lang`` and, in
    English, its code."""

    def finite(x: float | None) -> float | None:
        return None if x is None or not math.isfinite(x) else x

    return {
        "name": r.name,
        "passed": r.passed,
        "measured": finite(r.measured),
        "expected": finite(r.expected),
        "unit": r.unit,
        "check": r.check,
        "note": check_note(r, lang),
        "note_code": as_json(r.why) if r.why is not None else None,
    }


def checks_json(rows: Sequence[CheckResult]) -> str:
    return json.dumps([check_dict(r) for r in rows], indent=2)


def checks_text(rows: Sequence[CheckResult], device: str, elapsed: float) -> str:
    """The CLI's table of checks, grouped by check, and how many passed."""

    def num(x: float | None) -> str:
        if x is None:
            return "-"
        return f"{x:,.0f}" if abs(x) >= 1e4 else f"{x:.4g}"

    width = max(len(r.name) for r in rows)
    lines = []
    check = ""
    for r in rows:
        if r.check != check:
            check = r.check
            lines.append(f"[{check}]")
        mark = "ok  " if r.passed else "FAIL"
        lines.append(
            f"  {mark} {r.name:<{width}}  {num(r.measured):>14} {r.unit:<6} "
            f"expected {num(r.expected):>14}   {check_note(r)}"
        )
    failed = sum(not r.passed for r in rows)
    lines.append(f"\n{len(rows) - failed}/{len(rows)} passed on {device} in {elapsed:.1f} s")
    return "\n".join(lines)
