"""What the accuracy harness reads from a measured row (tools/perf_rows.py, tools/perf_flags.py):
the launch flags a plan could state too (their recipe variables evaluated at the run's own
conditions), the lengths the benchmark actually sent, the TTFT statistic it measured, and the
requests the copy could hold; and the fast path the fit runs on gives the model's own figures."""

from __future__ import annotations

import math

import pytest

from engine.perf.factors import kernel_path, perf_facts
from tools import fit_perf
from tools.perf_flags import recipe_values, row_flags
from tools.perf_rows import case_of, cases, load_rows, predict, predicted_ttft, workload
from tools.perf_trace import Rows

B200_RECIPE = (
    "python3 -m sglang.launch_server --model-path=$MODEL --tensor-parallel-size=$TP "
    "--max-running-requests $MAX_RUNNING_REQUESTS --kv-cache-dtype fp8_e4m3 "
    "--chunked-prefill-size $CHUNKED_PREFILL_SIZE --scheduler-recv-interval "
    "$SCHEDULER_RECV_INTERVAL > $SERVER_LOG 2>&1 & ;; recipe variables: if [[ $TP -eq 8 ]]; "
    "then if [[ $CONC -ge 16 ]]; then SCHEDULER_RECV_INTERVAL=30 else SCHEDULER_RECV_INTERVAL=10 "
    "fi MAX_RUNNING_REQUESTS=128 CHUNKED_PREFILL_SIZE=32768 MAX_RUNNING_REQUESTS=32 "
    "CHUNKED_PREFILL_SIZE=8192 SCHEDULER_RECV_INTERVAL=10"
)


def _row(**fields: object) -> dict[str, object]:
    return {"tp": 8, "concurrency": 64, "isl": 1024, "osl": 1024, "ep": 1, **fields}


def test_a_recipe_variable_takes_the_branch_the_runs_conditions_take() -> None:
    text = "if [[ $CONC -ge 16 ]]; then INTERVAL=30 else INTERVAL=10 fi"
    assert recipe_values(text, {"CONC": "64"}) == {"INTERVAL": "30"}
    assert recipe_values(text, {"CONC": "4"}) == {"INTERVAL": "10"}
    nested = (
        'X=196608 if [[ "$ISL" == "8192" && "$OSL" == "1024" ]]; then'
        ' if [[ "$CONC" -gt "32" ]]; then X=32768 fi fi'
    )
    assert recipe_values(nested, {"ISL": "8192", "OSL": "1024", "CONC": "64"})["X"] == "32768"
    assert recipe_values(nested, {"ISL": "1024", "OSL": "1024", "CONC": "64"})["X"] == "196608"


def test_a_branch_the_condensed_recipe_lost_is_not_read_into_the_one_before_it() -> None:
    # the InferenceX B200 recipe's `elif [[ $TP -eq 4 ]]` line is missing from the row's text:
    # TP 8 keeps its own values (128 requests, 32,768-token chunks, interval 30 at 64 users)
    flags = row_flags(_row(launch_flags=B200_RECIPE))
    assert (flags.max_running, flags.chunk, flags.recv_interval) == (128, 32768, 30)
    assert flags.kv_dtype == "fp8_e4m3"
    assert row_flags(_row(concurrency=4, launch_flags=B200_RECIPE)).recv_interval == 10
    # TP 4's branch cannot be told from the text: its values stay unsettled (engine defaults)
    unsettled = row_flags(_row(tp=4, launch_flags=B200_RECIPE))
    assert unsettled.max_running is None and unsettled.recv_interval is None


def test_the_launch_env_says_whether_rocm_runs_aiter() -> None:
    vllm = row_flags(_row(launch_flags="export VLLM_ROCM_USE_AITER=1; vllm serve $MODEL"))
    assert vllm.aiter("vllm") and not row_flags(_row(launch_flags="vllm serve m")).aiter("vllm")
    assert row_flags(_row(launch_flags="python -m sglang.launch_server")).aiter("sglang")
    off = row_flags(_row(launch_flags="SGLANG_USE_AITER=0 python -m sglang.launch_server"))
    assert not off.aiter("sglang")
    assert row_flags(_row(launch_flags="vllm serve m --enforce-eager")).eager


def test_the_rocm_kernel_path_follows_the_release_and_the_gpu_architecture() -> None:
    # SGLang's tuned AITER paths reached gfx942 (MI300X, MI325X) in 0.5.10, gfx950 by 0.5.5
    kw = {"vendor": "amd", "aiter": True}
    assert kernel_path("sglang", "0.5.9", arch="gfx942", **kw) == "generic"
    assert kernel_path("sglang", "0.5.10", arch="gfx942", **kw) == "tuned"
    assert kernel_path("sglang", "0.5.8", arch="gfx950", **kw) == "tuned"
    assert kernel_path("sglang", "0.5.2", arch="gfx950", **kw) == "generic"
    assert kernel_path("sglang", None, arch="gfx942", **kw) == "tuned"  # the pinned release
    assert kernel_path("vllm", "0.16.0", arch="gfx950", vendor="amd", aiter=False) == "generic"
    assert kernel_path("vllm", "0.9.0", arch="sm_90", vendor="nvidia", aiter=False) == "tuned"
    f = perf_facts().factors
    assert f.stack("sglang", "amd", "generic").like == "sglang/amd"


def test_the_model_runs_the_lengths_the_benchmark_sent() -> None:
    # InferenceX draws each length uniformly in [0.8, 1] x nominal: a mean of 0.9 x nominal
    infx = {"isl": 1024, "osl": 8192, "dataset": "random, lengths drawn in [0.8, 1] x ISL / OSL"}
    assert workload(infx) == (pytest.approx(921.6), pytest.approx(7372.8), "range")
    # the SGLang cookbook's random lengths from 1 up: the run's own printed totals
    cook = {
        "isl": 1000,
        "osl": 1000,
        "missing_conditions": "lengths not fixed: ... this run printed 6091 input and 4220 "
        "generated tokens over 10 requests",
    }
    assert workload(cook) == (pytest.approx(609.1), pytest.approx(422.0), "drawn")
    assert workload({"isl": 128, "osl": 4}) == (128, 4, "fixed")


def test_a_rows_ttft_is_compared_as_the_statistic_it_measured() -> None:
    rows = {r["id"]: r for r in load_rows()}
    both = case_of(rows["infx-290"])  # mean 437 ms (first wave included), median 167 ms
    assert not isinstance(both, type(None)) and both.ttft_median  # type: ignore[union-attr]
    assert both.ttft_ms == pytest.approx(166.68, rel=1e-3)  # type: ignore[union-attr]
    s = predict(both)  # type: ignore[arg-type]
    assert predicted_ttft(both, s) == s.ttft_median_ms < s.ttft_ms  # type: ignore[arg-type]


def test_the_fast_path_the_fit_runs_on_gives_the_models_own_figures() -> None:
    used, _ = cases(load_rows())
    sample = [c for c in used if c.engine in fit_perf.FITTED_ENGINES][::25]
    f = perf_facts().factors
    fast = Rows.of(sample, fit_perf.prior_factors()).predict(f)
    for i, c in enumerate(sample):
        s = predict(c, f)
        for got, want in zip(
            fast[i], (s.tpot_ms, predicted_ttft(c, s), s.output_tokens_per_s_per_gpu), strict=True
        ):
            assert math.isclose(got, want, rel_tol=1e-9), c.id
