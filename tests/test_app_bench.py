"""The benchmark loop on the pages: the Flags page offers each engine's benchmark script, the
Measure page reads uploaded result files against the plan (a table, two charts, the refit) in
both languages, applies the calibration, and a bad file is one st.error while the rest of the
page keeps working."""

from __future__ import annotations

import math

import pytest

from engine.i18n import t
from engine.measure.bench_command import bench_plan
from engine.measure.bench_compare import target_of
from engine.perf.factors import perf_facts
from engine.perf.refit import value_of, with_values
from engine.perf.user_fit import BenchPoint, figures, predict
from engine.scenario import make_scenario
from engine.study import study
from tests.apptest_util import assert_clean, open_app, state, texts
from tests.bench_files import vllm_file, vllm_result

QUERY = {"model": "meta-llama/Meta-Llama-3.1-8B", "gpu": "H100", "gpus": "1", "users": "64"}


def _results() -> list[tuple[str, bytes]]:
    """The plan's sweep as a stack with 3x the per-step cost would measure it."""
    st = study(make_scenario(model=QUERY["model"], gpu="H100", gpus_per_node=1, users=64))
    bp = bench_plan(st)
    assert bp is not None
    base = perf_facts().factors
    step = "vllm/nvidia.step_seconds"  # the stack the plan runs on (engine.perf.stack)
    true = with_values(base, {step: value_of(base, step) * 3})
    out = []
    for run in bp.runs[:4]:
        point = BenchPoint(run.concurrency, bp.isl, bp.osl, 10, 1, 1, 1)
        ttft, tpot, tps = figures(predict(target_of(st), point, true))
        data = vllm_result(run.concurrency, run.num_prompts, bp.isl, bp.osl, ttft, tpot, tps)
        out.append((run.result_file, vllm_file(data)))
    return out


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_uploaded_results_are_compared_refitted_and_applied(lang: str) -> None:
    at = open_app("measure", {**QUERY, "lang": lang})
    uploader = at.file_uploader(key="measure.bench_files")
    for name, data in _results():
        uploader.upload(name, data, "application/json")
    at.run()
    at.button(key="measure.bench_go").click().run()
    assert_clean(at)
    shown = texts(at)
    assert t("bench.chart.tpot", lang) in shown and t("bench.chart.tps", lang) in shown
    assert len(at.get("plotly_chart")) >= 2
    assert len(at.dataframe) >= 2  # the runs, the refitted factors
    runs = at.dataframe[-2].value
    assert list(runs["clients"]) == [c for c in (1, 2, 4, 8) for _ in range(3)]
    assert all(math.isfinite(x) for x in runs["calibrated"])
    assert runs["error_after"].abs().median() <= 10  # calibrated within 10 % (median)
    at.button(key="measure.bench_apply").click().run()
    assert_clean(at)
    assert state(at).bench_calibration is not None
    assert t("bench.clear", lang) in [b.label for b in at.button]


def test_a_bad_result_file_is_one_error_and_the_rest_of_the_page_works() -> None:
    at = open_app("measure", QUERY)
    at.file_uploader(key="measure.bench_files").upload("bad.json", b'{"num_prompts": 1}').run()
    at.button(key="measure.bench_go").click().run()
    assert_clean(at)
    assert len(at.error) == 1 and "bad.json" in at.error[0].value
    assert at.button(key="measure.kernels") is not None  # the page drew on past it
    assert state(at).bench_calibration is None


def test_the_flags_page_offers_each_engines_benchmark_script() -> None:
    at = open_app("flags", QUERY)
    labels = [b.proto.label for b in at.get("download_button")]
    assert labels.count(t("download.bench")) == 2
