"""A correction that lints clean wherever the Study has a layout that runs on the GPUs given: the
linter applies each finding's fix and lints the result again until no error remains or no fix
makes progress; a fix picks a value the Study accepts (its layout on the GPUs given, or its least
re-checked change a flag can say); ``python -m engine lint`` exits 1 on an error (``--strict``: a
warning), 0 otherwise, 2 on bad input; and the shell text the correction hands back runs the same
argv with no payload."""

from __future__ import annotations

import json
import re
import shlex

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from engine.alternatives import alternatives
from engine.cli import main
from engine.errors import InputError
from engine.lint import LintReport, lint_command
from engine.lint.model import resolve, scenario_fields, with_overrides
from engine.model.loader import load_catalog, load_model
from engine.present.lint_words import report_dict
from engine.scenario import MAX_GPUS_PER_NODE, make_scenario
from engine.study import study
from tests import shell_stub
from tests.budget import examples
from tests.test_lint_requote import MARK, word_text
from tests.test_official_commands_fixture import commands


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def errors(report: LintReport) -> list[str]:
    return [f.code for f in report.findings if f.severity == "error"]


def relint(report: LintReport, model: str | None, gpu: str | None, gpus: int | None) -> LintReport:
    """The corrected command linted again where it goes back: after the script's assignments
    the check read (a correction keeps ``$DTYPE`` as ``$DTYPE``)."""
    head = "".join(f"{k}={shlex.quote(v)}\n" for k, v in report.variables.items())
    return lint_command(head + report.corrected, model, gpu, gpus)


# --- the fixes the issue names ------------------------------------------------------------------


def _tp(report: LintReport) -> int:
    m = re.search(r"--tensor-parallel-size (\d+)", report.corrected)
    assert m is not None, report.corrected
    return int(m.group(1))


def test_tp_3_on_a_128_head_model_becomes_the_nearest_tp_that_divides_and_fits() -> None:
    model = "deepseek-ai/DeepSeek-V3"
    assert load_catalog(model).config.num_attention_heads == 128
    report = lint_command(f"vllm serve {model} --tensor-parallel-size 3", None, "H200", 8)
    assert "tp-heads" in errors(report)
    assert report.corrected_clean
    tp = _tp(report)
    assert 128 % tp == 0 and tp <= 8
    assert errors(relint(report, None, "H200", 8)) == []


def test_tp_3_on_a_small_model_picks_a_neighbour_not_the_largest() -> None:
    report = lint_command("vllm serve Qwen/Qwen3-8B --tensor-parallel-size 3", None, "H200", 8)
    assert report.corrected_clean and _tp(report) in (2, 4)


@pytest.mark.parametrize("value", ["fp4", "nvfp4", "nvfp4_ds_mla"])
def test_fp4_kv_on_hopper_becomes_fp8(value: str) -> None:
    report = lint_command(f"vllm serve Qwen/Qwen3-8B --kv-cache-dtype {value}", None, "H200", 1)
    assert errors(report) or [f for f in report.findings if f.severity == "warning"]
    assert report.corrected_clean
    assert "--kv-cache-dtype fp8" in report.corrected and "fp4" not in report.corrected
    again = relint(report, None, "H200", 1)
    assert "nvfp4-without-fp4" not in again.codes and errors(again) == []


def test_a_model_too_large_for_the_gpus_given_has_no_clean_correction() -> None:
    report = lint_command("vllm serve deepseek-ai/DeepSeek-V3", None, "H200", 1)
    assert not report.corrected_clean
    assert "does-not-fit" in [f.code for f in report.remaining if f.severity == "error"]
    data = json.loads(json.dumps(report_dict(report)))
    assert data["corrected_clean"] is False and data["remaining"]


def test_too_few_gpus_for_the_weights_at_tp_1_is_fixed_with_the_tp_that_fits() -> None:
    report = lint_command("vllm serve deepseek-ai/DeepSeek-V3", None, "H200", 8)
    assert "does-not-fit" in errors(report)
    assert report.corrected_clean and _tp(report) == 8


# --- fixes the Study accepts on the GPUs given (issue 18) ---------------------------------------


def _layout_of(argv: tuple[str, ...]) -> tuple[int, int, int, bool]:
    """(TP, DP, PP, EP) as a vLLM command's flags set them."""

    def size(flag: str) -> int:
        return int(argv[argv.index(flag) + 1]) if flag in argv else 1

    return (
        size("--tensor-parallel-size"),
        size("--data-parallel-size"),
        size("--pipeline-parallel-size"),
        "--enable-expert-parallel" in argv,
    )


def _runs_on(
    model: str, gpu: str, gpus: int, engine: str, **fields: object
) -> set[tuple[int, ...]]:
    """The layouts (TP, DP-attention, PP, EP, replicas) the Study of ``model`` on ``gpus`` × ``gpu``
    (one node, the layout left to the search) holds the weights at."""
    st = study(
        make_scenario(
            **scenario_fields(load_model(model)),
            gpu=gpu,
            gpus_per_node=gpus,
            nodes=1,
            engine=engine,
            users=1,
            **fields,
        )
    )
    return {
        (c.layout.tp, c.layout.dp, c.layout.pp, int(c.layout.ep), c.layout.replicas)
        for c in st.search.candidates
        if c.weights_fit
    }


def test_dp_8_with_ep_on_4_b200_becomes_a_layout_the_study_runs_on_the_4_gpus() -> None:
    cmd = "vllm serve deepseek-ai/DeepSeek-V3.2-Exp -dp 8 --enable-expert-parallel"
    report = lint_command(cmd, None, "B200", 4)
    assert "parallel-exceeds-gpus" in errors(report)
    assert report.corrected_clean, report.remaining
    again = relint(report, None, "B200", 4)
    assert errors(again) == [] and again.gpus is not None and again.gpus <= 4
    tp, dp, pp, ep = _layout_of(report.corrected_argv)
    assert report.linted_against is not None
    assert (tp, dp, pp, int(ep), 1) in _runs_on(report.linted_against, "B200", 4, "vllm")


def test_dp_4_replicas_on_2_a100_become_a_layout_the_study_runs_on_the_2_gpus() -> None:
    model = "Qwen/Qwen2.5-VL-7B-Instruct"
    report = lint_command(f"vllm serve {model} --data-parallel-size 4", None, "A100 80GB", 2)
    assert "parallel-exceeds-gpus" in errors(report)
    assert report.corrected_clean, report.remaining
    again = relint(report, None, "A100 80GB", 2)
    assert errors(again) == [] and again.gpus is not None and again.gpus <= 2
    tp, replicas, pp, _ = _layout_of(report.corrected_argv)  # a dense model: DP is replicas
    runs = _runs_on(model, "A100 80GB", 2, "vllm", images=True)
    assert (tp, 1, pp, 0, replicas) in runs


def test_a_model_too_large_at_sglangs_own_fraction_takes_the_studys_re_checked_fraction() -> None:
    model = "meta-llama/Llama-4-Scout-17B-16E-Instruct"
    cmd = f"python -m sglang.launch_server --model-path {model} --tp-size 4 --context-length 32768"
    report = lint_command(cmd, None, "H100", 4)
    assert "does-not-fit" in errors(report)
    assert report.corrected_clean, report.remaining
    assert errors(relint(report, None, "H100", 4)) == []
    argv = report.corrected_argv
    assert argv[argv.index("--tp-size") + 1] == "4"  # the command's layout kept
    fraction = float(argv[argv.index("--mem-fraction-static") + 1])
    pinned = study(
        make_scenario(
            **scenario_fields(load_model(model)),
            gpu="H100",
            gpus_per_node=4,
            nodes=1,
            engine="sglang",
            users=1,
            context=32768,
            tp=4,
            images=True,
        )
    )
    assert not pinned.search.pick.weights_fit  # blocked as the command stands
    offered = [dict(a.change).get("memory_fraction") for a in alternatives(pinned)]
    assert fraction in offered  # the least change the Study re-checked that a flag can say


# --- exit codes ---------------------------------------------------------------------------------


def test_lint_exits_1_on_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    cmd = "vllm serve Qwen/Qwen3-8B --tensor-parallel-size 3"
    assert main(["lint", cmd, "--gpu", "H200", "--gpus", "8"]) == 1
    assert main(["lint", cmd, "--gpu", "H200", "--gpus", "8", "--json"]) == 1
    assert json.loads(capsys.readouterr().out.split("\n}\n")[-1] or "{}") is not None


def test_lint_exits_0_on_warnings_and_1_with_strict(capsys: pytest.CaptureFixture[str]) -> None:
    cmd = "vllm serve Qwen/Qwen3-8B --gpu-memory-utilization 0.99"
    report = lint_command(cmd, None, "H200", 1)
    assert not errors(report) and report.warnings
    assert main(["lint", cmd, "--gpu", "H200", "--gpus", "1"]) == 0
    assert main(["lint", cmd, "--gpu", "H200", "--gpus", "1", "--strict"]) == 1


def test_lint_exits_0_on_a_clean_command_even_with_strict() -> None:
    cmd = "vllm serve Qwen/Qwen3-8B --max-model-len 32768"
    assert main(["lint", cmd, "--gpu", "H200", "--gpus", "1", "--strict"]) == 0


def test_lint_exits_2_on_bad_input(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["lint", "hello world"]) == 2
    assert main(["lint", "vllm serve m", "--gpu", "no such GPU"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 2


# --- issue 20's first reproduction: the correction does not arm an inert $(…) -------------------


@pytest.mark.parametrize(
    "word",
    [
        '"$NAME\\$(touch @MARK@/p)"',
        "\"$X\"'$(touch @MARK@/p)'",
        "$HOME'$(touch @MARK@/p)'",
        "\"${X:-a}\"'$(touch @MARK@/p)'",
        "--served-model-name=\"$X\"'$(touch @MARK@/p)'",
        "\"$X\"'`touch @MARK@/p`'",
    ],
)
def test_the_corrected_command_runs_the_same_argv_and_no_payload(
    tmp_path: pytest.TempPathFactory, word: str
) -> None:
    box = shell_stub.sandbox(tmp_path)  # type: ignore[arg-type]
    word = word.replace(MARK, str(box.marks))
    flag = "" if word.startswith("--") else "--served-model-name "
    text = f"vllm serve Qwen/Qwen3-8B --tensor-parallel-size 3 {flag}{word}"
    report = lint_command(text, None, "H200", 8)
    before = shell_stub.run(box, text)
    assert shell_stub.payload_ran(box) == []
    after = shell_stub.run(box, report.corrected)
    assert shell_stub.payload_ran(box) == [], report.corrected
    name = "--served-model-name"

    def served(argv: list[str]) -> list[str]:
        if name in argv:
            return argv[argv.index(name) + 1 :][:1]
        return [a for a in argv if a.startswith(name + "=")]

    assert served(after[0]) == served(before[0]) and served(before[0])


# --- the property: a correction lints with no error, or says none exists ------------------------

OFFICIAL = commands()
_OVERRIDES = {"num_attention_heads": 3}  # a config override no layout of most models survives
GPUS = ["H100", "H200", "B200", "A100 80GB", "L40S", "MI300X"]
_mutation = st.one_of(
    st.tuples(st.just("tp"), st.integers(1, 24)),
    st.tuples(st.just("kv"), st.sampled_from(["fp4", "nvfp4", "fp8", "auto", "bf16", "zz"])),
    st.tuples(st.just("ctx"), st.sampled_from(["4096", "32k", "2000000", "abc", "auto", "-5"])),
    st.tuples(st.just("mem"), st.sampled_from(["1.5", "0.99", "-1", "x", "0.9"])),
    st.tuples(st.just("name"), word_text),
    st.tuples(
        st.just("flag"),
        st.sampled_from(
            [
                "--tensor-paralel-size 2",
                "--tp-size 2",
                "--enable-expert-parallel",
                "--ep-size 8",
                "--max-num-seqs 0",
                "--enable-auto-tool-choice",
                "--reasoning-parser qwen3",
                "stray",
                "--gpu-memory-utilization=0.8",
                "--max_model_len 8192",
                "--enforce-eager=true",
                "--quantization fp8",
                "--block-size 7",
                "--dtype fp8",
                "--hf-overrides '" + json.dumps(_OVERRIDES) + "'",
            ]
        ),
    ),
    st.tuples(st.just("detach"), st.just("")),
)


def _mutate(text: str, engine: str, mutations: list[tuple[str, object]]) -> str:
    tp = "--tensor-parallel-size" if engine == "vllm" else "--tp-size"
    ctx = "--max-model-len" if engine == "vllm" else "--context-length"
    mem = "--gpu-memory-utilization" if engine == "vllm" else "--mem-fraction-static"
    body = text.rstrip().rstrip("\\").rstrip()
    for kind, value in mutations:
        if kind == "tp":
            body = re.sub(rf"{tp}[ =]\d+", f"{tp} {value}", body) if tp in body else body
            body += f" \\\n  {tp} {value}" if tp not in body else ""
        elif kind == "kv":
            body += f" \\\n  --kv-cache-dtype {value}"
        elif kind == "ctx":
            body += f" \\\n  {ctx} {value}"
        elif kind == "mem":
            body += f" \\\n  {mem} {value}"
        elif kind == "name":
            body += f" \\\n  --served-model-name a{value}"
        elif kind == "flag":
            body += f" \\\n  {value}"
        else:
            body += "\n  --disable-log-stats"
    return body


@settings(
    max_examples=examples(320),
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(
    st.integers(0, len(OFFICIAL) - 1),
    st.lists(_mutation, max_size=3),
    st.one_of(st.none(), st.sampled_from(GPUS)),
    st.sampled_from([None, 1, 2, 4, 8]),
)
def test_generated_commands_correct_to_no_error_wherever_the_study_has_a_layout_that_runs(
    entry: int, mutations: list[tuple[str, object]], gpu: str | None, gpus: int | None
) -> None:
    c = OFFICIAL[entry]
    text = _mutate(c.command, c.engine, mutations).replace(MARK, "/nonexistent")
    gpu = gpu or c.hardware.gpu
    gpus = gpus or c.hardware.gpus_per_node * c.hardware.nodes
    try:
        report = lint_command(text, c.bundled_model, gpu, gpus)
    except ValueError:  # an InputError: refused input, reported as such
        event("refused")
        return
    runs = study_runs(report, c.bundled_model, c.engine, gpu, gpus, text)
    event(f"clean: {report.corrected_clean}, the Study runs: {runs}")
    if runs:  # the Study has an answer on these GPUs: the correction must reach it
        assert report.corrected_clean, (text, gpu, gpus, report.corrected, report.remaining)
    if report.corrected_clean:
        assert report.corrected
        again = relint(report, c.bundled_model, gpu, gpus)
        assert errors(again) == [], (text, report.corrected, errors(again))
    else:
        assert [f for f in report.remaining if f.severity == "error"], text


def study_runs(
    report: LintReport, given: str | None, engine: str, gpu: str, gpus: int, text: str
) -> bool | None:
    """Whether the Study of the command's model (read as the linter reads it, with the
    command's config overrides) on the GPUs given, in one node, its layout left to the search,
    runs one request of 4,096 tokens with the engine's own defaults (images where the model
    takes them); None where the model cannot be loaded or the GPUs are not one node."""
    choice = resolve(report.model, "$" in (report.model or ""), given and load_model(given), False)
    if choice.loaded is None or not 1 <= gpus <= MAX_GPUS_PER_NODE:
        return None
    loaded = with_overrides(choice.loaded, _OVERRIDES if "--hf-overrides" in text else None)
    fields = scenario_fields(loaded) | {
        "gpu": gpu,
        "gpus_per_node": gpus,
        "nodes": 1,
        "engine": engine,
        "users": 1,
        "context": 4096,
    }
    try:
        plain = study(make_scenario(**fields))
        images = plain.family.multimodal and "--language-model-only" not in text
        st = study(make_scenario(**fields, images=images)) if images else plain
    except InputError:
        return None
    return st.verdict.status == "runs"


# --- the whole command, rebuilt: environment prefix, docker run, sh -c ---------------------------

_SHAPES = [
    "PB_NOTE={w} vllm serve Qwen/Qwen3-8B --tensor-parallel-size 3 --served-model-name a{w}",
    "docker run --rm -e PB_NOTE={w} --gpus all vllm/vllm-openai:latest --model Qwen/Qwen3-8B "
    "--tensor-parallel-size 3 --served-model-name a{w}",
    "bash -c {q}",
    "python3 -m sglang.launch_server --model-path Qwen/Qwen3-8B --tp-size 3 --served-model-name "
    "a{w}",
]


def _served(argv: list[str]) -> list[str]:
    name = "--served-model-name"
    return argv[argv.index(name) + 1 :][:1] if name in argv else []


@settings(max_examples=examples(60), deadline=None, derandomize=True)
@given(st.sampled_from(range(len(_SHAPES))), word_text)
def test_a_rebuilt_command_runs_the_same_words_and_no_payload(shape: int, word: str) -> None:
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as tmp:
        box = shell_stub.sandbox(Path(tmp))
        word = word.replace(MARK, str(box.marks))
        inner = f"vllm serve Qwen/Qwen3-8B --tensor-parallel-size 3 --served-model-name a{word}"
        text = _SHAPES[shape].format(w=word, q=shlex.quote(inner))
        try:
            report = lint_command(text, None, "H200", 8)
        except ValueError:
            return  # refused (a word bash itself would reject)
        before = shell_stub.run(box, text)
        after = shell_stub.run(box, report.corrected) if report.corrected else before
        assert shell_stub.payload_ran(box) == [], (text, report.corrected)
        assert len(before) == len(after) == 1, (text, report.corrected)
        assert _served(after[0]) == _served(before[0]), (text, report.corrected)
        assert after[0][:1] == before[0][:1]  # the same launcher
