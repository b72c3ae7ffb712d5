"""``python -m engine lint "COMMAND" [--model SOURCE] [--gpu NAME] [--gpus N] [--json]``: the
report on stdout with exit 0 (findings are not failures), or one line ``error: <field>: ...`` on
stderr with exit 2."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from engine.cli import main

GLM52 = (
    "python3 -m sglang.launch_server --model nvidia/GLM-5.2-NVFP4 --tensor-parallel-size 8 "
    "--quantization modelopt_fp4 --tool-call-parser glm47 --reasoning-parser glm45 "
    "--trust-remote-code --chunked-prefill-size 16384 --mem-fraction-static 0.80"
)


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def test_json_report_of_a_command_with_errors_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["lint", GLM52, "--model", "zai-org/GLM-5", "--gpu", "H200", "--gpus", "8", "--json"]
    assert main(argv) == 1  # NVFP4 weights on Hopper: an error, so a CI gate fails
    out = json.loads(capsys.readouterr().out)
    assert out["engine"] == "sglang" and out["model"] == "nvidia/GLM-5.2-NVFP4"
    assert "nvfp4-without-fp4" in [f["code"] for f in out["findings"]]
    assert {e["flag"] for e in out["left_to_engine"]} >= {"--kv-cache-dtype", "--attention-backend"}
    assert out["corrected"].startswith("python3 -m sglang.launch_server")


def test_text_report(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["lint", GLM52, "--gpu", "B300", "--gpus", "8"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("engine: SGLang 0.5.23")
    assert "corrected command:" in out


def test_help_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["lint", "--help"]) == 0
    assert "--gpus" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "field"),
    [
        (["lint", "ls -la"], "command"),
        (["lint", "vllm serve m", "--gpus", "two"], "--gpus"),
        (["lint", "vllm serve m", "--gpus", "0"], "gpus"),
        (["lint", "vllm serve m", "--gpu", "Voodoo 5"], "gpu"),
        (["lint", "vllm serve m", "--model", "nope/nope"], "model"),
        (["lint"], "arguments"),
        (["lint", "vllm serve m", "--frobnicate"], "arguments"),
        (["lint", "args:\n  - {nested: map}\n"], "command"),
    ],
)
def test_bad_input_exits_2_with_one_line_naming_the_field(
    argv: list[str], field: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {field}:"), lines


def test_the_module_entry_point_runs_lint() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "engine", "lint", "vllm serve Qwen/Qwen3-32B -tp 2", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["linted_against"] == "Qwen/Qwen3-32B"
