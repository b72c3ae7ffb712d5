"""Advisors reproduce the playbook's figures and emit only flags the pinned engines have."""

from __future__ import annotations

import itertools

import pytest

from engine.errors import InputError
from engine.launch.advisors import (
    FAMILIES,
    LATENCY_PRIORITIES,
    PHASES,
    engine_advice,
    eplb_advice,
    moe_comm_advice,
    parallelism_advice,
)
from engine.software.tables import flag_table


def assert_real_flags(engine: str, fragments: tuple[str, ...]) -> None:
    table = flag_table(engine)  # type: ignore[arg-type]
    for fragment in fragments:
        flag, _, value = fragment.partition(" ")
        assert flag in table, (engine, flag)
        choices = table[flag].choices
        if value and choices is not None:
            assert value in choices, (engine, flag, value)


# --- parallelism ----------------------------------------------------------------------------


def test_gqa_dense_is_tensor_parallel_only() -> None:
    advice = parallelism_advice("GQA", False, 8, 32, "latency")
    assert advice.layout == "TP"
    assert (advice.attention_tp, advice.attention_dp, advice.ep) == (8, 1, 1)
    assert advice.vllm_flags == ("--tensor-parallel-size 8",)
    assert advice.sglang_flags == ("--tp-size 8",)
    assert "DP-attention has no replication to remove" in " ".join(advice.reasoning)


def test_tp2_times_4_beats_tp8_by_34_percent_throughput_29_percent_ttft() -> None:
    advice = parallelism_advice("GQA", False, 8, 100, "throughput", min_tp=2)
    assert advice.layout == "4 × TP2 replicas"
    assert advice.sglang_flags == ("--tp-size 2", "--dp-size 4")
    values = {f.value for f in advice.figures}
    assert {"+34 %", "−29 %", "+42 %"} <= values
    assert all("seeds/004" in f.source for f in advice.figures)


def test_tp_size_must_divide_the_attention_heads() -> None:
    advice = parallelism_advice("GQA", False, 16, 8, "latency", num_attention_heads=24)
    assert advice.attention_tp == 8
    with pytest.raises(InputError) as err:
        parallelism_advice("GQA", False, 8, 8, "latency", num_attention_heads=7, min_tp=2)
    assert err.value.field == "num_attention_heads"


def test_mla_moe_at_low_concurrency_is_tp_plus_ep_52_percent_ahead() -> None:
    advice = parallelism_advice("MLA", True, 8, 64, "throughput")
    assert advice.layout == "TP+EP"
    assert (advice.attention_tp, advice.ep) == (8, 8)
    assert "--enable-expert-parallel" in advice.vllm_flags
    assert "--ep-size 8" in advice.sglang_flags
    assert "+52 %" in {f.value for f in advice.figures}
    assert "8× latent KV" in advice.tradeoff


def test_mla_moe_at_high_concurrency_uses_dp_attention_to_stop_latent_replication() -> None:
    advice = parallelism_advice("MLA", True, 8, 512, "throughput")
    assert advice.layout == "DP-attention+EP"
    assert (advice.attention_tp, advice.attention_dp, advice.ep) == (1, 8, 8)
    assert advice.vllm_flags == (
        "--tensor-parallel-size 1",
        "--data-parallel-size 8",
        "--enable-expert-parallel",
    )
    assert advice.sglang_flags == ("--tp-size 8", "--attn-dp-size 8", "--ep-size 8")


def test_latency_priority_keeps_mla_tensor_parallel_at_any_concurrency() -> None:
    assert parallelism_advice("DSA", True, 8, 5000, "latency").layout == "TP+EP"


def test_dsa_advice_cites_the_small_tp_recipe() -> None:
    advice = parallelism_advice("DSA", True, 8, 32, "balanced")
    assert "TP 1–2" in {f.value for f in advice.figures}


def test_every_parallelism_flag_exists_in_the_engine_tables() -> None:
    for fam, moe, gpus, conc, prio in itertools.product(
        FAMILIES, (False, True), (1, 2, 8, 16), (1, 100, 1000), LATENCY_PRIORITIES
    ):
        advice = parallelism_advice(fam, moe, gpus, conc, prio)
        assert advice.attention_tp * advice.attention_dp == gpus
        assert_real_flags("vllm", advice.vllm_flags)
        assert_real_flags("sglang", advice.sglang_flags)
        assert advice.reasoning and advice.tradeoff and advice.source


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"family": "SWA"}, "family"),
        ({"num_gpus": 0}, "num_gpus"),
        ({"concurrency": -1}, "concurrency"),
        ({"latency_priority": "fast"}, "latency_priority"),
        ({"min_tp": 9}, "min_tp"),
        ({"moe": "yes"}, "moe"),
    ],
)
def test_parallelism_bad_input_names_the_field(kwargs: dict[str, object], field: str) -> None:
    args: dict[str, object] = {
        "family": "GQA",
        "moe": False,
        "num_gpus": 8,
        "concurrency": 10,
        "latency_priority": "latency",
    }
    args.update(kwargs)
    with pytest.raises(InputError) as err:
        parallelism_advice(**args)  # type: ignore[arg-type]
    assert err.value.field == field


# --- engine choice --------------------------------------------------------------------------


def test_no_prefix_overlap_favours_vllm_60_0_vs_52_7() -> None:
    advice = engine_advice(0)
    assert advice.engine == "vllm"
    assert advice.figures[0].value == "vLLM 60.0 vs SGLang 52.7 tok/s"
    assert "seeds/000" in advice.figures[0].source


def test_30_to_40_percent_overlap_is_even() -> None:
    advice = engine_advice(35)
    assert advice.engine == "either"
    assert advice.measured_row == "30–40 %"


def test_60_percent_overlap_and_up_favours_sglang_radix_attention() -> None:
    for pct in (60, 80, 100):
        advice = engine_advice(pct)
        assert advice.engine == "sglang"
        assert "RadixAttention" in " ".join(advice.reasoning)
        assert "--schedule-policy lpm" in advice.sglang_flags
    assert {f.value for f in engine_advice(80).figures} == {
        "vLLM 22.4 vs SGLang 31.2 tok/s",
        "vLLM 16.0 vs SGLang 30.5 tok/s",
    }


def test_several_replicas_need_a_cache_aware_router() -> None:
    assert "cache_aware" in engine_advice(70, replicas=4).routing
    assert "One replica" in engine_advice(70, replicas=1).routing
    assert_real_flags("sglang", engine_advice(70, replicas=4).sglang_flags)


@pytest.mark.parametrize("pct", [-1, 100.5, "50", True, float("nan")])
def test_engine_advice_rejects_non_percentages(pct: object) -> None:
    with pytest.raises(InputError) as err:
        engine_advice(pct)  # type: ignore[arg-type]
    assert err.value.field == "prefix_overlap_pct"


# --- MoE all-to-all -------------------------------------------------------------------------


def test_single_node_keeps_the_default_all_to_all() -> None:
    advice = moe_comm_advice(1, "decode")
    assert advice.vllm_flags == ("--all2all-backend allgather_reducescatter",)
    assert advice.sglang_flags == ("--moe-a2a-backend none",)


def test_multi_node_prefill_uses_deepep_high_throughput_normal_mode() -> None:
    advice = moe_comm_advice(4, "prefill")
    assert advice.vllm_flags == ("--all2all-backend deepep_high_throughput",)
    assert advice.sglang_flags == ("--moe-a2a-backend deepep", "--deepep-mode normal")


def test_multi_node_decode_uses_deepep_low_latency() -> None:
    advice = moe_comm_advice(4, "decode")
    assert advice.vllm_flags == ("--all2all-backend deepep_low_latency",)
    assert advice.sglang_flags == ("--moe-a2a-backend deepep", "--deepep-mode low_latency")


def test_every_all_to_all_value_is_a_choice_in_the_flag_tables() -> None:
    for nodes, phase in itertools.product((1, 2, 16), PHASES):
        advice = moe_comm_advice(nodes, phase)
        assert_real_flags("vllm", advice.vllm_flags)
        assert_real_flags("sglang", advice.sglang_flags)
        assert "seeds/004" in advice.source


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
    assert_real_flags("vllm", advice.vllm_flags)
    assert_real_flags("sglang", advice.sglang_flags)
    assert "--ep-num-redundant-experts 32" in advice.sglang_flags


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
