"""`python -m engine diagnose` keeps its JSON contract and fails cleanly."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from engine.__main__ import main

ROOT = Path(__file__).resolve().parent.parent
KEYS = {
    "architecture",
    "attention_family",
    "sliding_window",
    "moe",
    "multimodal",
    "num_experts",
    "experts_per_token",
    "mtp_layers",
    "layer_groups",
    "kv_bytes_per_token",
    "state_bytes_per_request",
    "kv_bytes_per_request",
    "params_total",
    "params_active",
    "weight_bytes",
}


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    rc = main(args)
    out, err = capsys.readouterr()
    return rc, out, err


def test_json_has_the_contract_keys(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(["diagnose", "deepseek-ai/DeepSeek-V3", "--json"], capsys)
    assert rc == 0
    data = json.loads(out)
    assert set(data) >= KEYS
    assert data["attention_family"] == "MLA"
    assert data["kv_bytes_per_token"] == 70_272
    assert data["mtp_layers"] == 1 and data["num_experts"] == 256 and data["experts_per_token"] == 8
    group = data["layer_groups"][0]
    assert {"kind", "layers", "bytes_per_token", "state_bytes_per_request"} <= set(group)


def test_dsa_fp8_without_gpu_assumes_hopper_fp8_ds_mla(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(
        ["diagnose", "deepseek-ai/DeepSeek-V3.2", "--kv-dtype", "fp8", "--json"], capsys
    )
    assert rc == 0 and json.loads(out)["kv_bytes_per_token"] == 48_068


def test_hybrid_request_includes_state(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(
        [
            "diagnose",
            "Qwen/Qwen3-Next-80B-A3B-Thinking",
            "--context",
            "1000",
            "--tp",
            "1",
            "--json",
        ],
        capsys,
    )
    data = json.loads(out)
    assert data["kv_bytes_per_request"] == 24_576 * 1000 + 39_518_208


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (["diagnose", "meta-llama/Meta-Llama-3.1-8B", "--kv-dtype", "int3"], "kv_dtype"),
        (["diagnose", "meta-llama/Meta-Llama-3.1-8B", "--tp", "0"], "tp"),
        (["diagnose", "meta-llama/Meta-Llama-3.1-8B", "--context", "-5"], "context"),
        (["diagnose", "/no/such/config.json"], "model"),
        (["diagnose", '{"hidden_size": 4096'], "config.json"),
        (["diagnose", "Qwen/Qwen3-Next-80B-A3B-Thinking", "--tp", "3"], "tp"),
    ],
)
def test_bad_input_is_one_stderr_line_and_exit_2(
    args: list[str], field: str, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, _, err = run(args, capsys)
    assert rc == 2
    assert err.startswith(f"error: {field}: ")
    assert len(err.strip().splitlines()) == 1


def test_argument_errors_exit_2_without_usage_spam() -> None:
    res = subprocess.run(
        [sys.executable, "-m", "engine", "diagnose"], cwd=ROOT, capture_output=True, text=True
    )
    assert res.returncode == 2
    assert len(res.stderr.strip().splitlines()) == 1
    assert "Traceback" not in res.stderr


def test_gpu_gives_max_concurrency_from_memory_weights_and_request_bytes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = ["diagnose", "deepseek-ai/DeepSeek-V3", "--gpu", "H200", "--gpus", "8", "--tp", "8"]
    rc, out, _ = run([*args, "--context", "32768", "--json"], capsys)
    data = json.loads(out)
    per_request = 61 * 1152 * 32768  # MLA latent replicated on each TP rank
    st = json.loads(run(["study", *args[1:], "--context", "32768", "--json"], capsys)[1])
    pick = st["layout"]["pick"]
    space = pick["usable_per_gpu"] - pick["reserve_per_gpu"] - data["weights_per_gpu"]
    assert rc == 0 and pick["bytes_per_request_per_gpu"] == per_request
    assert data["max_concurrency"] == space // per_request == 20


def test_kv_bytes_per_token_is_the_models_figure_and_the_per_gpu_one_says_so(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Llama-3.1-70B: 80 layers x 8 KV heads x (128 + 128) x 2 B = 327,680 B/token for the model;
    # the layout search picks TP 2 on 2 x H200, where each GPU holds 4 of the 8 KV heads
    rc, out, _ = run(
        ["diagnose", "meta-llama/Llama-3.1-70B-Instruct", "--gpu", "H200", "--gpus", "2", "--json"],
        capsys,
    )
    data = json.loads(out)
    assert rc == 0 and data["tp"] == 2
    assert data["kv_bytes_per_token"] == 80 * 8 * (128 + 128) * 2 == 327_680
    assert data["kv_bytes_per_token_per_gpu"] == 327_680 // 2
    assert data["sglang"]["kv_bytes_per_token"] == 327_680
    assert data["sglang"]["kv_bytes_per_token_per_gpu"] == 163_840
