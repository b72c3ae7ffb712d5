"""Advisors reproduce the playbook's figures and emit only flags the pinned engines have."""

from __future__ import annotations

import itertools
import json

import pytest

from engine.decision import Decimal
from engine.engines import adapter
from engine.errors import InputError
from engine.launch.advisors import (
    PHASES,
    engine_advice,
    eplb_advice,
    moe_comm_advice,
)
from engine.rules import DATA_DIR
from tools import advisor_pairs


def assert_real_flags(engine: str, fragments: tuple[str, ...]) -> None:
    table = adapter(engine).flags  # type: ignore[arg-type]
    for fragment in fragments:
        flag, _, value = fragment.partition(" ")
        assert flag in table, (engine, flag)
        choices = table[flag].choices
        if value and choices is not None:
            assert value in choices, (engine, flag, value)


# --- engine choice --------------------------------------------------------------------------


def test_no_prefix_overlap_favours_vllm_60_0_vs_52_7() -> None:
    advice = engine_advice(0)
    assert advice.engine == "vllm"
    assert advice.figures[0].value == "vLLM 60.0 vs SGLang 52.7 tok/s"
    assert "Serving playbook" in advice.figures[0].source


def test_30_to_40_percent_overlap_is_even() -> None:
    advice = engine_advice(35)
    assert advice.engine == "either"
    assert advice.measured_row == "30–40 %"


def test_60_percent_overlap_and_up_favours_sglang_radix_attention() -> None:
    for pct in (60, 80, 100):
        advice = engine_advice(pct)
        assert advice.engine == "sglang"
        assert "RadixAttention" in " ".join(advice.reasoning)
        assert "--schedule-policy lpm" in advice.flags["sglang"]
    assert {f.value for f in engine_advice(80).figures} == {
        "vLLM 22.4 vs SGLang 31.2 tok/s",
        "vLLM 16.0 vs SGLang 30.5 tok/s",
    }


def test_several_replicas_need_a_cache_aware_router() -> None:
    assert "cache_aware" in engine_advice(70, replicas=4).routing
    assert "One replica" in engine_advice(70, replicas=1).routing
    assert_real_flags("sglang", engine_advice(70, replicas=4).flags["sglang"])


@pytest.mark.parametrize("pct", [-1, 100.5, "50", True, float("nan")])
def test_engine_advice_rejects_non_percentages(pct: object) -> None:
    with pytest.raises(InputError) as err:
        engine_advice(pct)  # type: ignore[arg-type]
    assert err.value.field == "prefix_overlap_pct"


# --- MoE all-to-all -------------------------------------------------------------------------


def test_single_node_keeps_the_default_all_to_all() -> None:
    advice = moe_comm_advice(1, "decode")
    assert advice.flags["vllm"] == ("--all2all-backend allgather_reducescatter",)
    assert advice.flags["sglang"] == ("--moe-a2a-backend none",)


def test_multi_node_prefill_uses_deepep_high_throughput_normal_mode() -> None:
    advice = moe_comm_advice(4, "prefill")
    assert advice.flags["vllm"] == ("--all2all-backend deepep_high_throughput",)
    assert advice.flags["sglang"] == ("--moe-a2a-backend deepep", "--deepep-mode normal")


def test_multi_node_decode_uses_deepep_low_latency() -> None:
    advice = moe_comm_advice(4, "decode")
    assert advice.flags["vllm"] == ("--all2all-backend deepep_low_latency",)
    assert advice.flags["sglang"] == ("--moe-a2a-backend deepep", "--deepep-mode low_latency")


def test_every_all_to_all_value_is_a_choice_in_the_flag_tables() -> None:
    for nodes, phase in itertools.product((1, 2, 16), PHASES):
        advice = moe_comm_advice(nodes, phase)
        assert_real_flags("vllm", advice.flags["vllm"])
        assert_real_flags("sglang", advice.flags["sglang"])
        assert "Serving playbook" in advice.source


def test_moe_comm_bad_input_names_the_field() -> None:
    with pytest.raises(InputError) as err:
        moe_comm_advice(2, "both")
    assert err.value.field == "phase"
    with pytest.raises(InputError) as err:
        moe_comm_advice(0, "decode")
    assert err.value.field == "nodes"


# --- EPLB -----------------------------------------------------------------------------------


def test_32_redundant_of_256_experts_cost_12_5_percent_expert_weights() -> None:
    advice = eplb_advice(256, 32)
    assert advice.extra_weight_fraction == 0.125
    assert advice.physical_experts == 288
    assert "12.5%" in advice.tradeoff
    assert {"7.2× → 1.9×", "+18 %", "+12.5 %"} == {f.value for f in advice.figures}
    assert_real_flags("vllm", advice.flags["vllm"])
    assert_real_flags("sglang", advice.flags["sglang"])
    assert "--ep-num-redundant-experts 32" in advice.flags["sglang"]


def test_eplb_experts_per_gpu_and_bytes() -> None:
    advice = eplb_advice(256, 32, ep_size=32, expert_weight_bytes=256 * 88_000_000)
    assert advice.experts_per_gpu == 9
    assert advice.divides_evenly is True
    assert advice.extra_weight_bytes == 32 * 88_000_000
    assert eplb_advice(256, 32, ep_size=7).divides_evenly is False


def test_eplb_bad_input_names_the_field() -> None:
    with pytest.raises(InputError) as err:
        eplb_advice(0, 32)
    assert err.value.field == "num_experts"
    with pytest.raises(InputError) as err:
        eplb_advice(256, -1)
    assert err.value.field == "redundant"


def test_the_engine_advisor_quotes_tok_s_only_where_they_were_measured() -> None:
    """The benchmark's rows name their models (a dense GQA and an MLA MoE) but no GPU: for any
    model on any catalogued GPU the advice is the rule alone, never the same figures."""
    for family, generation in (("MLA", "hopper"), ("GQA", "ampere"), ("hybrid", "blackwell")):
        for pct in (0, 35, 80):
            advice = engine_advice(pct, family=family, gpu_generation=generation)
            assert advice.figures == ()
            codes = [w.code for w in advice.why]
            assert codes[-1] == "advice.engine.not_measured"
            assert all(not isinstance(v, Decimal) for w in advice.why for _, v in w.params)
    assert engine_advice(0).figures  # the table as read, with no model to match


def test_the_engine_advisor_quotes_runs_of_both_engines_on_this_family_and_gpu_generation() -> None:
    """data/advisor_pairs.yaml: published runs of vLLM and SGLang under the same conditions.
    A dense GQA model on Hopper gets the dense GQA Hopper pairs, with the rows' own figures; an
    MLA MoE on Hopper the DeepSeek-R1 pair; a family measured on no GPU of its generation, the
    rule alone."""
    rows = {}
    with (DATA_DIR / "perf" / "measured.jsonl").open(encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            rows[row["id"]] = row
    dense = engine_advice(0, family="GQA", gpu_generation="hopper", moe=False)
    quoted = [w for w in dense.why if w.code == "advice.engine.measured"]
    assert {str(dict(w.params)["model"].text) for w in quoted} == {
        "Qwen/Qwen3-32B",
        "Qwen/Qwen3-8B",
    }
    for w in quoted:
        p = dict(w.params)
        vllm_row, sglang_row = (rows[r.text] for r in p["rows"])
        assert (vllm_row["engine"], sglang_row["engine"]) == ("vllm", "sglang")
        assert p["vllm"].value == vllm_row["output_tps_total"]
        assert p["sglang"].value == sglang_row["output_tps_total"]
    mla = engine_advice(0, family="MLA", gpu_generation="hopper", moe=True)
    assert [
        dict(w.params)["model"].text for w in mla.why if w.code == "advice.engine.measured"
    ] == ["deepseek-ai/DeepSeek-R1-0528"]
    ampere = engine_advice(0, family="GQA", gpu_generation="ampere", moe=False)
    assert [w.code for w in ampere.why][-1] == "advice.engine.not_measured"


def test_the_measured_pairs_file_is_what_the_tool_writes() -> None:
    assert advisor_pairs.main(["--check"]) == 0


def test_every_advice_spells_each_engines_flags_through_its_adapter() -> None:
    """vLLM has no prefix-ordered schedule; its prefix cache needs none."""
    low, shared = engine_advice(0), engine_advice(70)
    assert low.flags == {"vllm": (), "sglang": ()}
    assert shared.flags == {"vllm": (), "sglang": ("--schedule-policy lpm",)}
    eplb = eplb_advice(256, 32)
    config = "--eplb-config '{\"num_redundant_experts\": 32}'"
    assert eplb.flags["vllm"] == ("--enable-eplb", config)
    for advice in (eplb, moe_comm_advice(2, "mixed")):
        for engine, fragments in advice.flags.items():
            assert_real_flags(engine, fragments)
