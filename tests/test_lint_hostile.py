"""Hostile input to the linter: each case ends in one InputError naming the field, or a report,
in under a second; generated commands (flag soup, quotes, unicode, huge numbers, YAML) never
raise anything else."""

from __future__ import annotations

import json
import shlex
import time
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.cli import main
from engine.engines import adapter
from engine.errors import InputError
from engine.lint import MAX_COMMAND_CHARS, LintReport, lint_command
from engine.model.loader import load_catalog
from engine.present.lint_words import fix, format_report, message, report_dict
from tests.budget import examples

# CPU seconds of the calling thread: a bound on the work an input causes (issue: each hostile
# case within 1 s), which a busy machine does not inflate; speed itself is `make bench`'s.
LIMIT_S = 1.0

# A 368-byte manifest whose anchors expand 9^7 times (the "billion laughs" shape).
YAML_BOMB = """\
# seven levels of nine aliases: 9^7 = 4,782,969 lol
a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
command: [*g]
args: [--model, m, --tp, "8"]
"""
DIGITS = "9" * 309


@pytest.fixture(autouse=True, scope="module")
def _warm() -> None:
    """Load the tables, data files and one Study first: the timings measure the input."""
    for engine in ("vllm serve", "python -m sglang.launch_server --model-path"):
        lint_command(f"{engine} Qwen/Qwen3-32B", None, "H200", 8)
    lint_command("args: [--model, m, --gpu-memory-utilization, '0.9']")


def timed(call: Callable[[], object]) -> tuple[object, float]:
    start = time.thread_time()
    try:
        result: object = call()
    except InputError as err:
        result = err
    return result, time.thread_time() - start


def test_the_yaml_bomb_is_refused_in_under_a_second() -> None:
    assert len(YAML_BOMB) == 368
    result, seconds = timed(lambda: lint_command(YAML_BOMB))
    assert isinstance(result, InputError) and result.field == "command"
    assert "aliases" in str(result)
    assert seconds < LIMIT_S


def test_a_few_yaml_aliases_still_read() -> None:
    manifest = "x: &flags [--tp-size, '2']\ncommand: [python3, -m, sglang.launch_server]\n"
    manifest += "args: [--model-path, m]\ny: *flags\n"
    assert lint_command(manifest).engine == "sglang"


def test_deeply_nested_yaml_is_refused_in_under_a_second() -> None:
    result, seconds = timed(lambda: lint_command("args: " + "[" * 30_000))
    assert isinstance(result, InputError) and result.field == "command"
    assert seconds < LIMIT_S


@pytest.mark.parametrize(
    "text",
    ["sh -c " * 1100 + "ls -la", "command: [" + "sh, -c, " * 1100 + "ls]"],
    ids=["shell", "manifest"],
)
def test_1100_nested_sh_c_without_a_launcher_is_one_input_error(text: str) -> None:
    result, seconds = timed(lambda: lint_command(text))
    assert isinstance(result, InputError) and result.field == "command"
    assert seconds < LIMIT_S


def test_1100_nested_sh_c_words_end_quickly() -> None:
    words = "sh -c " * 1100 + "vllm serve m"
    result, seconds = timed(lambda: lint_command(words))
    assert isinstance(result, LintReport | InputError)
    assert seconds < LIMIT_S
    manifest = "command: [" + "sh, -c, " * 1100 + "'vllm serve m']"
    result, seconds = timed(lambda: lint_command(manifest))
    assert isinstance(result, LintReport | InputError)
    assert seconds < LIMIT_S


def test_sh_c_nested_past_the_limit_is_an_input_error() -> None:
    text = "vllm serve m -tp 2"
    for _ in range(9):
        text = "sh -c " + shlex.quote(text)
    result, seconds = timed(lambda: lint_command(text))
    assert isinstance(result, InputError) and "nested" in str(result)
    assert seconds < LIMIT_S
    two = "sh -c " + shlex.quote("bash -c " + shlex.quote("vllm serve m -tp 2"))
    assert lint_command(two).engine == "vllm"


@pytest.mark.parametrize(
    ("engine", "flag"),
    [
        ("vllm", "--tensor-parallel-size"),
        ("vllm", "--max-model-len"),
        ("vllm", "--pipeline-parallel-size"),
        ("vllm", "--data-parallel-size"),
        ("vllm", "--gpu-memory-utilization"),
        ("sglang", "--tp-size"),
        ("sglang", "--context-length"),
        ("sglang", "--pp-size"),
        ("sglang", "--dp-size"),
        ("sglang", "--ep-size"),
    ],
)
def test_a_309_digit_size_is_a_bad_value_finding(engine: str, flag: str) -> None:
    launch = "vllm serve" if engine == "vllm" else "python -m sglang.launch_server --model-path"
    text = f"{launch} Qwen/Qwen3-32B {flag} {DIGITS}"
    result, seconds = timed(lambda: lint_command(text, None, "H200", 8))
    assert isinstance(result, LintReport)
    bad = [f for f in result.findings if f.code == "bad-value"]
    assert bad and bad[0].severity == "error" and bad[0].flag == flag
    assert DIGITS not in message(bad[0])  # quoted short
    assert seconds < LIMIT_S


def test_a_309_digit_size_through_the_cli_is_one_report(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["lint", f"vllm serve m --tensor-parallel-size {DIGITS}", "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert "bad-value" in [f["code"] for f in out["findings"]]


def test_text_over_64_kb_is_refused() -> None:
    result, seconds = timed(lambda: lint_command("vllm serve m " + "x" * MAX_COMMAND_CHARS))
    assert isinstance(result, InputError) and "64 KB" in str(result)
    assert seconds < LIMIT_S


@pytest.mark.parametrize(
    "text",
    [
        " \n" * 30_000,
        "- " + "x\n- " * 15_000,
        "vllm serve m " + "<a> " * 15_000,
        "vllm serve m " + "${" * 20_000,
        "vllm serve m $(" + "(" * 30_000,
        "vllm serve m " + "'a'" * 20_000,
        "python -m sglang.launch_server " + "--e " * 16_000,
        "vllm serve m " + "--tensor-paralel " * 3_700,
        "vllm serve " + "a/" + "b-" * 30_000,
        "vllm serve m \\\n" + "  -tp 2 \\\n" * 6_000,
        "".join(f"X=a{i}\n" for i in range(5_000)) + "vllm serve m-$X",
        "command:" + " " * 60_000 + "x",
        "vllm serve m --hf-overrides " + shlex.quote("[" * 20_000),
        "vllm serve m --max-model-len " + shlex.quote("1" + " " * 60_000 + "x"),
        "python -m sglang.launch_server --context-length " + shlex.quote("9" * 60_000),
    ],
    ids=lambda t: repr(t[:24]),
)
def test_pathological_text_ends_in_under_a_second(text: str) -> None:
    result, seconds = timed(lambda: lint_command(text[:MAX_COMMAND_CHARS]))
    assert isinstance(result, LintReport | InputError)
    assert seconds < LIMIT_S


def test_findings_of_one_kind_are_capped_with_a_count() -> None:
    report = lint_command("vllm serve m " + " ".join(f"x{i}" for i in range(500)))
    strays = [f for f in report.findings if f.code == "unexpected-argument"]
    assert len(strays) == 21
    assert "480 more" in message(strays[-1])


def test_more_arguments_than_any_launch_command_is_an_input_error() -> None:
    result, seconds = timed(lambda: lint_command("vllm serve m " + "-tp 2 " * 600))
    assert isinstance(result, InputError) and "arguments" in str(result)
    assert seconds < LIMIT_S


# --- generated commands ------------------------------------------------------------------------

FLAGS = [
    *sorted(set(adapter("vllm").flags) | set(adapter("sglang").flags))[::3],
    "--enable-moe-ep",
    "--no-enable-prefix-caching",
    "--tp",
    "-tp",
    "--nsa-prefill-backend",
]
LAUNCHERS = [
    "vllm serve m",
    "vllm serve serve zai-org/GLM-5-FP8",
    "python -m vllm.entrypoints.openai.api_server --model Qwen/Qwen3-32B",
    "sglang serve --model-path deepseek-ai/DeepSeek-V3",
    "python3 -m sglang.launch_server --model-path nvidia/GLM-5.2-NVFP4",
    "docker run --gpus all vllm/vllm-openai:latest Qwen/Qwen3-Next-80B-A3B-Instruct",
    "X=$Y vllm serve meta-llama/Llama-4-Scout-17B-16E-Instruct",
]
values = st.one_of(
    st.sampled_from(["8", "0", "-1", "1e309", "nan", "inf", "0.97", "1.5", "32k", "auto", "fp8"]),
    st.integers(min_value=-(10**400), max_value=10**400).map(str),
    st.text(max_size=12),
    st.text(alphabet="'\"\\$`(){}[];&|<>#\n -=", max_size=8),
    st.text(alphabet=" \t1kK.", max_size=300),
)
flag_words = st.tuples(st.sampled_from(FLAGS), values, st.booleans()).map(
    lambda t: f"{t[0]}={t[1]}" if t[2] else f"{t[0]} {shlex.quote(t[1])}"
)
commands = st.tuples(
    st.sampled_from(LAUNCHERS), st.lists(flag_words, max_size=12), st.sampled_from(["", " \\\n"])
).map(lambda t: t[0] + t[2] + " ".join(t[1]))
manifests = st.lists(st.one_of(st.sampled_from(FLAGS), values), max_size=12).map(
    lambda words: "command: [python3, -m, sglang.launch_server]\nargs: " + json.dumps(words)
)
anything = st.one_of(
    commands,
    manifests,
    st.text(max_size=200),
    st.text(max_size=200).map(lambda t: "vllm serve " + t),
    st.text(max_size=200).map(lambda t: "args:\n  - " + t),
)


def _lint_any(text: str, with_model: bool) -> None:
    model = load_catalog("Qwen/Qwen3-8B") if with_model else None
    gpu, gpus = ("H200", 8) if with_model else (None, None)
    try:
        report = lint_command(text, model, gpu, gpus)
    except InputError as err:
        assert err.field == "command", err
        return
    assert isinstance(format_report(report), str)
    json.dumps(report_dict(report))
    for f in report.findings:
        assert f.severity in ("error", "warning", "info") and f.code and message(f) and fix(f)


@settings(max_examples=examples(400), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(anything)
def test_generated_commands_give_a_report_or_an_input_error(text: str) -> None:
    _lint_any(text, with_model=False)


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(commands)
def test_generated_commands_with_a_model_and_gpus_give_a_report_or_an_input_error(
    text: str,
) -> None:
    _lint_any(text, with_model=True)
