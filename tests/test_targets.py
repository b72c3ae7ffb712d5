"""A target is part of the verdict: each target asked is checked against the pick's figure and
its range; a missed one says so (not a plain "runs"), names the layout of these GPUs nearest to
meeting it, and offers changes re-checked through the Study that meet every target with the
whole range of each figure. Three models: dense GQA, MLA MoE, hybrid (Gated DeltaNet) MoE."""

from __future__ import annotations

import json
from typing import Any

import pytest

from engine.alternatives import alternatives
from engine.cli import main
from engine.i18n import LANGS
from engine.present import messages as M
from engine.scenario import Scenario, make_scenario, scenario_argv
from engine.study import Study, study
from engine.verdict import nearest
from tests.study_util import run

MISSED: dict[str, dict[str, Any]] = {
    # the issue's own: no layout of 8 x H100 gives Qwen3-32B a 400 ms first token (TP 8 nearest)
    "dense GQA": {"model": "Qwen/Qwen3-32B", "gpu": "H100", "ttft_ms": 400.0},
    # the issue's own: DeepSeek-V3 on 8 x H200 at 64 users within 500 ms TTFT, 30 ms TPOT
    "MLA MoE": {"model": "deepseek-ai/DeepSeek-V3", "users": 64, "ttft_ms": 500.0,
                "tpot_ms": 30.0},
    "hybrid MoE": {"model": "Qwen/Qwen3-Next-80B-A3B-Thinking", "gpu": "H100",
                   "gpus_per_node": 4, "tpot_ms": 8.0},
}  # fmt: skip


def _shortfall(st: Study, layout_speed: tuple[float, float]) -> float:
    ttft, tpot = layout_speed
    s = st.scenario
    return max(
        (v / t for v, t in ((ttft, s.ttft_ms), (tpot, s.tpot_ms)) if t is not None), default=0.0
    )


@pytest.mark.parametrize("case", list(MISSED))
def test_a_target_no_layout_meets_is_a_missed_verdict_with_the_nearest_layout(case: str) -> None:
    st = run(**MISSED[case])
    v = st.verdict
    assert v.status == "misses_targets" and v.runs and not v.targets_met
    assert [t for t in v.targets if not t.met]
    for t in v.targets:  # each target against the pick's own figure and its range
        assert t.low_ms <= t.value_ms <= t.high_ms
    # no layout of these GPUs that holds the users meets the targets
    fits = [c for c in st.search.candidates if c.users_fit and c.speed is not None]
    for c in fits:
        assert c.speed is not None
        assert _shortfall(st, (c.speed.ttft_ms, c.speed.tpot_ms)) > 1, c.layout.name()
    near = nearest(st.scenario, st.search)
    assert v.nearest == near.layout and v.nearest_speed == near.speed
    assert near.speed is not None and st.fit.speed is not None
    best = min(_shortfall(st, (c.speed.ttft_ms, c.speed.tpot_ms)) for c in fits if c.speed)
    assert _shortfall(st, (near.speed.ttft_ms, near.speed.tpot_ms)) == pytest.approx(best)


def test_a_target_no_layout_meets_takes_the_nearest_layout_and_says_what_it_overrules() -> None:
    # the issue's: TP 8 is nearest a 400 ms first token; a target changes the pick even when no
    # layout meets it, against the playbook's smaller copy, and the reason says so
    st = run(**MISSED["dense GQA"])
    assert st.verdict.nearest == st.layout
    assert st.verdict.reason["nearest"].code == "verdict.nearest.pick"  # type: ignore[union-attr]
    said = [d.code for r in st.search.reasons for d in r.walk()]
    assert "layout.vs.target_gap" in said


def test_where_a_kernel_fact_ranks_first_the_verdict_names_the_nearer_layout() -> None:
    # DSA's kernels are built for DP-attention at TP 1-2, ranked before speed; TP 8 + EP comes
    # nearer a 10 ms TPOT, and the verdict names it with its figures
    st = run("deepseek-ai/DeepSeek-V3.2", users=8, context=8192, tpot_ms=10.0)
    near = st.verdict.nearest
    assert near is not None and near != st.layout
    nearest_said = st.verdict.reason["nearest"]
    assert nearest_said.code == "verdict.nearest.other"  # type: ignore[union-attr]
    assert nearest_said["layout"] == near.name()  # type: ignore[index]


def _meets_with_range(scenario: Scenario) -> bool:
    st = study(scenario)
    return st.verdict.status == "runs" and all(t.sure for t in st.verdict.targets)


@pytest.mark.parametrize("case", list(MISSED))
def test_a_missed_target_offers_changes_re_checked_to_meet_it_with_their_range(case: str) -> None:
    st = run(**MISSED[case])
    alts = alternatives(st)
    assert alts, case
    for a in alts:
        assert _meets_with_range(a.checked), (case, a.change)
        assert a.speed is not None  # the figures it then gives are quoted
        changed = study(a.checked)
        assert changed.fit.speed == a.speed


def test_the_changes_a_missed_target_offers_include_the_ask_itself() -> None:
    # fewer users or shorter prompts meet DeepSeek-V3's targets on the same 8 GPUs
    st = run(**MISSED["MLA MoE"])
    changed = {k for a in alternatives(st) for k, _ in a.change}
    assert {"users", "input_tokens"} & changed


def test_a_target_the_pick_meets_says_met_with_its_range() -> None:
    free = run("meta-llama/Meta-Llama-3.1-8B", users=16)
    assert free.fit.speed is not None
    loose = 2 * free.fit.speed.tpot_ms
    st = run("meta-llama/Meta-Llama-3.1-8B", users=16, tpot_ms=round(loose, 1))
    (check,) = st.verdict.targets
    assert st.verdict.status == "runs" and check.met and check.metric == "tpot"
    assert st.fit.speed is not None and check.value_ms == st.fit.speed.tpot_ms
    assert st.verdict.reason.code == "verdict.runs_targets"
    assert alternatives(st) == ()


def test_study_json_carries_each_target_its_range_and_the_nearest_layout(
    capsys: pytest.CaptureFixture[str],
) -> None:
    s = make_scenario(**MISSED["dense GQA"])
    assert main(["study", s.model, *scenario_argv(s), "--json"]) == 0
    verdict = json.loads(capsys.readouterr().out)["verdict"]
    assert verdict["status"] == "misses_targets" and verdict["runs"]
    (ttft,) = verdict["targets"]
    assert ttft["metric"] == "ttft" and ttft["target_ms"] == 400 and not ttft["met"]
    low, high = ttft["range_ms"]
    assert low <= ttft["value_ms"] <= high
    assert verdict["nearest"]["layout"] and verdict["nearest"]["ttft_ms"] > 400


@pytest.mark.parametrize("lang", LANGS)
def test_the_missed_verdict_is_worded_in_every_language(lang: str) -> None:
    st = run(**MISSED["MLA MoE"])
    said = M.verdict(st, lang)  # type: ignore[arg-type]
    assert said.status == "misses_targets"
    assert st.fit.speed is not None
    assert f"{st.fit.speed.ttft_ms:,.0f} ms" in said.reason  # the pick's own figure
