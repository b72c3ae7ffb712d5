"""One table of scenario fields: the link and the CLI line are generated from it, and any valid
Scenario goes there and back unchanged."""

from __future__ import annotations

import shlex
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.cli import build_parser, scenario_from_args
from engine.errors import InputError
from engine.hardware.gpus import all_gpus
from engine.kv.dtype import KV_DTYPE_CHOICES
from engine.model.loader import catalog_names
from engine.present.artifacts import cli_command
from engine.scenario import (
    QUERY_KEYS,
    Scenario,
    fields,
    from_query,
    make_scenario,
    scenario_argv,
    to_query,
)
from engine.study import study

opt = st.none
small = st.integers(min_value=1, max_value=8)


@st.composite
def scenarios(draw: Any) -> Scenario:
    per_node = draw(st.sampled_from([1, 2, 4, 8]))
    nodes = draw(st.sampled_from([1, 1, 2]))
    context = draw(st.one_of(st.none(), st.integers(min_value=64, max_value=1 << 20)))
    fields_: dict[str, Any] = {
        "source": draw(st.sampled_from(["catalog", "hub"])),
        "gpu": draw(st.sampled_from([g.key for g in all_gpus()])),
        "gpus_per_node": per_node,
        "nodes": nodes,
        "engine": draw(st.sampled_from(["vllm", "sglang"])),
        "context": context,
        "users": draw(st.integers(min_value=1, max_value=100_000)),
        "prefix_overlap": draw(st.integers(min_value=0, max_value=100)),
        "latency": draw(st.sampled_from(["latency", "balanced", "throughput"])),
        "kv_dtype": draw(st.sampled_from(KV_DTYPE_CHOICES)),
        "memory_fraction": draw(
            st.one_of(opt(), st.floats(min_value=0.05, max_value=1.0, allow_nan=False))
        ),
        "images": draw(st.booleans()),
        "ttft_ms": draw(st.one_of(opt(), st.floats(min_value=0.1, max_value=600_000.0))),
        "tpot_ms": draw(st.one_of(opt(), st.floats(min_value=0.1, max_value=10_000.0))),
        "max_num_seqs": draw(st.one_of(opt(), st.integers(min_value=1, max_value=4096))),
        "ep": draw(st.one_of(opt(), st.booleans())),
        "tp": draw(st.one_of(opt(), st.sampled_from([1, 2, 4]))),
        "replicas": draw(st.one_of(opt(), st.sampled_from([1, 2]))),
    }
    cap = context or 1 << 20
    fields_["output_tokens"] = draw(st.one_of(opt(), st.integers(min_value=1, max_value=cap // 2)))
    fields_["input_tokens"] = draw(st.one_of(opt(), st.integers(min_value=1, max_value=cap // 2)))
    if fields_["source"] == "catalog":
        fields_["model"] = draw(st.sampled_from(catalog_names()))
    else:
        fields_["model"] = draw(
            st.from_regex(r"[a-z][a-z0-9-]{0,12}/[A-Za-z][A-Za-z0-9_.-]{0,20}", fullmatch=True)
        )
    try:
        return make_scenario(**fields_)
    except InputError:
        fields_.update(tp=None, replicas=None)
        return make_scenario(**fields_)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_a_scenario_survives_the_link_and_the_command_line(s: Scenario) -> None:
    back = from_query(to_query(s))
    assert back.warnings == ()
    assert back.scenario == s
    argv = [s.model, *scenario_argv(s)]
    if s.source == "catalog":  # a hub id on the command line is fetched, not parsed
        sub = "study"
        args = build_parser().parse_args([sub, *argv])
        assert scenario_from_args(args) == s
    else:
        args = build_parser().parse_args(["study", "Qwen/Qwen3-8B", *scenario_argv(s)])
        assert scenario_from_args(args) == s.model_copy(
            update={"source": "catalog", "model": "Qwen/Qwen3-8B"}
        )


def test_every_field_has_a_link_key_and_every_chosen_field_a_flag() -> None:
    keys = [r.spec.query for r in fields()]
    assert len(keys) == len(set(keys)) == len(Scenario.model_fields)
    assert set(QUERY_KEYS.values()) == set(Scenario.model_fields)
    no_flag = {r.name for r in fields() if r.spec.cli is None}
    assert no_flag == {"source", "model", "digest"}  # the CLI's positional SOURCE


def test_a_link_with_seqs_4_reproduces_max_num_seqs_4() -> None:
    s = from_query({"model": "Qwen/Qwen3-8B", "seqs": "4"}).scenario
    assert s.max_num_seqs == 4
    line = cli_command(study(s))
    assert line is not None
    words = shlex.split(line)
    assert words[words.index("--max-num-seqs") + 1] == "4"


def test_the_speed_workload_defaults_from_the_context() -> None:
    s = make_scenario(model="Qwen/Qwen3-8B")
    assert s.workload(32_768) == (8192, 1024)
    assert s.workload(1000) == (500, 500)
    pinned = s.replace(input_tokens=1024, output_tokens=256)
    assert pinned.workload(32_768) == (1024, 256)


def test_input_and_output_tokens_must_fit_the_context() -> None:
    try:
        make_scenario(model="Qwen/Qwen3-8B", context=2048, input_tokens=2000, output_tokens=100)
    except InputError as err:
        assert err.field == "input_tokens"
    else:
        raise AssertionError("input + output over the context was accepted")
