"""The loop closed: the plan's benchmark, run on a stack slower than data/perf.yaml's (the model's
own predictions with known factors changed, written as each tool writes its results), read back,
compared and refitted; after calibration the model reproduces the given results within 10 %
median, the calibration travels as a file (validated as physics on load) and the layouts are
ranked with it."""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path
from typing import Any

import pytest

from engine.cli import main
from engine.errors import InputError
from engine.measure.bench_command import BenchPlan, bench_plan
from engine.measure.bench_compare import compare, target_of
from engine.measure.bench_result import read_result
from engine.perf import stack_calibration
from engine.perf.factors import Factors, perf_facts
from engine.perf.refit import value_of, with_values
from engine.perf.stack_calibration import StackCalibration, parse_stack_calibration
from engine.perf.user_fit import BenchPoint, Target, bounds, figures, predict
from engine.scenario import make_scenario
from engine.study import Study, study
from engine.text.words import say
from tests.bench_files import sglang_file, sglang_line, vllm_file, vllm_result

LLAMA = ["meta-llama/Meta-Llama-3.1-8B", "--gpu", "H100", "--gpus", "1", "--users", "64"]


def slower(times: dict[str, float]) -> Factors:
    """data/perf.yaml's factors with some multiplied (a global factor, or a software stack's
    cost: ``engine/vendor.cost``): a known stack change."""
    base = perf_facts().factors
    return with_values(base, {n: value_of(base, n) * k for n, k in times.items()})


VLLM = "vllm/nvidia"  # the software stack the plans below run on (engine.perf.stack)
SGLANG = "sglang/nvidia"
STEP = f"{VLLM}.step_seconds"
KERNEL = f"{VLLM}.kernel_seconds"


def measured_runs(bp: BenchPlan, target: Target, true: Factors) -> list[tuple[int, Any]]:
    """Each run of the sweep as the slower stack would measure it: (concurrency, figures)."""
    out = []
    for run in bp.runs:
        point = BenchPoint(
            run.concurrency, bp.isl, bp.osl, run.num_prompts / run.concurrency, 1, 1, 1
        )
        out.append((run.concurrency, figures(predict(target, point, true))))
    return out


def median_error(st: Study, given: list[tuple[int, Any]], bp: BenchPlan) -> float:
    """The median relative error of ``st``'s predictions over every figure of ``given``."""
    target = target_of(st)
    errors = []
    for c, want in given:
        point = BenchPoint(c, bp.isl, bp.osl, 10, 1, 1, 1)
        shown = st.search_inputs.factors if st.search_inputs else None
        got = figures(predict(target, point, shown))
        errors += [abs(g - w) / w for g, w in zip(got, want, strict=True)]
    return statistics.median(errors)


def _strict(text: str) -> Any:
    def refuse(name: str) -> None:
        raise ValueError(f"{name} in JSON")

    return json.loads(text, parse_constant=refuse)


def test_vllm_results_of_a_slower_stack_calibrate_the_model_to_within_10_percent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    st = study(make_scenario(model="meta-llama/Meta-Llama-3.1-8B", gpu="H100", gpus_per_node=1,
                             users=64))  # fmt: skip
    bp = bench_plan(st)
    assert bp is not None
    true = slower(
        {f"{VLLM}.step_seconds": 4, f"{VLLM}.request_seconds": 3, f"{VLLM}.kernel_seconds": 2,
         "hbm_fraction": 0.8}
    )  # fmt: skip
    given = measured_runs(bp, target_of(st), true)
    files = []
    for run, (c, (ttft, tpot, tps)) in zip(bp.runs, given, strict=True):
        path = tmp_path / run.result_file
        result = vllm_result(c, run.num_prompts, bp.isl, bp.osl, ttft, tpot, tps * bp.gpus)
        path.write_bytes(vllm_file(result))
        files.append(str(path))
    assert median_error(st, given, bp) > 0.10  # the stack change is visible before

    cal = tmp_path / "calibration.json"
    argv = ["bench-compare", *LLAMA, "--bench-result", *files, "--save-calibration", str(cal)]
    assert main([*argv, "--json"]) == 0
    out = _strict(capsys.readouterr().out)
    assert out["fit"]["median_error_before"] > 0.10
    assert out["fit"]["median_error_after"] <= 0.10
    assert len(out["runs"]) == len(bp.runs) and out["pick_after"] == say(st.layout.name())

    assert main(["study", *LLAMA, "--bench-calibration", str(cal), "--json"]) == 0
    again = _strict(capsys.readouterr().out)
    assert any("calibrated on your benchmark" in n for n in again["notes"])
    held = parse_stack_calibration(cal.read_bytes())
    calibrated = study(st.scenario.replace(bench_calibration=stack_calibration.put(held)))
    assert median_error(calibrated, given, bp) <= 0.10
    assert again["speed"]["tpot_ms"] == pytest.approx(calibrated.fit.speed.tpot_ms)  # type: ignore[union-attr]


def test_sglang_results_of_a_slower_moe_stack_calibrate_the_model_to_within_10_percent() -> None:
    st = study(make_scenario(model="Qwen/Qwen3-30B-A3B", gpu="H100", gpus_per_node=2,
                             engine="sglang", users=32))  # fmt: skip
    bp = bench_plan(st)
    assert bp is not None and bp.tool.result == "sglang_jsonl"
    true = slower(
        {f"{SGLANG}.kernel_seconds": 4, f"{SGLANG}.prefill_kernel_seconds": 2,
         "tensor_fraction": 0.6}
    )  # fmt: skip
    given = measured_runs(bp, target_of(st), true)
    lines = [
        sglang_line(c, run.num_prompts, bp.isl, bp.osl, ttft, tpot, tps * bp.gpus)
        for run, (c, (ttft, tpot, tps)) in zip(bp.runs, given, strict=True)
    ]
    runs = read_result(sglang_file(lines), "sglang.jsonl")
    cmp = compare(st, runs)
    assert cmp.fit.error_before > 0.10 >= cmp.fit.error_after
    assert f"{SGLANG}.kernel_seconds" in cmp.fit.values
    assert median_error(cmp.calibrated, given, bp) <= 0.10
    assert cmp.calibration.engine == "sglang" and cmp.calibration.runs == len(bp.runs)


def _calibration(factors: dict[str, float]) -> StackCalibration:
    return StackCalibration(
        engine="vllm", engine_version="0.33.0", gpu="H100 SXM", model="Qwen/Qwen3-8B",
        layout="2 replicas of TP 4", runs=10, factors=factors, error_before=0.4,
        error_after=0.02, how="a test",
    )  # fmt: skip


def test_a_stack_with_slow_collectives_ranks_replicas_above_tensor_parallelism() -> None:
    s = make_scenario(model="Qwen/Qwen3-8B", gpu="H100", gpus_per_node=8, users=64)
    _, high = bounds(perf_facts().factors, f"{VLLM}.collective_latency_seconds")
    digest = stack_calibration.put(_calibration({f"{VLLM}.collective_latency_seconds": high}))
    before, after = study(s), study(s.replace(bench_calibration=digest))
    assert before.layout.split.tp > 1
    assert after.layout.split.tp < before.layout.split.tp  # fewer all-reduces win now
    other = study(s.replace(engine="sglang", bench_calibration=digest))
    assert other.layout == study(s.replace(engine="sglang")).layout  # vLLM's stack only


def _file(**changes: Any) -> bytes:
    doc = json.loads(_calibration({STEP: 0.002}).model_dump_json())
    doc.update(changes)
    return json.dumps(doc).encode()


@pytest.mark.parametrize(
    ("data", "named"),
    [
        (_file(factors={STEP: 1e-300}), STEP),
        (_file(factors={STEP: 1e300}), STEP),
        (_file(factors={"tensor_fraction": 1.5}), "tensor_fraction"),
        (_file(factors={"bus_efficiency": 0.9}), "bus_efficiency"),  # not a fitted factor
        (_file(factors={"made_up": 1.0}), "made_up"),
        (_file(error_after=math.inf), "error_after"),
        (_file().replace(f'"{STEP}": 0.002'.encode(), f'"{STEP}": NaN'.encode()), STEP),
        (_file(engine="trtllm"), "engine"),
        (_file(extra=1), "extra"),
        (b"{", "bench_calibration"),
        (b" " * (stack_calibration.MAX_BYTES + 1), "bench_calibration"),
    ],
)
def test_a_calibration_file_is_validated_as_physics_and_refused_by_name(
    data: bytes, named: str
) -> None:
    with pytest.raises(InputError) as caught:
        parse_stack_calibration(data)
    assert caught.value.field == "bench_calibration" and caught.value.expects is not None
    assert named in str(caught.value)


def test_a_bad_calibration_on_the_cli_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "cal.json"
    bad.write_bytes(_file(factors={KERNEL: 1e-300}))
    assert main(["study", *LLAMA, "--bench-calibration", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and KERNEL in err
    good = tmp_path / "good.json"
    hostile = _calibration({KERNEL: 5e-6}).model_copy(update={"layout": "\x1b[2J$(touch X)"})
    good.write_text(stack_calibration.to_json(hostile))
    assert main(["study", *LLAMA, "--bench-calibration", str(good), "--json"]) == 0
    notes = _strict(capsys.readouterr().out)["notes"]
    assert any("touch X" in n for n in notes)  # data: in the note, its ESC shown as text
    assert not any("\x1b" in n for n in notes)
    assert main(["study", *LLAMA, "--bench-calibration", str(good)]) == 0
    assert "\x1b" not in capsys.readouterr().out
