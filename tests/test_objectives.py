"""Three objectives, each its own: latency first the lowest TPOT at the asked load (then TTFT),
throughput first the most tokens/s per GPU at the load the layout holds, balanced the most
tokens/s per GPU at the highest load whose TPOT stays within the interactivity bound (a scenario
field, 30 ms unless set). Speeds whose ranges overlap are a tie the playbook's preferences break:
for a MoE, expert parallelism where the layout allows it."""

from __future__ import annotations

from typing import Any

import pytest

from engine.cli import build_parser, scenario_from_args
from engine.launch.candidate import Candidate
from engine.launch.layout import _tpot_probe, copies_speed
from engine.launch.ranking import objective_metric, objective_speed, overlap
from engine.scenario import DEFAULT_SCENARIO, make_scenario, to_query
from engine.study import Study
from tests.study_util import run

LLAMA_8B = {"model": "meta-llama/Meta-Llama-3.1-8B", "gpu": "H200", "gpus_per_node": 8}


def _llama(latency: str) -> Study:
    return run(**LLAMA_8B, users=16, latency=latency)


def _figures(st: Study) -> set[str]:
    """The figure parameters the pick's reasons quote (its own and the rival's)."""
    return {
        key
        for r in st.search.reasons
        for d in r.walk()
        for key, _ in d.params
        if key.endswith(("_tps", "_tpot", "_ttft", "_figure"))
    }


def test_llama_8b_on_8_h200_throughput_first_and_balanced_replicate_latency_first_shards() -> None:
    throughput, balanced, latency = _llama("throughput"), _llama("balanced"), _llama("latency")
    assert throughput.layout.replicas > 1 and balanced.layout.replicas > 1
    assert latency.layout.tp > balanced.layout.tp
    assert latency.layout.tp > throughput.layout.tp
    for st in (throughput, balanced, latency):
        assert _figures(st), st.scenario.latency  # the reasons name the deciding figures


def test_balanced_ranks_at_the_most_users_within_the_interactivity_bound() -> None:
    st = _llama("balanced")
    peak, bound = st.fit.peak, st.scenario.tpot_bound_ms
    assert peak is not None and peak.tpot_ms <= bound
    assert 16 < st.fit.peak_users <= st.fit.running  # not at the 16 users asked
    looser = run(**LLAMA_8B, users=16, latency="balanced", tpot_bound_ms=2 * bound)
    same = next(c for c in looser.search.candidates if c.layout == st.layout)
    assert same.peak_users > st.fit.peak_users  # a looser bound holds more requests


def test_balanced_differs_from_latency_first_where_the_bound_leaves_room() -> None:
    # at 16 users the time per output token of every layout is far inside 30 ms: latency first
    # takes the lowest, balanced the most tokens/s per GPU at its bound
    balanced, latency = _llama("balanced"), _llama("latency")
    assert balanced.layout != latency.layout
    assert balanced.fit.peak is not None
    other = next(c for c in balanced.search.candidates if c.layout == latency.layout)
    assert other.peak is not None
    ours, theirs = balanced.fit.peak, other.peak
    assert ours.output_tokens_per_s_per_gpu >= theirs.output_tokens_per_s_per_gpu or overlap(
        ours, theirs, "tps_per_gpu"
    )


def test_the_interactivity_bound_is_a_scenario_field_the_link_and_the_cli_carry() -> None:
    assert DEFAULT_SCENARIO.tpot_bound_ms == 30
    s = make_scenario(tpot_bound_ms=45)
    assert to_query(s)["bound"] == "45"
    args = build_parser().parse_args(["study", s.model, "--tpot-bound-ms", "45"])
    assert scenario_from_args(args).tpot_bound_ms == 45


def _ep_twin(st: Study, c: Candidate) -> Candidate | None:
    """The same layout with experts the other way, equal to ``c`` in every part before speed."""
    cut = [name for name, _ in c.rank].index("speed")
    s = c.layout.split
    for other in st.search.candidates:
        o = other.layout.split
        if (o.tp, o.dp, o.pp, other.layout.replicas) != (s.tp, s.dp, s.pp, c.layout.replicas):
            continue
        if o.ep != s.ep and other.rank[:cut] == c.rank[:cut]:
            return other
    return None


MOE = [
    {"model": "deepseek-ai/DeepSeek-V3", "users": 64},
    {"model": "deepseek-ai/DeepSeek-V3", "users": 64, "latency": "throughput"},
    {"model": "deepseek-ai/DeepSeek-V3", "users": 64, "latency": "latency"},
    {"model": "Qwen/Qwen3-30B-A3B", "users": 64},
    {"model": "openai/gpt-oss-120b", "gpu": "H100", "users": 32},
    {"model": "Qwen/Qwen3-Next-80B-A3B-Thinking", "gpu": "H100", "gpus_per_node": 4},
]


@pytest.mark.parametrize("fields", MOE, ids=lambda f: f"{f['model']}-{f.get('latency', '')}")
def test_moe_layouts_with_and_without_ep_inside_one_range_pick_ep(fields: dict[str, Any]) -> None:
    st = run(**fields)
    s = st.scenario
    twin = _ep_twin(st, st.fit)
    if st.fit.layout.ep or twin is None:
        return
    a, b = objective_speed(s, st.fit), objective_speed(s, twin)
    assert a is not None and b is not None
    assert not overlap(a, b, objective_metric(s)), "EP off where its speed ties: the pick"


def test_a_speed_tie_between_ep_and_sliced_experts_goes_to_ep_and_says_so() -> None:
    st = run("deepseek-ai/DeepSeek-V3", users=64, latency="latency")
    twin = _ep_twin(st, st.fit)
    assert st.fit.layout.ep and twin is not None
    assert st.fit.speed is not None and twin.speed is not None
    assert overlap(st.fit.speed, twin.speed, "tpot")
    ties = [r for r in st.search.reasons if r.code == "layout.vs.tie"]
    assert any(r["rival"] == twin.layout.name() for r in ties)
    assert any(r["preference"].code == "layout.vs.ep" for r in ties)  # type: ignore[union-attr]


def test_the_operating_points_tpot_probe_is_the_speed_models_own_tpot() -> None:
    """The balanced search asks the TPOT alone at whole multiples of the attention ranks over
    every copy; it is the TPOT the full speed gives there."""
    st = run("deepseek-ai/DeepSeek-V3", users=64)
    inp = st.search_inputs
    assert inp is not None
    for c in st.search.candidates[:6]:
        if c.speed is None:
            continue
        lay = c.layout
        unit = lay.split.dp * lay.replicas
        for admit in (unit, 10**6):  # a copy admitting a few, or every request
            probe = _tpot_probe(
                inp, st.scenario, lay.replicas, lay.split, c.chunk_tokens, c.context, admit
            )
            for k in (1, 3):
                sp = copies_speed(inp, st.scenario, lay.replicas, lay.split, c.chunk_tokens,
                                  c.context, k * unit, admit)  # fmt: skip
                assert sp is not None and probe(k * unit) == pytest.approx(sp.tpot_ms)
