"""data/recipes.yaml and data/parser_aliases.yaml: every fact sourced, every name known to the
pinned engine tables, every rule keyed by config.json and live for some bundled config."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from engine.engines import ENGINES, Engine, adapter
from engine.hardware.gpus import all_gpus
from engine.model.loader import catalog_names
from engine.software.software_report import known_architectures

DATA = Path(__file__).resolve().parent.parent / "data"
SECTIONS = {
    "sources",
    "speculative_defaults",
    "speculative",
    "env",
    "tool_chat_templates",
    "base_flags",
    "checkpoints",
    "parser_disagreements",
}
MATCH_KEYS = {"architectures", "model_types", "fields", "present", "at_least"}
WEIGHT_DTYPES = {"bf16", "fp16", "fp32", "fp8", "nvfp4", "mxfp4", "int4", "int8", "mixed"}
CHECKPOINT_FORMATS = {
    "bf16",
    "fp8",
    "fp8_kv",
    "nvfp4",
    "mxfp4",
    "w_mxfp4_a_fp8",
    "w4afp8",
    "int8_channel",
    "int8_block",
    "awq",
    "gptq_int4",
}
SGLANG_SPEC_ALGORITHMS = {"EAGLE", "EAGLE3", "NEXTN"}
_MISSING = object()


@cache
def recipes() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((DATA / "recipes.yaml").read_text(encoding="utf-8"))
    return data


@cache
def aliases() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(
        (DATA / "parser_aliases.yaml").read_text(encoding="utf-8")
    )
    return data


@cache
def bundled_configs() -> tuple[Mapping[str, Any], ...]:
    paths = sorted((DATA / "models").glob("*.json"))
    return tuple(json.loads(p.read_text(encoding="utf-8")) for p in paths)


def _get(config: Mapping[str, Any], path: str) -> Any:
    """A dotted config field; a top-level key missing at the root is read from text_config."""
    head, *rest = path.split(".")
    node: Any = config.get(head, _MISSING)
    if node is _MISSING and isinstance(config.get("text_config"), Mapping):
        node = config["text_config"].get(head, _MISSING)
    for part in rest:
        node = node.get(part, _MISSING) if isinstance(node, Mapping) else _MISSING
    return node


def _matches(match: Mapping[str, Any], config: Mapping[str, Any]) -> bool:
    """Same rule as engine.software.software_report: every stated condition must hold."""
    if (config.get("architectures") or [None])[0] not in match["architectures"]:
        return False
    types = {config.get("model_type"), _get(config, "text_config.model_type")}
    if "model_types" in match and not types & set(match["model_types"]):
        return False
    if any(_get(config, p) != v for p, v in match.get("fields", {}).items()):
        return False
    if any(_get(config, p) in (_MISSING, None) for p in match.get("present", [])):
        return False
    for path, floor in match.get("at_least", {}).items():
        got = _get(config, path)
        if isinstance(got, bool) or not isinstance(got, int | float) or got < floor:
            return False
    return True


def rules() -> Iterator[tuple[str, dict[str, Any]]]:
    """Every entry of the config-keyed sections, named for test output."""
    for section in ("speculative", "env", "base_flags"):
        for entry in recipes()[section]:
            yield f"{section}:{entry['name']}", entry


RULE_NAMES = [name for name, _ in rules()]


def engine_of(name: str) -> Engine:
    return next(e for e in ENGINES if e == name)


def flag_uses() -> Iterator[tuple[Engine, str, dict[str, Any]]]:
    """(engine, owner, flag entry) for every flag the recipes data asks for."""
    for entry in recipes()["base_flags"]:
        for flag in entry["flags"]:
            yield engine_of(entry["engine"]), entry["name"], flag
    for entry in recipes()["speculative"]:
        for engine in ENGINES:
            for flag in (entry[engine] or {}).get("flags", []):
                yield engine, entry["name"], flag


def test_recipes_yaml_has_exactly_the_planner_sections() -> None:
    assert set(recipes()) == SECTIONS


@pytest.mark.parametrize("name", RULE_NAMES)
def test_every_rule_is_keyed_by_config_fields_of_a_known_architecture(name: str) -> None:
    match = dict(rules())[name]["match"]
    assert set(match) <= MATCH_KEYS, name
    assert match["architectures"], name
    assert set(match["architectures"]) <= known_architectures(), name


@pytest.mark.parametrize("name", RULE_NAMES)
def test_every_rule_on_a_bundled_architecture_applies_to_a_bundled_config(name: str) -> None:
    entry = dict(rules())[name]
    bundled_archs = {(c.get("architectures") or [None])[0] for c in bundled_configs()}
    if not bundled_archs & set(entry["match"]["architectures"]):
        pytest.skip("no bundled config of this architecture")
    assert any(_matches(entry["match"], c) for c in bundled_configs()), name


def test_every_fact_carries_a_source() -> None:
    data = recipes()
    for engine, block in data["speculative_defaults"].items():
        assert block["source"], engine
    for entry in data["speculative"]:
        for engine in ENGINES:
            if entry[engine] is not None:
                assert entry[engine]["source"], (entry["name"], engine)
    for section in ("env", "base_flags", "checkpoints", "parser_disagreements"):
        for entry in data[section]:
            assert entry["source"], (section, entry)


def test_every_flag_exists_in_the_pinned_engine_table_with_a_value_it_accepts() -> None:
    for engine, owner, use in flag_uses():
        info = adapter(engine).lookup(use["flag"])
        assert info is not None, (engine, owner, use["flag"])
        assert not info.deprecated, (engine, owner, use["flag"])
        value = use.get("value")
        assert (value is not None) == info.takes_value, (engine, owner, use["flag"])
        if value is not None and info.choices and info.choices_enforced:
            assert value in info.choices, (engine, owner, use["flag"], value)
        assert use["reason"], (engine, owner, use["flag"])


def test_every_generation_and_weight_dtype_is_a_known_one() -> None:
    generations = {g.generation for g in all_gpus()}
    for name, entry in rules():
        assert set(entry.get("generations", [])) <= generations, name
        assert entry.get("weight_dtype", "bf16") in WEIGHT_DTYPES, name


def test_env_entries_name_their_engine_and_every_variable_with_a_reason() -> None:
    for entry in recipes()["env"]:
        assert entry["engine"] in ENGINES, entry["name"]
        for var in entry["vars"]:
            assert var["name"] == var["name"].upper(), entry["name"]
            assert isinstance(var["value"], str), (entry["name"], var["name"])
            assert var["reason"], (entry["name"], var["name"])


def test_speculative_settings_are_positive_and_sglang_algorithms_are_known() -> None:
    for entry in recipes()["speculative"]:
        if entry["vllm"] is not None:
            assert entry["vllm"]["method"], entry["name"]
            assert entry["vllm"]["num_speculative_tokens"] >= 1, entry["name"]
        sgl = entry["sglang"]
        if sgl is not None:
            assert sgl["algorithm"] in SGLANG_SPEC_ALGORITHMS, entry["name"]
            assert min(sgl["num_steps"], sgl["eagle_topk"], sgl["num_draft_tokens"]) >= 1


def test_sglang_eagle_defaults_are_three_steps_topk_one_four_draft_tokens() -> None:
    d = recipes()["speculative_defaults"]["sglang"]
    assert (d["num_steps"], d["eagle_topk"], d["num_draft_tokens"]) == (3, 1, 4)


def test_checkpoint_siblings_name_a_repo_per_format_and_a_bundled_base() -> None:
    names = set(catalog_names())
    bases = [c["of"] for c in recipes()["checkpoints"]]
    assert len(bases) == len(set(bases))
    for entry in recipes()["checkpoints"]:
        assert entry["bundled_model"] in names, entry["of"]
        formats = set(entry) - {"of", "bundled_model", "source", "note"}
        assert formats, entry["of"]
        assert formats <= CHECKPOINT_FORMATS, entry["of"]
        for fmt in formats:
            assert "/" in entry[fmt]["repo"], (entry["of"], fmt)


def test_parser_disagreements_record_ours_as_registered_and_theirs_as_checked() -> None:
    registries = {
        ("vllm", "tool_call"): adapter("vllm").registries.tool_call_parsers,
        ("vllm", "reasoning"): adapter("vllm").registries.reasoning_parsers,
        ("sglang", "tool_call"): adapter("sglang").registries.tool_call_parsers,
        ("sglang", "reasoning"): adapter("sglang").registries.reasoning_parsers,
    }
    for row in recipes()["parser_disagreements"]:
        names = registries[(engine_of(row["engine"]), row["kind"])]
        assert row["architecture"] in known_architectures(), row
        assert row["ours"] in names, row
        assert row["ours"] != row["theirs"], row
        if row["theirs"] is None:
            assert row["theirs_registered"] is None, row
        else:
            assert row["theirs_registered"] == (row["theirs"] in names), row


@pytest.mark.parametrize("engine", ENGINES)
def test_parser_alias_groups_only_name_parsers_of_the_pinned_registries(engine: Engine) -> None:
    block = aliases()[engine]
    known = {
        "tool_call": adapter(engine).registries.tool_call_parsers,
        "reasoning": adapter(engine).registries.reasoning_parsers,
    }
    for kind, names in known.items():
        seen: set[str] = set()
        for group in block[kind]:
            assert len(group["names"]) >= 2, group
            assert set(group["names"]) <= names, (engine, kind, group["names"])
            assert not seen & set(group["names"]), (engine, kind, group["names"])
            seen |= set(group["names"])
            assert group["class"], group
            assert isinstance(group["same_behaviour"], bool), group
        assert block["source"][kind].startswith("https://"), (engine, kind)


def test_sglang_qwen_and_qwen25_are_one_detector() -> None:
    groups = aliases()["sglang"]["tool_call"]
    assert {"names": ["qwen", "qwen25"], "class": "Qwen25Detector"}.items() <= next(
        g for g in groups if "qwen" in g["names"]
    ).items()
