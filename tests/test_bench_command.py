"""The benchmark that tests a plan (engine/measure/bench_command.py): every word it passes to
``vllm bench serve`` / ``python3 -m sglang.bench_serving`` is in that tool's table
(data/bench.yaml, read from the tools' source), the sweep is the speed chart's ladder at the
scenario's tokens, and the script is as hostile-safe as the launch scripts: bash runs exactly the
intended argv (launchers stubbed, tests/shell_stub.py), whatever the config says."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hs

from engine.cli import main
from engine.errors import InputError
from engine.measure.bench_command import BenchError, BenchPlan, Expand, bench_plan, checked, ladder
from engine.measure.bench_data import bench_facts
from engine.perf.factors import perf_facts
from engine.present.bench_script import bench_json, bench_script
from engine.scenario import make_scenario
from engine.study import Study, study
from tests import shell_stub
from tests.test_injection import hostile, hostile_study

VARS = {"HOST": "127.0.0.1", "PORT": "8000", "RESULT_DIR": "bench-results"}


def _study(**fields: Any) -> Study:
    return study(make_scenario(source="catalog", **fields))


def _plan(st: Study) -> BenchPlan:
    bp = bench_plan(st)
    assert bp is not None
    return bp


LLAMA = {"model": "meta-llama/Meta-Llama-3.1-8B", "gpu": "H100", "gpus_per_node": 1, "users": 64}
DEEPSEEK = {
    "model": "deepseek-ai/DeepSeek-V3",
    "engine": "sglang",
    "gpu": "H200",
    "gpus_per_node": 8,
    "nodes": 2,
    "users": 128,
}


def expanded(bp: BenchPlan) -> list[list[str]]:
    """Each run's argv as bash hands it to the tool, with the script's default variables."""
    out = []
    for run in bp.runs:
        words = []
        for w in run.argv:
            words.append(VARS[w.var] + w.tail if isinstance(w, Expand) else w)
        out.append(words)
    return out


def value(argv: list[str], flag: str) -> str:
    return argv[argv.index(flag) + 1]


@pytest.mark.parametrize("fields", [LLAMA, DEEPSEEK], ids=["vllm", "sglang"])
def test_every_word_of_every_run_is_in_the_tools_table(fields: dict[str, Any]) -> None:
    bp = _plan(_study(**fields))
    tool = bench_facts().tools[bp.engine]
    for run in bp.runs:
        argv = list(run.argv)
        assert tuple(argv[: len(tool.program)]) == tool.program
        rest = argv[len(tool.program) :]
        i = 0
        while i < len(rest):
            flag = rest[i]
            assert isinstance(flag, str) and flag in tool.flags, flag
            row = tool.flags[flag]
            if row.value:
                value = rest[i + 1]
                assert not (isinstance(value, str) and value.startswith("--"))
                if row.choices is not None:
                    assert value in row.choices
                i += 2
            else:
                i += 1


def test_a_flag_outside_the_table_is_a_bug_not_a_command() -> None:
    tool = bench_facts().tools["vllm"]
    with pytest.raises(BenchError):
        checked(tool, [("--num-prompt", "10")])  # SGLang's docstring spelling, not a flag
    with pytest.raises(BenchError):
        checked(tool, [("--save-result", "yes")])  # takes no value
    with pytest.raises(BenchError):
        checked(tool, [("--dataset-name", "sharegpt")])  # not the random dataset


def test_the_sweep_doubles_to_the_requests_the_kv_holds_with_the_users_between() -> None:
    st = _study(**LLAMA)
    bp = _plan(st)
    assert bp.top == st.fit.running  # one server: every request the layout's KV holds
    clients = [r.concurrency for r in bp.runs]
    assert clients == [1, 2, 4, 8, 16, 32, bp.top] and bp.top == 50
    assert ladder(100, 24) == (1, 2, 4, 8, 16, 24, 32, 64, 100)
    assert len(ladder(1_000_000, 3)) <= bench_facts().sweep.max_points
    assert {1, 3, 1_000_000} <= set(ladder(1_000_000, 3))


def test_each_run_sends_the_benchmark_conventions_prompts_per_client_at_the_scenarios_tokens() -> (
    None
):
    st = _study(**LLAMA)
    bp = _plan(st)
    isl, osl = st.scenario.workload(st.context)
    per_client = perf_facts().benchmark.prompts_per_client
    for run, argv in zip(bp.runs, expanded(bp), strict=True):
        assert run.num_prompts == math.ceil(per_client * run.concurrency)
        assert value(argv, "--num-prompts") == str(run.num_prompts)
        assert value(argv, "--max-concurrency") == str(run.concurrency)
        assert value(argv, "--random-input-len") == str(isl) == "8192"
        assert value(argv, "--random-output-len") == str(osl) == "1024"
        assert value(argv, "--request-rate") == "inf"


def test_the_random_lengths_are_pinned_as_each_tool_reads_its_range_ratio() -> None:
    # vLLM draws [len * (1 - r), len * (1 + r)]: r = 0; SGLang draws [len * r, len]: r = 1
    for fields, pinned in ((LLAMA, "0"), (DEEPSEEK, "1")):
        for argv in expanded(_plan(_study(**fields))):
            assert value(argv, "--random-range-ratio") == pinned


def test_a_plan_of_several_servers_drives_the_first_with_its_share() -> None:
    st = _study(**DEEPSEEK)
    bp = _plan(st)
    assert st.layout.replicas == 2 and bp.servers == 2
    assert bp.top == st.fit.running // 2 and bp.users == 64
    assert bp.gpus == st.layout.gpus // 2 == 8


def test_bash_runs_exactly_the_intended_runs(tmp_path: Path) -> None:
    box = shell_stub.sandbox(tmp_path)
    for fields in (LLAMA, DEEPSEEK):
        st = _study(**fields)
        bp = _plan(st)
        calls = shell_stub.run(box, bench_script(st, bp))
        assert calls == [[Path(a[0]).name, *a[1:]] for a in expanded(bp)]
        assert (box.cwd / "bench-results").is_dir()
    assert shell_stub.payload_ran(box) == []


def test_a_blocked_plan_stops_before_any_run(tmp_path: Path) -> None:
    st = _study(model="deepseek-ai/DeepSeek-V3", gpu="H100", gpus_per_node=1, users=1)
    assert st.plan is not None and not st.plan.runnable
    bp = _plan(st)
    box = shell_stub.sandbox(tmp_path)
    assert shell_stub.run(box, bench_script(st, bp)) == []


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(strings=hs.lists(hostile, min_size=8, max_size=8), name=hostile)
def test_a_hostile_config_and_file_name_stay_data_in_the_script(
    strings: list[str], name: str, tmp_path: Path
) -> None:
    try:
        st = hostile_study(0, strings, name)
    except InputError:
        return  # refused at the boundary with a named field: nothing was generated
    box = shell_stub.sandbox(tmp_path / "box")
    for engine in ("vllm", "sglang"):
        bp = bench_plan(st, engine)  # type: ignore[arg-type]
        assert bp is not None
        for lang in ("en", "ko"):
            calls = shell_stub.run(box, bench_script(st, bp, lang))  # type: ignore[arg-type]
            assert calls == [[Path(a[0]).name, *a[1:]] for a in expanded(bp)]
    assert shell_stub.payload_ran(box) == []


def test_the_cli_prints_the_script_and_its_runs_as_json(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["bench-command", "meta-llama/Meta-Llama-3.1-8B", "--gpu", "H100", "--gpus", "1"]
    assert main([*argv, "--users", "64"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("#!/usr/bin/env bash") and text.count("\nvllm bench serve") == 7
    assert main([*argv, "--users", "64", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [r["concurrency"] for r in data["runs"]] == [1, 2, 4, 8, 16, 32, 50]
    assert data["runs"][0]["argv"][:3] == ["vllm", "bench", "serve"]
    assert "${RESULT_DIR}" in data["runs"][0]["argv"]
    assert data["compare"].startswith("python -m engine bench-compare")
    st = _study(**LLAMA)
    assert data == json.loads(json.dumps(bench_json(st, _plan(st))))
