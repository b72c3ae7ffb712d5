"""The pinned engine tables (data/engines/): every spelling, its choices and the registries."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.engines import adapter
from engine.engines.cli_table import ENGINES_DIR, table_path
from engine.errors import InputError
from engine.versions import at_least, latest, version_key

# the shared/ folder beside the checkout (the same on CI), where the tables were read from
SHARED_GT = Path(__file__).resolve().parents[2] / "shared" / "engine-gt"


def test_pinned_versions_are_vllm_0_33_0_and_sglang_0_5_23() -> None:
    assert adapter("vllm").version == "0.33.0"
    assert adapter("sglang").version == "0.5.23"
    assert table_path("vllm", "flags").name == "vllm-0.33.0-flags.json"
    assert table_path("sglang", "registries").name == "sglang-0.5.23-registries.json"


@pytest.mark.parametrize(
    "name",
    [
        "vllm-0.33.0-flags.json",
        "sglang-0.5.23-flags.json",
        "vllm-0.33.0-registries.json",
        "sglang-0.5.23-registries.json",
    ],
)
def test_bundled_tables_are_verbatim_copies_of_engine_gt(name: str) -> None:
    shared = SHARED_GT / name
    if not shared.exists():
        pytest.skip("engine-gt is not mounted here")
    assert (ENGINES_DIR / name).read_bytes() == shared.read_bytes()


def test_vllm_serve_has_321_options_and_sglang_534() -> None:
    # Positionals (vLLM's model_tag) are not options; every option is reachable by its flag.
    v = adapter("vllm").flags
    s = adapter("sglang").flags
    assert len({id(i) for i in v.values()}) == 320
    assert len({id(i) for i in s.values()}) == 534
    rows = json.loads(table_path("vllm", "flags").read_text())
    assert len(rows) == 321
    for row in rows:
        if not row["positional"]:
            assert v[row["flag"]].flag == row["flag"]
            for alias in row["aliases"]:
                assert v[alias] is v[row["flag"]]


def test_aliases_map_to_the_canonical_flag() -> None:
    v = adapter("vllm").flags
    assert v["-tp"].flag == "--tensor-parallel-size"
    assert v["-q"].flag == "--quantization"
    assert v["--device-memory-utilization"].flag == "--gpu-memory-utilization"
    s = adapter("sglang").flags
    assert s["--tensor-parallel-size"].flag == "--tp-size"
    assert s["--model"].flag == "--model-path"
    assert s["--ep"].flag == "--ep-size"


def test_vllm_boolean_pairs_know_their_off_spelling() -> None:
    v = adapter("vllm").flags
    prefix = v["--disable-prefix-caching"]
    assert prefix.flag == "--enable-prefix-caching"
    assert prefix.is_negation("--disable-prefix-caching")
    assert not prefix.is_negation("--enable-prefix-caching")
    assert not prefix.takes_value
    assert v["--no-trust-remote-code"].flag == "--trust-remote-code"
    ep = v["-ep"]
    assert ep.negations == ("--disable-expert-parallel",)
    assert not ep.is_negation("-ep")


def test_every_boolean_pair_has_exactly_one_off_spelling() -> None:
    for engine in ("vllm", "sglang"):
        rows = json.loads(table_path(engine, "flags").read_text())
        table = adapter(engine).flags
        for row in rows:
            if row["action"] in ("EnableDisableAction", "BooleanOptionalAction"):
                assert len(table[row["flag"]].negations) == 1, row["flag"]


def test_vllm_0_33_0_has_no_no_enable_prefix_caching_spelling() -> None:
    assert "--no-enable-prefix-caching" not in adapter("vllm").flags
    assert adapter("vllm").lookup("--no-enable-prefix-caching") is None


def test_sglang_enable_dp_attention_is_deprecated_in_0_5_23() -> None:
    info = adapter("sglang").flags["--enable-dp-attention"]
    assert info.deprecated
    assert not info.takes_value


def test_store_true_flags_take_no_value_and_sized_flags_do() -> None:
    v = adapter("vllm").flags
    assert not v["--headless"].takes_value
    assert v["--max-model-len"].takes_value
    assert v["--tool-call-parser"].takes_value
    s = adapter("sglang").flags
    assert not s["--trust-remote-code"].takes_value
    assert s["--mem-fraction-static"].takes_value


def test_vllm_quantization_choices_come_from_the_registry_and_are_enforced() -> None:
    q = adapter("vllm").flags["--quantization"]
    assert q.choices_source == "registry"
    assert q.choices_enforced
    assert (
        q.choices is not None and set(q.choices) == adapter("vllm").registries.quantization_methods
    )
    assert {"fp8", "mxfp4", "modelopt_fp4", "compressed-tensors", "awq_marlin"} <= set(q.choices)


def test_vllm_kv_cache_dtype_is_an_open_list() -> None:
    kv = adapter("vllm").flags["--kv-cache-dtype"]
    assert kv.choices_source == "metavar-open"
    assert not kv.choices_enforced
    assert kv.choices is not None and {"fp8", "fp8_ds_mla", "nvfp4"} <= set(kv.choices)


def test_sglang_choices_are_argparse_enforced() -> None:
    kv = adapter("sglang").flags["--kv-cache-dtype"]
    assert kv.choices_source == "argparse" and kv.choices_enforced
    assert kv.choices == (
        "auto",
        "fp8_e5m2",
        "fp8_e4m3",
        "mxfp8",
        "bf16",
        "bfloat16",
        "nvfp4",
        "fp4_mx_block16",
    )
    assert adapter("sglang").registries.kv_cache_dtypes == frozenset(kv.choices)


def test_optional_literal_none_is_not_a_choice() -> None:
    info = adapter("vllm").flags["--dcp-comm-backend"]
    assert info.choices == ("a2a", "ag_rs")


def test_int_choices_are_strings_as_typed_on_the_command_line() -> None:
    info = adapter("vllm").flags["--max-lora-rank"]
    assert info.choices is not None and "64" in info.choices


def test_parser_registries_have_58_42_44_36_names() -> None:
    assert len(adapter("vllm").registries.tool_call_parsers) == 58
    assert len(adapter("vllm").registries.reasoning_parsers) == 42
    assert len(adapter("sglang").registries.tool_call_parsers) == 44
    assert len(adapter("sglang").registries.reasoning_parsers) == 36


def test_deepseek_v31_tool_parser_is_spelled_per_engine() -> None:
    assert "deepseek_v31" in adapter("vllm").registries.tool_call_parsers
    assert "deepseekv31" in adapter("sglang").registries.tool_call_parsers
    assert "deepseekv31" not in adapter("vllm").registries.tool_call_parsers
    assert "deepseek_v31" not in adapter("sglang").registries.tool_call_parsers


def test_sglang_auto_is_a_cli_choice_but_not_a_parser() -> None:
    choices = adapter("sglang").flags["--tool-call-parser"].choices or ()
    assert "auto" in choices
    assert "auto" not in adapter("sglang").registries.tool_call_parsers


def test_attention_backends() -> None:
    assert {"FLASH_ATTN", "FLASHMLA_SPARSE", "TRITON_MLA"} <= adapter(
        "vllm"
    ).registries.attention_backends
    assert {"fa3", "flashinfer", "trtllm_mla", "dsa"} <= adapter(
        "sglang"
    ).registries.attention_backends


def test_bundled_tables_predate_the_architecture_list() -> None:
    assert adapter("vllm").registries.model_architectures is None
    assert adapter("sglang").registries.model_architectures is None


@pytest.mark.parametrize(
    ("engine", "token", "flag"),
    [
        ("vllm", "--tensor_parallel_size=8", "--tensor-parallel-size"),
        ("vllm", "--speculative-config.method", "--speculative-config"),
        ("vllm", "-cc.pass_config.fuse_rope_kvcache=True", "--compilation-config"),
        ("vllm", "--kv-cache-dtype=fp8", "--kv-cache-dtype"),
        ("sglang", "--tp", "--tp-size"),
        ("sglang", "--dp", "--dp-size"),
        ("sglang", "--tool-call-parser=qwen", "--tool-call-parser"),
    ],
)
def test_lookup_flag_accepts_how_engines_parse(engine: str, token: str, flag: str) -> None:
    info = adapter(engine).lookup(token)  # type: ignore[arg-type]
    assert info is not None and info.flag == flag


def test_lookup_flag_rejects_unknown_and_ambiguous_prefixes() -> None:
    assert adapter("vllm").lookup("--tp") is None  # vLLM abbreviations are not assumed
    assert adapter("sglang").lookup("--pp") is None  # --pp-size, --pp-max-micro-batch-size, ...
    assert adapter("vllm").lookup("--made-up-flag") is None


def test_unknown_engine_is_an_input_error() -> None:
    with pytest.raises(InputError) as err:
        adapter("trtllm")
    assert err.value.field == "engine"


def test_versions_sort_as_releases() -> None:
    assert version_key("0.5.3.post1") > version_key("0.5.3")
    assert version_key("0.5.0rc2") < version_key("0.5.0")
    assert version_key("0.10.0") > version_key("0.9.2")
    assert version_key("0.11") == version_key("0.11.0")
    assert at_least("0.33.0", "0.18.0")
    assert latest(["0.6.6", "0.18.0", "0.11.0"]) == "0.18.0"
    with pytest.raises(InputError):
        version_key("latest")
