"""The benchmark clients' facts, loaded once from ``data/bench.yaml``: each tool's program and flag
table (read from its source), the concurrency sweep and the bounds on the result files."""

from __future__ import annotations

from functools import cache
from typing import Literal

from pydantic import Field

from engine.engines import Engine
from engine.rules import Strict, load_data

ResultFormat = Literal["vllm_json", "sglang_jsonl"]


class ToolFlag(Strict):
    """One flag of a benchmark client: whether it takes a value, the values the tool enforces
    (None: any), and where it was read."""

    value: bool
    choices: tuple[str, ...] | None = None
    source: str = Field(min_length=1)


class Tool(Strict):
    """``vllm bench serve`` or ``python3 -m sglang.bench_serving``."""

    program: tuple[str, ...] = Field(min_length=1)
    version: str
    backend: str
    result: ResultFormat
    fixed_range_ratio: str  # the --random-range-ratio that pins every length at the asked one
    source: str = Field(min_length=1)
    flags: dict[str, ToolFlag]
    # one run: (flag,) or (flag, value template): "{name}" a run's value, "${VAR}" the script's
    run: tuple[tuple[str, ...], ...] = Field(min_length=1)

    @property
    def extension(self) -> str:
        """The result file's extension: one JSON object, or JSON Lines."""
        return "json" if self.result == "vllm_json" else "jsonl"


class Sweep(Strict):
    ratio: int = Field(ge=2)
    max_points: int = Field(ge=2, le=64)
    prompts_per_client_from: str
    warmups_per_client: int = Field(ge=0)
    source: str = Field(min_length=1)


class ResultLimits(Strict):
    max_file_bytes: int = Field(gt=0)
    max_files: int = Field(gt=0)
    max_lines: int = Field(gt=0)
    physics_factor: float = Field(gt=1)
    source: str = Field(min_length=1)


class BenchFacts(Strict):
    tools: dict[Engine, Tool]
    sweep: Sweep
    results: ResultLimits


class _File(BenchFacts):
    fit: object  # engine/perf/user_fit.py reads it


def tool_for(result: ResultFormat) -> Engine:
    """The engine whose benchmark tool writes ``result`` files."""
    return next(e for e, tool in bench_facts().tools.items() if tool.result == result)


@cache
def bench_facts() -> BenchFacts:
    """``data/bench.yaml``'s tools, sweep and result bounds, validated once."""
    whole = load_data(_File, "bench.yaml")
    return BenchFacts(tools=whole.tools, sweep=whole.sweep, results=whole.results)
