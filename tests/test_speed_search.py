"""The search ranks by speed among the layouts that fit: latency first and throughput first pick
different layouts where the speed model says they differ, and say the TPOT and tokens/s that
decided; study --json carries the pick's speed and every candidate's."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from engine.cli import main
from engine.launch.ranking import overlap
from engine.perf import estimate
from engine.scenario import from_query
from tests.study_util import english, run

DIFFER = [
    ("meta-llama/Meta-Llama-3.1-8B", "H200"),
    ("Qwen/Qwen3-32B", "H100"),
    ("Qwen/Qwen3-30B-A3B", "H200"),
]


@pytest.mark.parametrize(("model", "gpu"), DIFFER)
def test_latency_first_and_throughput_first_pick_what_the_speed_model_says(
    model: str, gpu: str
) -> None:
    """16 users: latency first takes the lowest time per output token at that load, throughput
    first the most tokens/s per GPU at full load (every user the layout holds); a layout the
    other objective picks is no better than the pick outside the speed model's range."""
    fast = run(model, gpu=gpu, gpus_per_node=8, users=16, context=8192, latency="latency")
    many = run(model, gpu=gpu, gpus_per_node=8, users=16, context=8192, latency="throughput")
    assert fast.fit.speed is not None and many.fit.speed is not None
    as_throughput_pick = next(c for c in fast.search.candidates if c.layout == many.layout)
    assert as_throughput_pick.speed is not None
    assert fast.fit.speed.tpot_ms <= as_throughput_pick.speed.tpot_ms or overlap(
        fast.fit.speed, as_throughput_pick.speed, "tpot"
    )
    as_latency_pick = next(c for c in many.search.candidates if c.layout == fast.layout)
    assert many.fit.peak is not None and as_latency_pick.peak is not None
    assert many.fit.peak.output_tokens_per_s_per_gpu >= (
        as_latency_pick.peak.output_tokens_per_s_per_gpu
    ) or overlap(many.fit.peak, as_latency_pick.peak, "tps_per_gpu")
    assert many.fit.peak_users == many.fit.running  # throughput first: at full load


def test_a_target_the_fastest_layout_meets_wins_over_one_it_does_not() -> None:
    free = run("meta-llama/Meta-Llama-3.1-8B", gpus_per_node=8, users=512, context=8192,
               latency="throughput")  # fmt: skip
    assert free.fit.speed is not None
    tight = free.fit.speed.tpot_ms * 0.8
    held = run("meta-llama/Meta-Llama-3.1-8B", gpus_per_node=8, users=512, context=8192,
               latency="throughput", tpot_ms=round(tight, 1))  # fmt: skip
    assert held.fit.speed is not None
    met = [c for c in held.search.candidates if c.speed and c.speed.tpot_ms <= round(tight, 1)]
    if met:
        assert held.fit.speed.tpot_ms <= round(tight, 1)
    assert held.layout != free.layout or not met


def test_study_json_carries_the_speed_of_a_pinned_layout(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = ["study", "Qwen/Qwen3-8B", "--tp", "2", "--replicas", "1", "--gpus", "2", "--users",
            "64", "--input-tokens", "1024", "--output-tokens", "1024", "--json"]  # fmt: skip
    assert main(args) == 0
    out = json.loads(capsys.readouterr().out)
    speed = out["speed"]
    keys = ("ttft_ms", "tpot_ms", "output_tokens_per_s_per_user", "output_tokens_per_s_per_gpu",
            "output_tokens_per_s", "bound", "formula")  # fmt: skip
    assert set(keys) <= set(speed)
    assert (speed["input_tokens"], speed["output_tokens"], speed["concurrency"]) == (1024, 1024, 64)
    assert speed["output_tokens_per_s"] == pytest.approx(speed["output_tokens_per_s_per_gpu"] * 2)
    assert speed["output_tokens_per_s"] == pytest.approx(
        64 * speed["output_tokens_per_s_per_user"], rel=0.35
    )
    assert all(c["speed"] is not None for c in out["layout"]["candidates"])


def test_a_calibration_replaces_the_fitted_rates_and_says_so(tmp_path: Path) -> None:
    cal = {
        "gpu_name": "NVIDIA H200",
        "hbm_bytes_per_s": 2.0e12,  # slower than the catalog's 4.8 TB/s × the fitted fraction
        "bf16_gemm_flops": 5.0e14,
        "fp8_gemm_flops": 1.0e15,
        "how": "a test's own figures",
    }
    path = tmp_path / "calibration.json"
    path.write_text(json.dumps(cal))
    base = ["study", "Qwen/Qwen3-8B", "--gpus", "1", "--users", "8", "--json"]
    plain_run = json.loads(_run([*base]))
    measured = json.loads(_run([*base, "--calibration", str(path)]))
    assert not plain_run["speed"]["measured_on_this_gpu"]
    assert measured["speed"]["measured_on_this_gpu"]
    # decode is memory-bound at 8 users: less bandwidth, more time per token
    assert measured["speed"]["tpot_ms"] > plain_run["speed"]["tpot_ms"]


def test_a_link_cannot_carry_a_calibration() -> None:
    parsed = from_query({"model": "Qwen/Qwen3-8B", "cal": "0" * 64})
    assert parsed.scenario.calibration is None and english(parsed.notes)


def test_a_bad_calibration_file_is_one_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"gpu_name": "x"}')
    assert main(["study", "Qwen/Qwen3-8B", "--calibration", str(bad)]) == 2


def _run(args: list[str]) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(args) == 0
    return out.getvalue()


def test_below_one_request_per_copy_the_idle_copies_count_in_the_layouts_speed() -> None:
    # 2 copies of TP 4 on 8 H100s and 1 user: one copy runs it, the other is idle, so the 8
    # GPUs give one copy's output (not two copies' at one request each); the user is as fast
    # as one request alone on one copy
    st = run("meta-llama/Meta-Llama-3.1-8B", gpu="H100", gpus_per_node=8, users=1,
             context=8192, tp=4, replicas=2)  # fmt: skip
    sp = st.fit.speed
    inp = st.search_inputs
    assert sp is not None and inp is not None and st.layout.replicas == 2
    isl, osl = st.scenario.workload(st.context)
    one = estimate(inp, st.layout.split, 1, 1, isl, osl, gpus_per_node=8)
    assert sp.output_tokens_per_s == pytest.approx(one.output_tokens_per_s)
    assert sp.output_tokens_per_s_per_gpu == pytest.approx(one.output_tokens_per_s / 8)
    assert (sp.tpot_ms, sp.ttft_ms) == pytest.approx((one.tpot_ms, one.ttft_ms))
    assert sp.gpus == 8


def test_where_the_users_do_not_divide_one_copy_runs_more() -> None:
    # 3 users on 2 copies: one copy runs 2, the other 1. Output = both copies' output; TTFT
    # and TPOT = the mean over the 3 requests: (2 x the busier copy's + 1 x the other's) / 3
    st = run("meta-llama/Meta-Llama-3.1-8B", gpu="H100", gpus_per_node=8, users=3,
             context=8192, tp=4, replicas=2)  # fmt: skip
    sp = st.fit.speed
    inp = st.search_inputs
    assert sp is not None and inp is not None and st.layout.replicas == 2
    isl, osl = st.scenario.workload(st.context)
    one = estimate(inp, st.layout.split, 1, 1, isl, osl, gpus_per_node=8)
    two = estimate(inp, st.layout.split, 1, 2, isl, osl, gpus_per_node=8)
    both = two.output_tokens_per_s + one.output_tokens_per_s
    assert sp.output_tokens_per_s == pytest.approx(both)
    assert sp.output_tokens_per_s_per_gpu == pytest.approx(both / 8)
    assert sp.tpot_ms == pytest.approx((2 * two.tpot_ms + one.tpot_ms) / 3)
    assert sp.ttft_ms == pytest.approx((2 * two.ttft_ms + one.ttft_ms) / 3)
    assert sp.output_tokens_per_s_per_user == pytest.approx(1000 / sp.tpot_ms)
    # the old reading, every copy at ceil(3 / 2) = 2, overstated the output by a third
    assert 2 * two.output_tokens_per_s > 1.2 * sp.output_tokens_per_s
