"""The speed chart can be read: log axes within the data in every objective, the TPOT target and
the interactivity bound as lines in the axis' own unit (tokens/s per user), the pick, the layouts
its reasons name and the official recipes' and the playbook's layouts always drawn, the rest
behind a toggle; the caption says at which load the figures are and why."""

from __future__ import annotations

import math

import pytest

from engine.i18n import LANGS
from engine.launch.reference_layouts import reference_layouts, references_for
from engine.present.speed_chart import REACH, load_caption, speed_chart
from engine.rules import DATA_DIR
from engine.study import Study
from tests.study_util import run
from tools.reference_layouts import render

MODES = ("latency", "balanced", "throughput")


def _within(chart_range: tuple[float, float], values: list[float]) -> None:
    low, high = 10 ** chart_range[0], 10 ** chart_range[1]
    assert min(values) / 10 <= low <= min(values)
    assert max(values) <= high <= max(values) * 10


@pytest.mark.parametrize("mode", MODES)
def test_the_axes_stay_within_the_data_in_every_mode(mode: str) -> None:
    st = run("deepseek-ai/DeepSeek-V3", users=64, latency=mode, tpot_ms=30.0)
    chart = speed_chart(st)
    xs = [x for c in chart.curves for x in c.per_user]
    ys = [y for c in chart.curves for y in c.per_gpu]
    _within(chart.x_range, xs)
    _within(chart.y_range, ys)
    for line in chart.lines:  # drawn in the axis' own unit, inside the range
        assert chart.x_range[0] <= math.log10(line.x) <= chart.x_range[1]
        assert min(xs) / REACH <= line.x <= max(xs) * REACH


def test_the_target_and_the_bound_are_tokens_per_second_per_user() -> None:
    st = run("meta-llama/Meta-Llama-3.1-8B", users=16, tpot_ms=20.0)
    xs = {round(line.x, 6) for line in speed_chart(st).lines}
    assert xs == {round(1000 / 20.0, 6), round(1000 / st.scenario.tpot_bound_ms, 6)}


def test_a_line_far_outside_the_data_is_left_out_not_stretching_the_axis() -> None:
    st = run("meta-llama/Meta-Llama-3.1-8B", users=16, tpot_ms=0.1)  # 10,000 tok/s per user
    chart = speed_chart(st)
    assert all(line.x < 10_000 for line in chart.lines)
    assert 10 ** chart.x_range[1] < 10_000


def _names(st: Study, every: bool = False) -> set[str]:
    return {c.name for c in speed_chart(st, every=every).curves}


def test_the_playbooks_layout_is_always_drawn_and_the_rest_behind_the_toggle() -> None:
    # the playbook's '-dp 8 --enable-expert-parallel' for DeepSeek-V3 on 8 x H200 (seed 004)
    st = run("deepseek-ai/DeepSeek-V3", users=64)
    chart = speed_chart(st)
    marked = [c for c in chart.curves if "playbook" in c.marks]
    assert marked and all(c.always for c in marked)
    assert any(c.pick for c in chart.curves)
    every = speed_chart(st, every=True)
    runs = [c for c in st.search.candidates if c.speed is not None and c.running > 0]
    assert len(every.curves) == len(runs) == len(chart.curves) + chart.hidden


def test_every_reference_row_is_read_from_its_command_as_the_tool_writes_it() -> None:
    assert (DATA_DIR / "reference_layouts.yaml").read_text() == render()
    kinds = {r.kind for r in reference_layouts()}
    assert kinds == {"official", "playbook"}
    assert references_for("Qwen/Qwen3.5-397B-A17B", "H200", 8, 1)


@pytest.mark.parametrize("lang", LANGS)
def test_the_caption_says_at_which_load_and_why(lang: str) -> None:
    many = run("deepseek-ai/DeepSeek-V3", users=2000)  # more than the KV holds at once
    asked = run("deepseek-ai/DeepSeek-V3", users=16)
    assert f"{many.fit.running:,}" in load_caption(many, lang)  # type: ignore[arg-type]
    assert "2,000" in load_caption(many, lang)  # type: ignore[arg-type]
    said = load_caption(asked, lang)  # type: ignore[arg-type]
    assert "16" in said
    assert asked.fit.peak is not None  # balanced: the operating point is said too
    assert f"{asked.fit.peak_users:,}" in said
