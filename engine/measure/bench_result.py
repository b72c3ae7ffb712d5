"""Benchmark result files read back: ``vllm bench serve --save-result`` JSON and
``python -m sglang.bench_serving --output-file`` JSONL, in the tools' own formats.

Each line of a file is one run (vLLM writes one JSON object, several with ``--append-result``;
SGLang appends one line per run); a file pretty-printed by hand is read whole. Only the keys the
comparison needs are read, through pydantic models of what each tool's writer puts there
(data/bench.yaml results: vllm-serve main_async's ``result_json``, sglang-serve benchmark()'s
``result``); every other key, and every string in the file, stays unread. The bytes are bounded
before parsing, the runs per file and the files too; every number must be finite and in range
(SGLang writes its unbounded request rate as ``Infinity``: that key alone may be infinite). A bad
file is one ``InputError`` naming the file, the line and the key.
"""

from __future__ import annotations

import contextlib
import math
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from engine import errors as E
from engine.decision import Code, Name
from engine.errors import InputError
from engine.measure.bench_data import ResultFormat, bench_facts
from engine.measure.input_guards import read_bytes
from engine.model.loader import parse_json_bytes
from engine.perf.stack_calibration import refusal
from engine.perf.user_fit import BenchPoint
from engine.scenario import MAX_CONTEXT, MAX_USERS

FIELD = "bench_result"
MAX_TOKENS = 10**15

# what the reader refuses besides a key's value
TOO_MANY_FILES = Code("error.bench.too_many_files", "most", "got")
TOO_MANY_RUNS = Code("error.bench.too_many_runs", "file", "most")
NOT_A_RESULT = Code("error.bench.not_a_result", "file", "line")
OPEN_LOOP = Code("error.bench.open_loop", "file", "line", "rate")
IN_FILE = Code("error.bench.in_file", "file", "line", "expected")
NO_RUNS = Code("error.bench.no_runs", "file")

_Count = Annotated[int, Field(ge=1, le=MAX_TOKENS)]
_Positive = Annotated[float, Field(gt=0)]


class _Run(BaseModel):
    """The keys both tools write (vLLM serve.py benchmark(); SGLang serving.py benchmark())."""

    model_config = ConfigDict(extra="ignore", frozen=True, allow_inf_nan=False)

    max_concurrency: Annotated[int, Field(ge=1, le=MAX_USERS)] | None
    completed: Annotated[int, Field(ge=1, le=MAX_TOKENS)]
    total_input_tokens: _Count
    total_output_tokens: _Count
    duration: _Positive
    output_throughput: _Positive
    mean_ttft_ms: _Positive
    mean_tpot_ms: _Positive


class VllmRun(_Run):
    """vLLM's ``result_json``: ``request_rate`` is the text "inf" when unbounded."""

    num_prompts: Annotated[int, Field(ge=1, le=MAX_TOKENS)]
    request_rate: Literal["inf"] | _Positive


class SglangRun(_Run):
    """SGLang's ``result``: ``request_rate`` a float, written ``Infinity`` when unbounded."""

    request_rate: Annotated[float, Field(gt=0, allow_inf_nan=True)] | Literal["trace"]


@dataclass(frozen=True)
class BenchRun:
    """One run read from a file: where it was (file name as given, line), the tool's format,
    and the run as the speed model compares it (tokens/s for the whole endpoint)."""

    file: str
    line: int
    tool: ResultFormat
    concurrency: int
    prompts_per_client: float
    isl: int
    osl: int
    ttft_ms: float
    tpot_ms: float
    tokens_per_s: float

    def point(self, gpus: int) -> BenchPoint:
        """The run as the fit reads it: tokens/s per GPU of an endpoint of ``gpus`` GPUs."""
        return BenchPoint(
            self.concurrency,
            self.isl,
            self.osl,
            self.prompts_per_client,
            self.ttft_ms,
            self.tpot_ms,
            self.tokens_per_s / gpus,
        )


def _format(obj: dict[str, Any]) -> ResultFormat | None:
    """Which tool wrote ``obj``: vLLM's result_json carries num_prompts and its date; SGLang's
    result its dataset and random lengths (and no num_prompts)."""
    if "num_prompts" in obj and "date" in obj:
        return "vllm_json"
    if "random_input_len" in obj and "dataset_name" in obj:
        return "sglang_jsonl"
    return None


def _run(obj: Any, file: str, line: int) -> BenchRun:
    where = Name(file[:120])
    if not isinstance(obj, dict) or (tool := _format(obj)) is None:
        raise InputError(FIELD, NOT_A_RESULT(file=where, line=line))
    model = VllmRun if tool == "vllm_json" else SglangRun
    try:
        run = model.model_validate(obj)
    except ValidationError as err:
        raise _in_file(refusal(FIELD, err), file, line) from None
    rate = run.request_rate
    if rate != "inf" and not (isinstance(rate, float) and math.isinf(rate)):
        raise InputError(FIELD, OPEN_LOOP(file=where, line=line, rate=Name(str(rate)[:40])))
    prompts = run.num_prompts if isinstance(run, VllmRun) else run.completed
    clients = run.max_concurrency or prompts  # no cap: every prompt at once, one wave
    return BenchRun(
        file=file,
        line=line,
        tool=tool,
        concurrency=min(clients, prompts),
        prompts_per_client=max(1.0, prompts / clients),
        isl=min(MAX_CONTEXT, max(1, round(run.total_input_tokens / run.completed))),
        osl=min(MAX_CONTEXT, max(1, round(run.total_output_tokens / run.completed))),
        ttft_ms=run.mean_ttft_ms,
        tpot_ms=run.mean_tpot_ms,
        tokens_per_s=run.output_throughput,
    )


def _in_file(err: InputError, file: str, line: int) -> InputError:
    """``err`` (about a value) said of the run at ``file`` line ``line``."""
    return InputError(FIELD, IN_FILE(file=Name(file[:120]), line=line, expected=err.expects))


def _parse(data: bytes, file: str, line: int) -> Any:
    try:
        return parse_json_bytes(data, FIELD)
    except InputError as err:
        raise _in_file(err, file, line) from None


def _objects(data: bytes, file: str) -> list[tuple[int, Any]]:
    """Each non-empty line parsed (JSON Lines), or the whole file as one JSON value when its
    first line is not JSON by itself (a result pretty-printed by hand)."""
    lines = [(i, ln) for i, ln in enumerate(data.split(b"\n"), 1) if ln.strip()]
    if not lines:
        raise InputError(FIELD, NO_RUNS(file=Name(file[:120])))
    most = bench_facts().results.max_lines
    if len(lines) > most:
        raise InputError(FIELD, TOO_MANY_RUNS(file=Name(file[:120]), most=most))
    try:
        first = parse_json_bytes(lines[0][1], FIELD)
    except InputError:
        return [(1, _parse(data, file, 1))]
    return [(lines[0][0], first)] + [(i, _parse(ln, file, i)) for i, ln in lines[1:]]


def read_result(data: bytes, file: str) -> list[BenchRun]:
    """Every run of one result file (bounded, validated; the first bad run refuses the file)."""
    limit = bench_facts().results.max_file_bytes
    if len(data) > limit:
        raise InputError(FIELD, E.FILE_SIZE(most=limit, got=len(data)))
    return [_run(obj, file, line) for line, obj in _objects(data, file)]


def read_results(files: Sequence[tuple[str, bytes]]) -> list[BenchRun]:
    """Every run of every file, in order; at most ``max_files`` files."""
    most = bench_facts().results.max_files
    if len(files) > most:
        raise InputError(FIELD, TOO_MANY_FILES(most=most, got=len(files)))
    return [run for name, data in files for run in read_result(data, name)]


def read_result_files(paths: Sequence[str]) -> list[BenchRun]:
    """The runs of the files at ``paths`` (the CLI's): each a regular file read without blocking
    and bounded (``engine.measure.input_guards.read_bytes``), at most ``max_files`` of them."""
    facts = bench_facts().results
    if len(paths) > facts.max_files:
        raise InputError(FIELD, TOO_MANY_FILES(most=facts.max_files, got=len(paths)))
    return read_results([(p, _read(p, facts.max_file_bytes)) for p in paths])


def _read(path: str, limit: int) -> bytes:
    """``read_bytes`` after a size check of our own (its refusal speaks of log files)."""
    with contextlib.suppress(OSError):  # read_bytes says what is wrong with an unreadable path
        info = os.stat(path)
        size = info.st_size
        if stat.S_ISREG(info.st_mode) and size > limit:
            raise InputError(FIELD, E.FILE_SIZE(most=limit, got=size))
    return read_bytes(path, FIELD, limit)
