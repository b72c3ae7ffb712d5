"""Step 6 on hostile input: every case is one clear ``InputError`` (or a value left out with a
note), never a traceback or a hang, and each finishes in under a second.

Before these guards: a 40 KB ``non-default args: {`` line took over a minute (a regex quadratic
in the line), ``1`` followed by 400 zeros raised OverflowError, a 5,000-digit integer raised
Python's 4,300-digit ValueError, ``--log /dev/zero`` read until memory ran out and a FIFO hung
in ``open``, and a non-UTF-8 or deeply nested ``--model-dims`` file ended in a traceback.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from engine.errors import InputError
from engine.measure.backcalc import backcalculate, parse_engine_text
from engine.measure.kernels import __main__ as kernels_cli
from engine.measure.logs import MAX_HITS, scan_log
from engine.measure.measure_data import measure_facts
from engine.text.words import say


def cli_main(argv: list[str], predict: Any) -> int:
    """``python -m engine backcalc`` with a stand-in prediction (a leading ``backcalc`` is
    accepted)."""
    from engine.cli import main

    args = argv[1:] if argv[:1] == ["backcalc"] else argv
    return main(["backcalc", *args], backcalc_predict=predict)


pytestmark = pytest.mark.timeout(20)  # a regression fails here instead of hanging the run

# CPU seconds of the calling thread (the issue asks for each hostile case within 1 s): a bound
# on work that a busy machine does not inflate; speed itself is measured by `make bench`.
FAST = 1.0

ARGS = "INFO [utils.py:253] non-default args: {'model_tag': 'm', 'max_model_len': 8192}\n"
VLLM_POOL = (
    "INFO [gpu_worker.py:298] Available KV cache memory: 4.27 GiB\n"
    "INFO [kv_cache_utils.py:1087] GPU KV cache size: 34,952 tokens\n"
    "INFO [kv_cache_utils.py:1091] Maximum concurrency for 8,192 tokens per request: 4.27x\n"
)
VLLM_LOG = ARGS + VLLM_POOL
SGLANG_LOG = (
    "[TP0] KV Cache is allocated. #tokens: 370000, K size: 22.58 GB, V size: 22.58 GB\n"
    "[TP0] max_total_num_tokens=370000, chunked_prefill_size=8192, context_len=8192\n"
)


def timed(call: Callable[[], Any]) -> tuple[Any, float]:
    """What ``call`` returned or the InputError it raised, and the seconds it took."""
    start = time.thread_time()
    try:
        outcome = call()
    except InputError as err:
        outcome = err
    return outcome, time.thread_time() - start


def one_line_exit_2(code: int, capsys: pytest.CaptureFixture[str], field: str) -> None:
    captured = capsys.readouterr()
    assert code == 2
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {field}"), captured.err
    assert "Traceback" not in captured.err


# --- Regexes linear in the line length --------------------------------------------------------

FORTY_KB = 40_000


@pytest.mark.parametrize(
    "body",
    [
        "a" * FORTY_KB + "}",  # the reported line: one long word, then the closing brace
        "a" * FORTY_KB,
        "'a': 1, " * (FORTY_KB // 8) + "}",
        "a:" * (FORTY_KB // 2) + "}",
        " " * FORTY_KB + "}",
        "'gpu_memory_utilization" * (FORTY_KB // 23) + "}",
    ],
    ids=["word+brace", "word", "pairs", "colons", "spaces", "repeated-key"],
)
def test_a_40_kb_non_default_args_line_is_read_in_under_a_second(body: str) -> None:
    log = "INFO [utils.py:253] non-default args: {" + body + "\n" + VLLM_POOL
    reading, seconds = timed(lambda: parse_engine_text(log, None))
    assert seconds < FAST
    assert reading.tokens_capacity == 34_952  # the pool lines are still read


FILLERS = ["a", "1", " ", ",", "'", "{", ":", "=", "1,", "1.", "x", "\\", '"', "GB", "-"]


@pytest.mark.parametrize("key", [line.key for line in measure_facts().log_lines])
def test_every_log_line_pattern_is_linear_on_a_40_kb_line(key: str) -> None:
    line = measure_facts().log_line(key)
    base = VLLM_POOL if line.engine == "vllm" else SGLANG_LOG
    for filler in FILLERS:
        # First in the log: the lines read only once are read from this one.
        log = line.marker + filler * (FORTY_KB // len(filler)) + "\n" + base
        outcome, seconds = timed(lambda log=log: parse_engine_text(log, None))
        assert seconds < FAST, (key, filler, seconds)
        assert outcome is not None


@pytest.mark.parametrize(
    "line",
    [
        "vllm:cache_config_info{" + 'a="' + "x" * FORTY_KB,
        "vllm:cache_config_info{" + 'a="x",' * (FORTY_KB // 6) + "} 1.0",
        "vllm:kv_cache_usage_perc{" + "} " * (FORTY_KB // 2),
        "vllm:kv_cache_usage_perc" + " x" * (FORTY_KB // 2),
        "vllm:num_requests_running{" + '\\"' * (FORTY_KB // 2),
    ],
    ids=["open-label", "many-labels", "braces", "many-values", "escapes"],
)
def test_a_40_kb_metrics_line_is_read_in_under_a_second(line: str) -> None:
    outcome, seconds = timed(lambda: parse_engine_text(VLLM_LOG, line + "\n"))
    assert seconds < FAST
    assert outcome is not None


# --- Numbers that overflow, are not finite or are absurd --------------------------------------

HUGE = "1" + "0" * 400
DIGITS_5000 = "9" * 5000


@pytest.mark.parametrize(
    ("log", "line"),
    [
        (VLLM_LOG.replace("4.27 GiB", f"{HUGE} GiB"), 2),
        (VLLM_LOG.replace("4.27 GiB", "1e400 GiB"), 2),
        (VLLM_LOG.replace("4.27 GiB", "nan GiB"), 2),
        (VLLM_LOG.replace("4.27 GiB", "inf GiB"), 2),
        (VLLM_LOG.replace("4.27 GiB", "-2.81 GiB"), 2),
        (VLLM_LOG.replace("34,952 tokens", f"{DIGITS_5000} tokens"), 3),
        (SGLANG_LOG.replace("#tokens: 370000", f"#tokens: {DIGITS_5000}"), 1),
        (SGLANG_LOG.replace("K size: 22.58 GB", f"K size: {HUGE} GB"), 1),
        (SGLANG_LOG.replace("V size: 22.58 GB", "V size: NaN GB"), 1),
        (SGLANG_LOG.replace("max_total_num_tokens=370000", "max_total_num_tokens=1e400"), 2),
    ],
    ids=[
        "gib-400-zeros",
        "gib-1e400",
        "gib-nan",
        "gib-inf",
        "gib-negative",
        "tokens-5000-digits",
        "sglang-tokens-5000-digits",
        "sglang-k-400-zeros",
        "sglang-v-nan",
        "sglang-max-total-1e400",
    ],
)
def test_a_pool_number_out_of_range_is_an_input_error_naming_the_line(log: str, line: int) -> None:
    err, seconds = timed(lambda: parse_engine_text(log, None))
    assert seconds < FAST
    assert isinstance(err, InputError), err
    assert err.field == "log"
    assert str(err).split(": ", 1)[1].startswith(f"log line {line} ")


@pytest.mark.parametrize(
    "metrics",
    [
        f"sglang:max_total_num_tokens {HUGE}\n",
        "sglang:max_total_num_tokens 1e400\n",
        "sglang:max_total_num_tokens NaN\n",
        f"sglang:max_total_num_tokens {DIGITS_5000}\n",
        'vllm:cache_config_info{kv_cache_size_tokens="+Inf",block_size="16"} 1.0\n',
        f'vllm:cache_config_info{{kv_cache_size_tokens="{DIGITS_5000}"}} 1.0\n',
        'vllm:cache_config_info{kv_cache_memory_bytes="1e400",kv_cache_size_tokens="9"} 1.0\n',
    ],
)
def test_a_capacity_metric_out_of_range_is_an_input_error_naming_the_metric(metrics: str) -> None:
    err, seconds = timed(lambda: parse_engine_text(None, metrics))
    assert seconds < FAST
    assert isinstance(err, InputError), err
    assert err.field == "metrics"
    assert str(err).split(": ", 1)[1].startswith("metrics line 1 ")


def test_a_usage_metric_that_is_nan_is_left_out_with_a_note() -> None:
    metrics = (
        'vllm:cache_config_info{num_gpu_blocks="100",block_size="16"} 1.0\n'
        'vllm:kv_cache_usage_perc{engine="0"} NaN\n'
        'vllm:kv_cache_usage_perc{engine="1"} 1e400\n'
    )
    reading, seconds = timed(lambda: parse_engine_text(None, metrics))
    assert seconds < FAST
    assert reading.tokens_capacity == 1600 and reading.usage_ratio is None
    assert sum("usage_ratio left out" in say(e) for e in reading.evidence) == 2


def test_launch_arguments_that_are_not_numbers_are_left_out_with_a_note() -> None:
    log = VLLM_LOG.replace(
        "'max_model_len': 8192", f"'max_model_len': {DIGITS_5000}, 'gpu_memory_utilization': nan"
    )
    reading, seconds = timed(lambda: parse_engine_text(log, None))
    assert seconds < FAST
    assert reading.max_model_len == 8192  # from the 'Maximum concurrency' line instead
    assert reading.memory_fraction is None
    assert any("memory_fraction left out" in say(e) for e in reading.evidence)
    assert backcalculate(reading, 131_072, 1, "gqa").tokens_capacity == 34_952


# --- Files that never end, and text over the cap ----------------------------------------------


def _cli(args: list[str]) -> int:
    return cli_main(["m", *args], lambda source, tp: (131_072.0, "gqa", []))


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_log_from_a_device_is_refused_in_under_a_second(
    device: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, seconds = timed(lambda: _cli(["--log", device]))
    assert seconds < FAST
    one_line_exit_2(code, capsys, "log")


def test_log_from_a_fifo_is_refused_without_waiting_for_a_writer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fifo = tmp_path / "server.log"
    os.mkfifo(fifo)
    code, seconds = timed(lambda: _cli(["--log", str(fifo)]))
    assert seconds < FAST
    one_line_exit_2(code, capsys, "log")


def test_metrics_from_a_directory_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "server.log"
    log.write_text(VLLM_LOG)
    code, seconds = timed(lambda: _cli(["--log", str(log), "--metrics", str(tmp_path)]))
    assert seconds < FAST
    one_line_exit_2(code, capsys, "metrics")


def test_a_log_file_over_the_cap_is_refused_before_it_is_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    big = tmp_path / "server.log"
    with big.open("wb") as f:
        f.truncate(measure_facts().limits.text_bytes + 1)  # sparse: no disk, no time
    code, seconds = timed(lambda: _cli(["--log", str(big)]))
    assert seconds < FAST
    one_line_exit_2(code, capsys, "log")


def test_pasted_text_over_the_cap_is_refused() -> None:
    text = VLLM_LOG + "x" * measure_facts().limits.text_bytes
    err, seconds = timed(lambda: parse_engine_text(None, text))
    assert seconds < FAST
    assert isinstance(err, InputError) and err.field == "metrics"
    assert "16 MiB" in str(err)


@pytest.mark.parametrize(
    "args",
    [
        ["--log", "LOG"],
        ["--log", "GOOD", "--metrics", "LOG"],
    ],
)
def test_a_log_file_with_an_overflowing_number_is_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    bad = tmp_path / "bad.txt"
    bad.write_text(VLLM_LOG.replace("4.27 GiB", f"{HUGE} GiB"))
    good = tmp_path / "good.log"
    good.write_text(VLLM_LOG)
    if "--metrics" in args:
        bad.write_text(f'vllm:cache_config_info{{kv_cache_size_tokens="{DIGITS_5000}"}} 1\n')
    paths = {"LOG": str(bad), "GOOD": str(good)}
    code, seconds = timed(lambda: _cli([paths.get(a, a) for a in args]))
    assert seconds < FAST
    one_line_exit_2(code, capsys, "metrics" if "--metrics" in args else "log")


# --- --model-dims files the kernels CLI refuses ------------------------------------------------


@pytest.mark.parametrize(
    "content",
    [
        b"\xff\xfe{\x00\x00",  # not UTF-8
        b"[" * 100_000,  # nested past the JSON decoder's recursion limit
        b'{"a":' * 50_000 + b"1" + b"}" * 50_000,
    ],
    ids=["not-utf8", "nested-lists", "nested-objects"],
)
def test_kernels_model_dims_file_that_is_not_json_is_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes
) -> None:
    spec = tmp_path / "dims.json"
    spec.write_bytes(content)
    code, seconds = timed(lambda: kernels_cli.main(["--model-dims", str(spec), "--only", "x"]))
    assert seconds < FAST
    one_line_exit_2(code, capsys, "model-dims")


@pytest.mark.parametrize(
    ("text", "field"),
    [("[" * 60_000, "model-dims"), ("[" * 100_000, "arguments"), ("/dev/zero", "model-dims")],
)
def test_kernels_model_dims_text_nested_or_a_device_is_one_line_exit_2(
    capsys: pytest.CaptureFixture[str], text: str, field: str
) -> None:
    code, seconds = timed(lambda: kernels_cli.main(["--model-dims", text, "--only", "x"]))
    assert seconds < FAST
    one_line_exit_2(code, capsys, field)  # over 64 KB, the argument itself is refused


def test_a_log_of_repeated_pool_lines_keeps_a_bounded_number_of_matches() -> None:
    repeated = "INFO GPU KV cache size: 1,000 tokens\n" * 20_000
    scan, seconds = timed(lambda: scan_log(VLLM_LOG + repeated))
    assert seconds < FAST
    assert len(scan.hits["vllm_tokens"]) == MAX_HITS
    assert scan.counts["vllm_tokens"] == 20_001
    assert parse_engine_text(VLLM_LOG + repeated, None).tokens_capacity == 34_952  # the first
