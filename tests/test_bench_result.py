"""Benchmark result files read back (engine/measure/bench_result.py) in the tools' own formats
(tests/bench_files.py builds them as the tools' writers do), and every bad file refused with one
error naming the file, the line and the key: on the CLI one stderr line and exit 2, and the next
command still works."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest

from engine.cli import main
from engine.errors import InputError
from engine.measure.bench_compare import compare
from engine.measure.bench_data import bench_facts
from engine.measure.bench_result import read_result, read_results
from engine.scenario import make_scenario
from engine.study import study
from tests.bench_files import sglang_file, sglang_line, vllm_file, vllm_result


def test_a_vllm_save_result_file_is_one_run_at_its_concurrency() -> None:
    data = vllm_file(vllm_result(8, 80, 8192, 1024, 375.0, 12.75, 610.0))
    (run,) = read_result(data, "vllm-c8.json")
    assert (run.tool, run.concurrency, run.prompts_per_client) == ("vllm_json", 8, 10.0)
    assert (run.isl, run.osl) == (8192, 1024)
    assert (run.ttft_ms, run.tpot_ms, run.tokens_per_s) == (375.0, 12.75, 610.0)


def test_vllm_append_result_lines_and_a_pretty_printed_file_are_read() -> None:
    lines = [vllm_result(c, 10 * c, 1000, 100, 50.0 * c, 10.0, 100.0 * c) for c in (1, 2, 4)]
    appended = b"\n".join(vllm_file(r) for r in lines)
    assert [r.concurrency for r in read_result(appended, "a.json")] == [1, 2, 4]
    pretty = json.dumps(lines[1], indent=2).encode()
    (run,) = read_result(pretty, "pretty.json")
    assert (run.concurrency, run.line) == (2, 1)


def test_an_sglang_output_file_is_one_run_per_line_with_its_infinite_rate() -> None:
    lines = [sglang_line(c, 10 * c, 2048, 256, 80.0, 9.0, 300.0 * c) for c in (1, 4, 16)]
    data = sglang_file(lines)
    assert b"Infinity" in data  # json.dumps writes the unbounded request rate so
    runs = read_result(data, "sglang-c16.jsonl")
    assert [(r.tool, r.concurrency, r.line) for r in runs] == [
        ("sglang_jsonl", 1, 1),
        ("sglang_jsonl", 4, 2),
        ("sglang_jsonl", 16, 3),
    ]


def test_a_run_with_no_concurrency_cap_is_one_wave_of_every_prompt() -> None:
    (run,) = read_result(vllm_file(vllm_result(None, 200, 512, 128, 900.0, 30.0, 2000.0)), "b")
    assert (run.concurrency, run.prompts_per_client) == (200, 1.0)


def test_strings_in_a_result_file_stay_unread() -> None:
    r = vllm_result(4, 40, 1000, 100, 50.0, 10.0, 400.0)
    r["model_id"] = "\x1b]8;;https://evil.example\x07$(touch PWNED)\n"
    r["label"] = "<img src=x onerror=alert(1)>"
    (run,) = read_result(vllm_file(r), "c.json")
    assert "evil" not in repr(run) and "PWNED" not in repr(run)


def _refused(data: bytes, name: str = "run.json") -> InputError:
    with pytest.raises(InputError) as caught:
        read_result(data, name)
    assert caught.value.field == "bench_result"
    assert caught.value.expects is not None  # a coded refusal the pages word in both languages
    return caught.value


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("mean_tpot_ms", math.nan),
        ("mean_tpot_ms", math.inf),
        ("mean_ttft_ms", -1.0),
        ("output_throughput", 0.0),
        ("completed", 0),
        ("total_output_tokens", "many"),
        ("max_concurrency", 0),
    ],
)
def test_a_bad_value_is_refused_naming_its_file_line_and_key(key: str, value: object) -> None:
    r = vllm_result(4, 40, 1000, 100, 50.0, 10.0, 400.0)
    r[key] = value
    err = _refused(vllm_file(r), "vllm-c4.json")
    assert key in str(err) and "vllm-c4.json line 1" in str(err)


def test_1e400_is_not_a_measurement() -> None:
    text = vllm_file(vllm_result(4, 40, 1000, 100, 50.0, 10.0, 400.0)).decode()
    err = _refused(text.replace('"mean_tpot_ms": 10.0', '"mean_tpot_ms": 1e400').encode())
    assert "mean_tpot_ms" in str(err)


def test_a_missing_key_is_named() -> None:
    r = sglang_line(4, 40, 1000, 100, 50.0, 10.0, 400.0)
    del r["mean_ttft_ms"]
    assert "mean_ttft_ms" in str(_refused(sglang_file([r]), "s.jsonl"))


def test_an_open_loop_run_is_refused_not_compared() -> None:
    r = vllm_result(4, 40, 1000, 100, 50.0, 10.0, 400.0)
    r["request_rate"] = 2.5
    assert "request-rate inf" in str(_refused(vllm_file(r)))


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"{}",
        b'{"hello": "world"}',
        b"[1, 2, 3]",
        b"\xff\xfe not utf-8",
        b'{"num_prompts": 1, "date": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
        b'{"num_prompts": 1' + b"9" * 5000 + b', "date": "x"}',
        b"{not json",
    ],
    ids=["empty", "object", "other", "list", "utf8", "deep", "digits", "json"],
)
def test_malformed_files_get_one_clear_refusal(data: bytes) -> None:
    _refused(data)


def test_a_huge_file_is_refused_before_it_is_parsed() -> None:
    most = bench_facts().results.max_file_bytes
    err = _refused(b" " * (most + 1))
    assert f"{most:,}" in str(err)


def test_the_runs_and_files_are_bounded() -> None:
    line = vllm_file(vllm_result(1, 10, 100, 10, 20.0, 5.0, 50.0))
    most = bench_facts().results.max_lines
    _refused(b"\n".join([line] * (most + 1)))
    files = bench_facts().results.max_files
    with pytest.raises(InputError):
        read_results([("f.json", line)] * (files + 1))


def _llama_runs(tmp_path: Path, tpot_ms: float) -> list[str]:
    paths = []
    for c in (1, 8):
        path = tmp_path / f"vllm-c{c}.json"
        path.write_bytes(vllm_file(vllm_result(c, 10 * c, 8192, 1024, 300.0, tpot_ms, 100.0 * c)))
        paths.append(str(path))
    return paths


@pytest.mark.parametrize("tpot_ms", [1e-300, 1e300, 1e-4])
def test_a_figure_far_from_any_gpu_of_that_class_is_refused_by_name(
    tpot_ms: float, tmp_path: Path
) -> None:
    st = study(
        make_scenario(model="meta-llama/Meta-Llama-3.1-8B", gpu="H100", gpus_per_node=1, users=64)
    )
    runs = [
        r
        for p in _llama_runs(tmp_path, tpot_ms)
        for r in read_result(Path(p).read_bytes(), Path(p).name)
    ]
    with pytest.raises(InputError) as caught:
        compare(st, runs)
    assert "mean_tpot_ms" in str(caught.value) and "vllm-c1.json line 1" in str(caught.value)


def test_the_cli_says_one_line_and_exits_2_then_the_next_command_works(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.json"
    r = vllm_result(4, 40, 1000, 100, 50.0, 10.0, 400.0)
    r["mean_tpot_ms"] = math.nan
    bad.write_bytes(vllm_file(r))
    scenario = ["meta-llama/Meta-Llama-3.1-8B", "--gpu", "H100", "--gpus", "1"]
    for command in (["bench-compare", *scenario], ["study", *scenario]):
        assert main([*command, "--bench-result", str(bad)]) == 2
        out = capsys.readouterr()
        assert out.out == "" and out.err.count("\n") == 1
        assert out.err.startswith("error: bench_result:") and "mean_tpot_ms" in out.err
    assert main(["bench-compare", *scenario, "--bench-result", str(tmp_path)]) == 2
    assert "regular file" in capsys.readouterr().err
    assert main(["study", *scenario, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["verdict"]


def test_a_fifo_is_refused_at_once_not_waited_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fifo = tmp_path / "results.fifo"
    os.mkfifo(fifo)  # no writer: a blocking open would hang
    scenario = ["meta-llama/Meta-Llama-3.1-8B", "--gpu", "H100", "--gpus", "1"]
    for flag in ("--bench-result", "--bench-calibration"):
        assert main(["study", *scenario, flag, str(fifo)]) == 2
        assert "regular file" in capsys.readouterr().err
