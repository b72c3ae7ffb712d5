"""Measured on your GPU: the calibration the torch micro-kernels write, on the CPU path (small
sizes), and what estimate() does with one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.errors import InputError
from engine.measure.kernels import preset_dims
from engine.measure.kernels.calibrate import calibrate
from engine.perf import Calibration, load_calibration
from tools import gpu_check


@pytest.fixture(scope="module")
def cpu_calibration() -> Calibration:
    return calibrate("cpu", preset_dims("llama-3.1-8b"))


def test_cpu_calibration_measures_copy_gemm_and_decode_attention(
    cpu_calibration: Calibration,
) -> None:
    c = cpu_calibration
    assert c.gpu_name == "cpu"
    assert c.hbm_bytes_per_s > 0 and c.bf16_gemm_flops > 0
    assert c.fp8_gemm_flops is None  # no FP8 GEMM on a CPU
    assert c.decode_attention_seconds and c.decode_attention_bytes
    # GQA decode of 2 requests x 4,096 tokens at the CPU-scaled dims reads K and V once
    rate = c.decode_attention_bytes_per_s
    assert rate is not None and rate > 0
    assert "GQA decode attention" in c.how and "cpu" in c.how


def test_an_mla_model_times_its_absorbed_decode() -> None:
    c = calibrate("cpu", preset_dims("deepseek-v3"))
    assert "absorbed MLA" in c.how


def test_gpu_check_writes_a_calibration_file_on_cpu(tmp_path: Path) -> None:
    out = tmp_path / "calibration.json"
    assert (
        gpu_check.main(["--device", "cpu", "--calibration", str(out), "--preset", "llama-3.1-8b"])
        == 0
    )
    loaded = load_calibration(out)
    assert loaded.hbm_bytes_per_s > 0
    assert json.loads(out.read_text())["gpu_name"] == "cpu"


def test_gpu_check_on_cpu_needs_the_calibration_flag() -> None:
    assert gpu_check.main(["--device", "cpu"]) == 2


def test_a_bad_calibration_file_names_the_field(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(
        json.dumps({"gpu_name": "x", "hbm_bytes_per_s": -1, "bf16_gemm_flops": 1, "how": "h"})
    )
    with pytest.raises(InputError, match="hbm_bytes_per_s"):
        load_calibration(bad)


def test_the_cli_text_says_when_the_rates_were_measured_on_this_gpu(tmp_path: Path) -> None:
    import contextlib
    import io

    from engine.cli import main

    cal = Calibration(
        gpu_name="NVIDIA H200", hbm_bytes_per_s=4.0e12, bf16_gemm_flops=700e12,
        fp8_gemm_flops=1400e12, how="test",
    )  # fmt: skip
    path = tmp_path / "cal.json"
    path.write_text(cal.model_dump_json())
    args = ["study", "meta-llama/Meta-Llama-3.1-8B", "--gpu", "H200", "--gpus", "1"]
    outs = []
    for extra in ([], ["--calibration", str(path)]):
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            assert main([*args, *extra]) == 0
        outs.append(buf.getvalue())
    assert "measured on this GPU" not in outs[0]
    speed = next(line for line in outs[1].splitlines() if line.startswith("speed"))
    assert "measured on this GPU" in speed
