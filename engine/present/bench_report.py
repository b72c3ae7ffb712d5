"""The user's benchmark in words, tables, series and files: the runs beside the speed model's
figures (a pandas table, the chart's series), the refit and the re-ranked pick in the reader's
language, the comparison as JSON (``bench-compare --json``, ``study --bench-result --json``),
the CLI's text, and the downloads (the benchmark script, the calibration file)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd  # type: ignore[import-untyped]

from engine.i18n import DEFAULT_LANG, Lang, t
from engine.measure.bench_compare import KEYS, Comparison
from engine.measure.bench_data import bench_facts
from engine.perf.factors import perf_facts
from engine.perf.refit import unit_of, value_of
from engine.perf.stack_calibration import StackCalibration, to_json
from engine.present.artifacts import Artifact
from engine.text.safe import plain
from engine.text.units import percent
from engine.text.words import say

FIGURES = ("ttft", "tpot", "tps")
# the page's table: a row per run and figure, so it stays in view at 1400 px
COLUMNS = (
    "clients",
    "figure",
    "measured",
    "predicted",
    "calibrated",
    "error",
    "error_after",
    "file",
)


def _rows(cmp: Comparison) -> list[dict[str, Any]]:
    out = []
    for r in sorted(cmp.rows, key=lambda r: (r.point.concurrency, r.run.file, r.run.line)):
        measured = (r.point.ttft_ms, r.point.tpot_ms, r.point.tokens_per_s_per_gpu)
        row: dict[str, Any] = {
            "file": plain(f"{r.run.file}:{r.run.line}"),
            "clients": r.point.concurrency,
            "isl": r.point.isl,
            "osl": r.point.osl,
        }
        for i, f in enumerate(FIGURES):
            row[f] = measured[i]
            row[f"{f}_predicted"] = r.predicted[i]
            row[f"{f}_calibrated"] = r.calibrated[i]
        out.append(row)
    return out


def comparison_frame(cmp: Comparison, lang: Lang = DEFAULT_LANG) -> pd.DataFrame:
    """A row per run and figure (TTFT, TPOT, output tokens/s per GPU), sorted by clients: the
    measured value, the predicted and the calibrated one, and how far each of those is off in
    percent (column ids the same in every language; the page labels them)."""
    out = []
    for row in _rows(cmp):
        for f in FIGURES:
            measured, predicted, calibrated = row[f], row[f"{f}_predicted"], row[f"{f}_calibrated"]
            out.append(
                {
                    "clients": row["clients"],
                    "figure": t(f"bench.figure.{f}", lang),
                    "measured": measured,
                    "predicted": predicted,
                    "calibrated": calibrated,
                    "error": round((predicted / measured - 1) * 100),
                    "error_after": round((calibrated / measured - 1) * 100),
                    "file": row["file"],
                }
            )
    return pd.DataFrame(out, columns=list(COLUMNS))


def _span(values: list[int]) -> str:
    low, high = min(values), max(values)
    return f"{low:,}" if low == high else f"{low:,}–{high:,}"


def workload_words(cmp: Comparison, lang: Lang = DEFAULT_LANG) -> str:
    """The runs' tokens per request (a range where they differ) and what "off by" means."""
    isl = _span([r.point.isl for r in cmp.rows])
    osl = _span([r.point.osl for r in cmp.rows])
    return t("bench.workload", lang, isl=isl, osl=osl)


def column_labels(lang: Lang = DEFAULT_LANG) -> dict[str, str]:
    return {c: t(f"bench.col.{c}", lang) for c in COLUMNS}


@dataclass(frozen=True)
class BenchSeries:
    """One chart's series over the runs sorted by clients: measured points, predicted and
    calibrated lines."""

    title: str
    clients: tuple[int, ...]
    measured: tuple[float, ...]
    predicted: tuple[float, ...]
    calibrated: tuple[float, ...]


def chart_series(cmp: Comparison, lang: Lang = DEFAULT_LANG) -> list[BenchSeries]:
    """TPOT and output tokens/s per GPU against the clients at once."""
    rows = _rows(cmp)
    clients = tuple(r["clients"] for r in rows)
    return [
        BenchSeries(
            t(f"bench.chart.{f}", lang),
            clients,
            tuple(r[f] for r in rows),
            tuple(r[f"{f}_predicted"] for r in rows),
            tuple(r[f"{f}_calibrated"] for r in rows),
        )
        for f in ("tpot", "tps")
    ]


def factor_rows(cmp: Comparison) -> list[dict[str, Any]]:
    """Each refitted factor: its global value (data/perf.yaml) and the fitted one."""
    base = perf_facts().factors
    out = []
    for name, value in cmp.fit.values.items():
        out.append(
            {
                "factor": name,
                "unit": unit_of(base, name),
                "global": value_of(base, name),
                "fitted": value,
            }
        )
    return out


def fit_words(cmp: Comparison, lang: Lang = DEFAULT_LANG) -> list[str]:
    """What the refit did and what the search picks with it."""
    fit = cmp.fit
    if not fit.values:
        said = [t("bench.nothing_fitted", lang)]
    else:
        said = [
            t(
                "bench.fit",
                lang,
                fitted=", ".join(fit.values),
                runs=len(cmp.rows),
                evaluations=fit.evaluations,
                before=percent(fit.error_before),
                after=percent(fit.error_after),
            )
        ]
    before, after = cmp.planned.layout, cmp.calibrated.layout
    if before == after:
        said.append(t("bench.same_pick", lang, layout=say(after.name(), lang)))
    else:
        said.append(
            t(
                "bench.reranked",
                lang,
                before=say(before.name(), lang),
                after=say(after.name(), lang),
            )
        )
    return said


def comparison_json(cmp: Comparison) -> dict[str, Any]:
    """The comparison as data: every run with its three figures measured, predicted and
    calibrated (keys as the result files name them), the refit, the calibration file's content
    and the pick before and after."""
    runs = []
    for r in cmp.rows:
        measured = (r.point.ttft_ms, r.point.tpot_ms, r.point.tokens_per_s_per_gpu)
        runs.append(
            {
                "file": r.run.file,
                "line": r.run.line,
                "tool": r.run.tool,
                "concurrency": r.point.concurrency,
                "input_tokens": r.point.isl,
                "output_tokens": r.point.osl,
                "prompts_per_client": r.point.prompts_per_client,
                **{
                    key: {"measured": m, "predicted": p, "calibrated": c}
                    for key, m, p, c in zip(KEYS, measured, r.predicted, r.calibrated, strict=True)
                },
            }
        )
    fit = cmp.fit
    return {
        "engine": cmp.engine,
        "gpus_per_endpoint": cmp.target.gpus,
        "servers": cmp.target.servers,
        "runs": runs,
        "fit": {
            "factors": {row["factor"]: row for row in factor_rows(cmp)},
            "held": list(fit.held),
            "evaluations": fit.evaluations,
            "median_error_before": fit.error_before,
            "median_error_after": fit.error_after,
        },
        "calibration": cmp.calibration.model_dump(),
        "pick_before": say(cmp.planned.layout.name()),
        "pick_after": say(cmp.calibrated.layout.name()),
    }


def _n(x: float) -> str:
    return f"{x:,.4g}"


def comparison_text(cmp: Comparison, lang: Lang = DEFAULT_LANG) -> str:
    """The comparison for a terminal: a line per run, the refit and the pick."""
    lines = [
        t(
            "bench.text.title",
            lang,
            engine=cmp.engine,
            runs=len(cmp.rows),
            layout=say(cmp.planned.layout.name(), lang),
            gpus=cmp.target.gpus,
        )
    ]
    short = {"": "", "_predicted": "_p", "_calibrated": "_c"}  # the message's parameter names
    for row in _rows(cmp):
        figures = {f"{f}{s}": _n(row[f"{f}{kind}"]) for f in FIGURES for kind, s in short.items()}
        lines.append(t("bench.text.row", lang, clients=row["clients"], **figures))
    lines += fit_words(cmp, lang)
    for f in factor_rows(cmp):
        lines.append(
            t(
                "bench.text.factor",
                lang,
                name=f["factor"],
                before=_n(f["global"]),
                after=_n(f["fitted"]),
                unit="" if f["unit"] == "1" else f["unit"],
            )
        )
    if cmp.fit.held:
        lines.append(t("bench.text.held", lang, names=", ".join(cmp.fit.held)))
    return "\n".join(lines)


def calibration_artifact(cal: StackCalibration) -> Artifact:
    """The calibration file (``--bench-calibration`` reads it back)."""
    return Artifact(
        "calibration", f"bench-calibration-{cal.engine}.json", "application/json", to_json(cal)
    )


def limits_words(lang: Lang = DEFAULT_LANG) -> str:
    """The bounds on uploaded result files, stated."""
    r = bench_facts().results
    return t(
        "bench.limits",
        lang,
        files=r.max_files,
        mib=f"{r.max_file_bytes / 2**20:g}",
        lines=f"{r.max_lines:,}",
        factor=f"{r.physics_factor:g}",
    )
