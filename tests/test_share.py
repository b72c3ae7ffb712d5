"""engine/share.py: the view state's round trip through query parameters."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.errors import InputError
from engine.present.share import (
    DEFAULT_STATE,
    QUERY_KEYS,
    ViewState,
    from_query,
    options_for,
    reconcile,
    to_query,
)


def test_defaults_are_deepseek_v3_on_8_h200_with_vllm() -> None:
    s = DEFAULT_STATE
    assert (s.model, s.gpu, s.gpus, s.nodes, s.engine, s.tp) == (
        "deepseek-ai/DeepSeek-V3",
        "H200",
        8,
        1,
        "vllm",
        8,
    )


def test_an_empty_query_is_the_default_without_warnings() -> None:
    parsed = from_query({})
    assert parsed.state == DEFAULT_STATE
    assert parsed.warnings == ()


def test_every_field_has_a_query_key_and_round_trips() -> None:
    assert set(QUERY_KEYS.values()) == set(ViewState.model_fields)
    s = DEFAULT_STATE.replace(
        model="meta-llama/Meta-Llama-3.1-8B",
        gpu="B200",
        gpus=4,
        nodes=2,
        engine="sglang",
        context=8192,
        users=3,
        prefix=55,
        latency="throughput",
        kv_dtype="fp8",
        tp=4,
        dp=2,
        ep=True,
        memory_fraction=0.85,
        source="hub",
        hub="org/name",
    )
    parsed = from_query(to_query(s))
    assert parsed.state == s
    assert parsed.warnings == ()


def test_names_are_canonicalised() -> None:
    parsed = from_query({"gpu": "h200 sxm", "model": "Meta-Llama-3.1-8B", "kv": "BF16"})
    assert (parsed.state.gpu, parsed.state.model, parsed.state.kv_dtype) == (
        "H200",
        "meta-llama/Meta-Llama-3.1-8B",
        "bf16",
    )


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("tp", "abc"),
        ("tp", "0"),
        ("gpus", "999"),
        ("ctx", "-5"),
        ("ctx", "1e9"),
        ("users", "2.5"),
        ("prefix", "101"),
        ("mem", "nan"),
        ("mem", "2"),
        ("engine", "trt"),
        ("latency", "fast"),
        ("kv", "int3"),
        ("gpu", "NOPE-9000"),
        ("model", "../../etc/passwd"),
        ("hub", "not a repo id"),
        ("src", "ftp"),
        ("ep", "maybe"),
    ],
)
def test_a_bad_value_falls_back_to_its_default_with_a_warning(key: str, value: str) -> None:
    parsed = from_query({key: value})
    field = QUERY_KEYS[key]
    assert getattr(parsed.state, field) == getattr(DEFAULT_STATE, field)
    assert len(parsed.warnings) == 1
    assert f"{key}=" in parsed.warnings[0]


def test_good_values_survive_beside_bad_ones() -> None:
    parsed = from_query({"tp": "x", "users": "40", "zz": "1"})
    assert parsed.state.users == 40
    assert len(parsed.warnings) == 2
    assert any("'zz'" in w for w in parsed.warnings)


def test_repeated_keys_take_the_last_value_like_st_query_params() -> None:
    assert from_query({"users": ["3", "7"]}).state.users == 7


def test_tp_beyond_the_gpus_is_reduced() -> None:
    parsed = from_query({"gpus": "2", "tp": "8"})
    assert (parsed.state.tp, parsed.state.dp) == (2, 1)
    assert "TP × DP" in parsed.warnings[0]
    s, notes = reconcile(DEFAULT_STATE.replace(tp=4, dp=4))
    assert (s.tp, s.dp) == (4, 2)
    assert notes


def test_hub_source_needs_a_hub_id() -> None:
    parsed = from_query({"src": "hub"})
    assert parsed.state.source == "catalog"
    assert parsed.warnings


def test_an_upload_cannot_come_from_a_link() -> None:
    parsed = from_query({"src": "upload"})
    assert parsed.state.source == "catalog"
    assert "cannot" in parsed.warnings[0]


def test_replace_names_the_field_it_rejects() -> None:
    with pytest.raises(InputError) as err:
        DEFAULT_STATE.replace(users=0)
    assert err.value.field == "users"


def test_options_for_carries_the_view_into_diagnose() -> None:
    o = options_for(DEFAULT_STATE.replace(nodes=2, ep=True), "H200", "sm_90", 141 * 10**9)
    assert (o.tp, o.gpus, o.expert_parallel, o.gpu_arch, o.context) == (
        8,
        16,
        True,
        "sm_90",
        32_768,
    )


@given(st.dictionaries(st.sampled_from([*QUERY_KEYS, "junk"]), st.text(max_size=30), max_size=8))
def test_any_query_gives_a_valid_state(query: dict[str, str]) -> None:
    parsed = from_query(query)
    assert parsed.state.tp * parsed.state.dp <= parsed.state.total_gpus
    assert from_query(to_query(parsed.state)).state == parsed.state


def test_latency_priorities_and_engines_match_the_advisors_and_the_planner() -> None:
    from engine.launch import advisors, plan
    from engine.present import share

    assert share.LATENCY_PRIORITIES == advisors.LATENCY_PRIORITIES == plan.LATENCY_PRIORITIES
    assert share.ENGINES == plan.ENGINES
