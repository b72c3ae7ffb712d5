"""Calibrations validated as physics (issue 32): a measured rate is finite, positive and within
``engine.perf.physics.FACTOR`` of the catalog's figure for the GPU it is used with, so no speed
turns NaN; every JSON the CLI prints parses with a strict parser over a corpus of calibration
files; a calibration is read only from a regular file, without blocking."""

from __future__ import annotations

import contextlib
import io
import json
import os
from pathlib import Path
from typing import Any

import pytest

from engine.cli import main
from engine.errors import InputError
from engine.hardware.gpus import lookup_gpu
from engine.perf import calibration as C
from engine.perf.physics import FACTOR

H200 = lookup_gpu("H200")
GOOD: dict[str, Any] = {
    "gpu_name": "NVIDIA H200",
    "hbm_bytes_per_s": 0.9 * H200.bandwidth_bytes_per_s,
    "bf16_gemm_flops": 0.7 * H200.bf16_tflops * 1e12,
    "fp8_gemm_flops": 0.7 * (H200.fp8_tflops or 0) * 1e12,
    "decode_attention_seconds": 1e-4,
    "decode_attention_bytes": 0.5 * H200.bandwidth_bytes_per_s * 1e-4,
    "how": "a test",
}
RATES = ("hbm_bytes_per_s", "bf16_gemm_flops", "fp8_gemm_flops", "decode_attention_seconds")
# JSON number texts a hostile file can hold for a rate: denormal, tiny, huge, overflowing to
# infinity, the non-standard literals Python's parser accepts, zero, negative, a string
HOSTILE = ("5e-324", "1e-300", "1e300", "1e309", "Infinity", "-Infinity", "NaN", "0", "-1", '"1"')


def corpus() -> list[tuple[str, str]]:
    """(name, file text): the good calibration, each rate at each hostile value, the good one at
    the edges of the factor, a CPU's calibration used for an H200."""
    good = json.dumps(GOOD)
    out = [("good", good)]
    for rate in RATES:
        assert f'"{rate}": {GOOD[rate]!r}' in good  # the replacement below takes
        for value in HOSTILE:
            out.append(
                (f"{rate}={value}", good.replace(f'"{rate}": {GOOD[rate]!r}', f'"{rate}": {value}'))
            )
    edge = H200.bandwidth_bytes_per_s
    for name, hbm in (
        ("hbm at catalog/factor", edge / FACTOR),
        ("hbm above catalog*factor", edge * FACTOR * 1.01),
    ):
        out.append((name, json.dumps(GOOD | {"hbm_bytes_per_s": hbm})))
    cpu = GOOD | {"gpu_name": "cpu", "hbm_bytes_per_s": 2e10, "bf16_gemm_flops": 5e11}
    out.append(("a CPU's rates for an H200", json.dumps(cpu)))
    return out


def _reject(constant: str) -> None:
    raise ValueError(f"not strict JSON: {constant}")


def run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(argv)
    return rc, out.getvalue(), err.getvalue()


SUBCOMMANDS = (
    ["study", "meta-llama/Meta-Llama-3.1-8B", "--gpus", "2"],
    ["plan", "Qwen/Qwen3-30B-A3B", "--gpus", "4"],
    ["diagnose", "deepseek-ai/DeepSeek-V3"],
)


@pytest.mark.parametrize("name,text", corpus(), ids=[n for n, _ in corpus()])
def test_every_json_the_cli_prints_with_a_calibration_is_strict_json_or_a_named_refusal(
    name: str, text: str, tmp_path: Path
) -> None:
    path = tmp_path / "cal.json"
    path.write_text(text)
    for args in SUBCOMMANDS:
        rc, out, err = run([*args, "--gpu", "H200", "--calibration", str(path), "--json"])
        if rc == 0:
            json.loads(out, parse_constant=_reject)  # no NaN, Infinity or -Infinity
        else:
            assert rc == 2 and out == "" and err.count("\n") == 1, (rc, err)
            assert "calibration" in err, err


@pytest.mark.parametrize("value", ["5e-324", "1e-300", "1e300", "1e309", "Infinity", "NaN"])
def test_an_unphysical_bandwidth_is_refused_by_name(value: str, tmp_path: Path) -> None:
    path = tmp_path / "cal.json"
    path.write_text(
        json.dumps(GOOD).replace(
            f'"hbm_bytes_per_s": {GOOD["hbm_bytes_per_s"]!r}', f'"hbm_bytes_per_s": {value}'
        )
    )
    rc, out, err = run(
        ["study", "Qwen/Qwen3-8B", "--gpu", "H200", "--calibration", str(path), "--json"]
    )
    assert rc == 2 and "hbm_bytes_per_s" in err and out == ""


def test_the_good_calibration_gives_finite_speeds_measured_on_this_gpu(tmp_path: Path) -> None:
    path = tmp_path / "cal.json"
    path.write_text(json.dumps(GOOD))
    rc, out, _ = run(
        ["study", "Qwen/Qwen3-8B", "--gpu", "H200", "--calibration", str(path), "--json"]
    )
    assert rc == 0
    speed = json.loads(out, parse_constant=_reject)["speed"]
    assert 0 < speed["tpot_ms"] < 1e4 and 0 < speed["ttft_ms"] < 1e6


def test_rates_within_the_factor_pass_and_beyond_it_are_refused_naming_the_rate() -> None:
    ok = C.Calibration.model_validate(
        GOOD | {"hbm_bytes_per_s": H200.bandwidth_bytes_per_s / FACTOR}
    )
    assert C.check(ok, H200) is ok
    slow = C.Calibration.model_validate(
        GOOD | {"bf16_gemm_flops": H200.bf16_tflops * 1e12 / FACTOR / 2}
    )
    with pytest.raises(InputError) as refused:
        C.check(slow, H200)
    assert refused.value.field == "calibration.bf16_gemm_flops"
    assert refused.value.expects is not None and refused.value.expects.code == "error.measured"


@pytest.mark.parametrize("make", ["fifo", "directory", "dev_null"])
def test_a_calibration_that_is_not_a_regular_file_is_refused_without_waiting(
    make: str, tmp_path: Path
) -> None:
    path = tmp_path / "cal"
    if make == "fifo":
        os.mkfifo(path)
    elif make == "directory":
        path.mkdir()
    else:
        path = Path(os.devnull)
    with pytest.raises(InputError) as refused:  # a FIFO with no writer would block a plain open
        C.load_calibration(path)
    assert refused.value.field == "calibration"


def test_the_measure_page_refuses_an_unphysical_calibration_and_keeps_the_catalogs_speed() -> None:
    from tests.apptest_util import assert_clean, open_app

    at = open_app("measure", {"gpu": "H200"})
    bad = json.dumps(GOOD | {"hbm_bytes_per_s": 5e-324}).encode()
    at.file_uploader(key="measure.cal").upload("cal.json", bad, "application/json").run()
    assert_clean(at)
    assert at.session_state["pb.scenario"].calibration is None
    assert any("hbm_bytes_per_s" in e.value for e in at.error)


def test_a_calibration_measured_on_another_gpu_is_dropped_with_a_warning_when_the_gpu_changes() -> (
    None
):
    from tests.apptest_util import assert_clean, open_app

    at = open_app("measure", {"gpu": "H200"})
    at.file_uploader(key="measure.cal").upload(
        "cal.json", json.dumps(GOOD).encode(), "application/json"
    ).run()
    assert at.session_state["pb.scenario"].calibration is not None
    at.selectbox(key="w.gpu").set_value("L4").run()  # 300 GB/s: an H200's 4.3 TB/s is > 10x
    assert_clean(at)
    assert at.session_state["pb.scenario"].calibration is None
    assert any("hbm_bytes_per_s" in w.value for w in at.warning)
    assert not at.error
