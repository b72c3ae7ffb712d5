"""``backcalc SOURCE --log FILE [--metrics FILE] [--tp N] [--json]``: the arguments and the
back-calculation of the files they name (bounded file reads, ``parse_engine_text``,
``backcalculate``); the CLI prints it through ``engine.present.measure_words``.
"""

from __future__ import annotations

import argparse

from engine.decision import Decision
from engine.diagnose import Options, diagnose
from engine.measure.backcalc import BackcalcResult, Predict, backcalculate, sizing_notes
from engine.measure.input_guards import read_text
from engine.measure.read_back import parse_engine_text
from engine.model.loader import load_model
from engine.scenario import whole_number


def add_backcalc_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("source", help="model id or config.json path, as the engine CLI takes")
    parser.add_argument("--log", required=True, help="engine startup log file (regular file)")
    parser.add_argument("--metrics", help="saved output of curl -s localhost:PORT/metrics")
    parser.add_argument(
        "--tp", type=whole_number("tp"), default=1, help="tensor-parallel size (default 1)"
    )
    parser.add_argument("--json", action="store_true", help="print JSON")


def predict_for_source(source: str, tp: int) -> tuple[float, str, list[Decision]]:
    """Predicted KV bytes per token per rank, the family and how it was counted."""
    d = diagnose(load_model(source).config, Options(tp=tp))
    return float(d.kv.kv_bytes_per_token), d.family.attention_family, sizing_notes(d.kv)


def backcalc_files(
    source: str, log: str, metrics: str | None, tp: int, predict: Predict
) -> BackcalcResult:
    """The back-calculation for a log file (and /metrics file): files read bounded, then the
    prediction for ``source`` at ``tp``."""
    log_text = read_text(log, "log")
    metrics_text = read_text(metrics, "metrics") if metrics else None
    reading = parse_engine_text(log_text, metrics_text)
    predicted, family, notes = predict(source, tp)
    return backcalculate(reading, predicted, tp, family, notes)
