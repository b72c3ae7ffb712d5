"""The speed chart's series (engine.present.speed_chart.speed_chart): each point is the speed
model at that load, spread over the layout's copies as requests spread, with idle copies
counted in tokens/s per GPU below one request per copy."""

from __future__ import annotations

import pytest

from engine.perf import estimate
from engine.present.speed_chart import load_grid, speed_chart
from tests.study_util import run


def test_the_load_grid_doubles_up_to_what_the_layout_holds() -> None:
    assert load_grid(1) == (1,)
    assert load_grid(12) == (1, 2, 4, 8, 12)
    assert len(load_grid(10**6)) == 16


def test_below_one_request_per_copy_the_idle_copies_count_in_tokens_per_gpu() -> None:
    # 2 copies of TP 4 on 8 H100s: one request keeps one copy busy and the other idle, so the
    # 8 GPUs give half what two requests (one per copy) give; a user is as fast either way
    st = run("meta-llama/Meta-Llama-3.1-8B", gpu="H100", gpus_per_node=8, users=64,
             context=8192, tp=4, replicas=2)  # fmt: skip
    (curve,) = [c for c in speed_chart(st).curves if c.pick]
    assert curve.concurrency[:2] == (1, 2)
    assert curve.per_gpu[1] == pytest.approx(2 * curve.per_gpu[0])
    assert curve.per_user[1] == pytest.approx(curve.per_user[0])
    # the first point by hand: one copy at one request, its output over all 8 GPUs
    inp = st.search_inputs
    assert inp is not None
    isl, osl = st.scenario.workload(st.context)
    one = estimate(inp, st.layout.split, 1, 1, isl, osl, gpus_per_node=8)
    assert curve.per_gpu[0] == pytest.approx(one.output_tokens_per_s / 8)
    assert curve.per_user[0] == pytest.approx(one.output_tokens_per_s_per_user)


def test_at_two_requests_per_copy_every_copy_runs_two() -> None:
    st = run("meta-llama/Meta-Llama-3.1-8B", gpu="H100", gpus_per_node=8, users=64,
             context=8192, tp=4, replicas=2)  # fmt: skip
    (curve,) = [c for c in speed_chart(st).curves if c.pick]
    inp = st.search_inputs
    assert inp is not None
    isl, osl = st.scenario.workload(st.context)
    two = estimate(inp, st.layout.split, 2, 2, isl, osl, gpus_per_node=8)
    i = curve.concurrency.index(4)
    assert curve.per_gpu[i] == pytest.approx(two.output_tokens_per_s_per_gpu)
    assert curve.per_gpu[i] == pytest.approx(two.output_tokens_per_s / 8)
    assert curve.per_user[i] == pytest.approx(two.output_tokens_per_s_per_user)
