"""One table of scenario fields: the link and the CLI line are generated from it, and any valid
Scenario goes there and back unchanged."""

from __future__ import annotations

import shlex
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.cli import build_parser, scenario_from_args
from engine.engines import Engine, adapter
from engine.errors import InputError
from engine.hardware.gpus import all_gpus
from engine.kv.dtype import KV_DTYPE_CHOICES
from engine.lint.arguments import parse
from engine.lint.command_scenario import field_flags, read_settings
from engine.model.loader import catalog_names
from engine.present.artifacts import cli_command
from engine.scenario import (
    DEFAULT_MODEL,
    ENGINES,
    LATENCY_PRIORITIES,
    QUERY_KEYS,
    Scenario,
    catalog_name,
    cli_line,
    field_row,
    fields,
    from_query,
    make_scenario,
    scenario_argv,
    to_query,
)
from engine.study import study
from tests.budget import examples
from tests.study_util import english

opt = st.none
DIGEST = st.text(alphabet="0123456789abcdef", min_size=64, max_size=64)
LAYOUT = ("tp", "dp", "pp", "replicas")


@st.composite
def scenarios(draw: Any) -> Scenario:
    """A valid Scenario with every field of the table drawn (the test below checks none is
    left at its default by construction)."""
    per_node = draw(st.sampled_from([1, 2, 4, 8]))
    nodes = draw(st.sampled_from([1, 1, 2, 4]))
    context = draw(st.one_of(st.none(), st.integers(min_value=64, max_value=1 << 20)))
    cap = context or 1 << 20
    source = draw(st.sampled_from(["catalog", "hub", "file"]))
    if source == "catalog":
        model = draw(st.sampled_from(catalog_names()))
    elif source == "hub":
        model = draw(
            st.from_regex(r"[a-z][a-z0-9-]{0,12}/[A-Za-z][A-Za-z0-9_.-]{0,20}", fullmatch=True)
        )
    else:  # an upload's display name: anything printable
        model = draw(st.from_regex(r"[A-Za-z0-9][A-Za-z0-9 _.()-]{0,30}", fullmatch=True))
    fields_: dict[str, Any] = {
        "source": source,
        "model": model,
        "digest": draw(DIGEST) if source == "file" else None,
        "gpu": draw(st.sampled_from([g.key for g in all_gpus()])),
        "gpus_per_node": per_node,
        "nodes": nodes,
        "engine": draw(st.sampled_from(ENGINES)),
        "context": context,
        "users": draw(st.integers(min_value=1, max_value=100_000)),
        "prefix_overlap": draw(st.integers(min_value=0, max_value=100)),
        "prefix_kind": draw(st.sampled_from(["system", "session"])),
        "sessions": draw(st.one_of(opt(), st.integers(min_value=1, max_value=100_000))),
        "request_rate": draw(st.one_of(opt(), st.floats(min_value=0.01, max_value=10_000.0))),
        "gpu_price": draw(st.one_of(opt(), st.floats(min_value=0.01, max_value=500.0))),
        "compare_gpus": draw(
            st.one_of(
                opt(),
                st.lists(st.sampled_from([g.key for g in all_gpus()]), min_size=1, max_size=3).map(
                    lambda keys: ",".join(dict.fromkeys(keys))
                ),
            )
        ),
        "kv_offload_gb": draw(st.one_of(opt(), st.floats(min_value=0.0, max_value=4096.0))),
        "quantization": draw(st.sampled_from(["none", "fp8"])),
        "latency": draw(st.sampled_from(LATENCY_PRIORITIES)),
        "input_tokens": draw(st.one_of(opt(), st.integers(min_value=1, max_value=cap // 2))),
        "output_tokens": draw(st.one_of(opt(), st.integers(min_value=1, max_value=cap // 2))),
        "ttft_ms": draw(st.one_of(opt(), st.floats(min_value=0.1, max_value=600_000.0))),
        "tpot_ms": draw(st.one_of(opt(), st.floats(min_value=0.1, max_value=10_000.0))),
        "tpot_bound_ms": draw(st.floats(min_value=0.1, max_value=10_000.0)),
        "kv_dtype": draw(st.sampled_from(KV_DTYPE_CHOICES)),
        "memory_fraction": draw(
            st.one_of(opt(), st.floats(min_value=0.05, max_value=1.0, allow_nan=False))
        ),
        "images": draw(st.booleans()),
        "tp": draw(st.one_of(opt(), st.sampled_from([1, 2, 4, 8]))),
        "dp": draw(st.one_of(opt(), st.sampled_from([1, 2, 4]))),
        "pp": draw(st.one_of(opt(), st.sampled_from([1, 2, 4]))),
        "ep": draw(st.one_of(opt(), st.booleans())),
        "replicas": draw(st.one_of(opt(), st.sampled_from([1, 2]))),
        "calibration": draw(st.one_of(opt(), DIGEST)),
        "bench_calibration": draw(st.one_of(opt(), DIGEST)),
        "speculative": draw(st.one_of(opt(), st.booleans())),
        "max_num_seqs": draw(st.one_of(opt(), st.integers(min_value=1, max_value=4096))),
        "disaggregated": draw(st.one_of(opt(), st.booleans())),
        "rdma_devices": draw(st.one_of(opt(), st.sampled_from(["mlx5_0", "mlx5_0,mlx5_1"]))),
    }
    assert set(fields_) == set(Scenario.model_fields), "draw every field of the table"
    for name in (None, *LAYOUT):  # a pinned layout larger than the GPUs: unpin from the last
        if name is not None:
            fields_[name] = None
        try:
            return make_scenario(**fields_)
        except InputError as err:
            if err.field not in LAYOUT:
                raise
    raise AssertionError("unreachable: an unpinned layout always fits")


# the fields held by digest (calibration files): a link and a command line cannot carry them
HELD_NONE: dict[str, Any] = {r.name: None for r in fields() if r.spec.held}


def _catalog_stand_in(s: Scenario) -> Scenario:
    """``s`` as the command line and a link give it back where the model is not a catalog
    name: the calibration and an upload's bytes dropped (a file is named by its path on the
    command line and not at all in a link)."""
    return s.model_copy(update={**HELD_NONE, "digest": None, "source": "catalog"})


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_a_scenario_survives_the_link_and_the_command_line(s: Scenario) -> None:
    """Every field goes through the link and the CLI line unchanged, except what they cannot
    carry: an uploaded config.json and a calibration are bytes on the user's machine. The
    link then says what it dropped (one warning each) and shows the default model for an
    upload; the CLI line names neither (a path is the user's to give)."""
    query = to_query(s)
    back = from_query(query)
    dropped = []
    expected = s
    for name in HELD_NONE:  # a held file: the link names its digest, and drops it
        if getattr(s, name) is not None:
            assert query[field_row(name).spec.query] == getattr(s, name)
            dropped.append("calibration")
            expected = expected.model_copy(update={name: None})
    if s.source == "file":
        assert query["src"] == "file" and field_row("digest").spec.query not in query
        dropped.append("config.json")
        model = catalog_name(s.model) or DEFAULT_MODEL
        expected = _catalog_stand_in(expected).model_copy(update={"model": model})
    assert len(english(back.notes)) == len(dropped)
    for what, warning in zip(dropped, english(back.notes), strict=True):
        assert what in warning, (what, warning)
    assert back.scenario == expected

    argv = scenario_argv(s)
    assert not {field_row(n).spec.cli for n in HELD_NONE} & set(argv)
    if s.source == "catalog":  # a hub id on the command line is fetched, not parsed
        args = build_parser().parse_args(["study", s.model, *argv])
        assert scenario_from_args(args) == s.model_copy(update=HELD_NONE)
    else:
        args = build_parser().parse_args(["study", "Qwen/Qwen3-8B", *argv])
        assert scenario_from_args(args) == _catalog_stand_in(s).model_copy(
            update={"model": "Qwen/Qwen3-8B"}
        )
        assert (cli_line(s) is None) == (s.source == "file")


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


@pytest.mark.parametrize("engine", ENGINES)
def test_the_linter_reads_each_field_from_the_flag_its_lint_source_names(engine: Engine) -> None:
    """The scenario table says which engine setting carries a field; the adapter spells it;
    the linter reads a command's flags through that mapping alone."""
    eng = adapter(engine)
    flags = field_flags(engine)
    sourced = {r.name for r in fields() if r.spec.setting is not None}
    own = {r.name for r in fields() if r.spec.setting is not None and eng.has(r.spec.setting)}
    assert set(flags) == own
    assert sourced >= {"tp", "dp", "pp", "ep", "context", "kv_dtype", "memory_fraction"}
    assert sourced >= {"max_num_seqs", "speculative", "images"}
    words = [] if eng.model_positional else [eng.flag("model")]
    words += ["Qwen/Qwen3-8B"]
    for name, value in {
        "tp": "2",
        "dp": "3",
        "pp": "2",
        "nodes": "2",
        "context": "4096",
        "memory_fraction": "0.8",
        "max_num_seqs": "7",
        "kv_dtype": "fp8",
    }.items():
        words += [flags[name], value]
    words += [flags["images"]]  # the text-only switch: no images
    words += [flags["speculative"], "{}" if eng.speculative_config_json else "EAGLE"]
    words += [flags["ep"]] if eng.expert_parallel_is_switch else [flags["ep"], "2"]
    settings_, problems = read_settings(engine, parse(engine, tuple(words)))
    assert problems == []
    assert (settings_.tp, settings_.dp, settings_.pp, settings_.nnodes) == (2, 3, 2, 2)
    assert (settings_.context, settings_.memory_fraction, settings_.max_num_seqs) == (4096, 0.8, 7)
    assert settings_.kv_dtype == "fp8" and settings_.language_model_only
    assert settings_.speculative and settings_.ep
    assert settings_.model_id == "Qwen/Qwen3-8B"


def test_the_cli_help_groups_and_the_layout_pins_come_from_the_table() -> None:
    from engine.scenario import LAYOUT_PINS, PIN_SIZES

    assert LAYOUT_PINS == ("tp", "dp", "pp", "ep", "replicas")
    assert PIN_SIZES == ("tp", "dp", "pp", "replicas")
    flags = [r for r in fields() if r.spec.cli is not None]
    assert all(r.spec.cli_group is not None for r in flags)
    study = build_parser()._subparsers._group_actions[0].choices["study"]  # type: ignore[union-attr]
    by_title = {g.title: {a.dest for a in g._group_actions} for g in study._action_groups}
    layout = next(
        dests for title, dests in by_title.items() if title and title.startswith("layout")
    )
    assert layout == set(LAYOUT_PINS)
    speed = next(dests for title, dests in by_title.items() if title and title.startswith("speed"))
    assert {"calibration", "speculative"} <= speed
