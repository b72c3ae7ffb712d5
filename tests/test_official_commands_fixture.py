"""Shape of tests/fixtures/official_commands.yaml: launch commands copied from the engines' docs."""

from __future__ import annotations

import re
from collections import Counter
from functools import cache
from pathlib import Path
from typing import Literal

import pytest
import yaml
from pydantic import BaseModel, ConfigDict, Field

from engine.hardware.gpus import all_gpus
from engine.model.loader import catalog_names

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "official_commands.yaml"
KEBAB = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
SHA = re.compile(r"^[0-9a-f]{40}$")
# VAR=value [VAR=value ...] launcher, with backslash continuations between the assignments.
ENV_PREFIX = re.compile(
    r"(?m)^(?:[A-Z][A-Z0-9_]*=\S*\s+(?:\\\n)?)+(?:vllm serve|python3? -m (?:vllm|sglang))"
)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Hardware(_Strict):
    gpu: str
    gpus_per_node: int = Field(ge=1)
    nodes: int = Field(ge=1)


class Source(_Strict):
    url: str = Field(min_length=1)
    repo: str | None = None
    path: str | None = None
    commit: str | None = None
    hardware_quote: str = Field(min_length=1)


class OfficialCommand(_Strict):
    id: str
    engine: Literal["vllm", "sglang"]
    command: str = Field(min_length=1)
    model: str = Field(min_length=1)
    bundled_model: str | None
    hardware: Hardware
    source: Source
    notes: str | None = None


@cache
def raw_entries() -> list[dict[str, object]]:
    data = yaml.safe_load(FIXTURE.read_text(encoding="utf-8"))
    assert isinstance(data, list)
    return data


@cache
def commands() -> tuple[OfficialCommand, ...]:
    return tuple(OfficialCommand.model_validate(row) for row in raw_entries())


def test_the_fixture_is_a_yaml_list_of_well_formed_commands() -> None:
    assert len(commands()) >= 35


def test_every_id_is_unique_and_kebab_case() -> None:
    ids = [c.id for c in commands()]
    assert [i for i, n in Counter(ids).items() if n > 1] == []
    assert [i for i in ids if not KEBAB.match(i)] == []


def test_every_gpu_is_a_key_of_the_gpu_catalog() -> None:
    keys = {g.key for g in all_gpus()}
    assert [(c.id, c.hardware.gpu) for c in commands() if c.hardware.gpu not in keys] == []


def test_every_bundled_model_is_a_catalog_config_or_null() -> None:
    names = set(catalog_names())
    wrong = [(c.id, c.bundled_model) for c in commands() if c.bundled_model not in names | {None}]
    assert wrong == []


def test_every_source_names_a_url_and_a_commit_when_it_names_a_repo() -> None:
    for c in commands():
        assert c.source.url.startswith("https://"), c.id
        if c.source.repo is not None:
            assert c.source.path, c.id
            assert c.source.commit is not None and SHA.match(c.source.commit), c.id
            assert c.source.commit in c.source.url, c.id


def test_at_least_25_commands_serve_a_bundled_config_so_they_lint_offline() -> None:
    assert sum(c.bundled_model is not None for c in commands()) >= 25


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_each_engine_has_at_least_12_commands(engine: str) -> None:
    assert sum(c.engine == engine for c in commands()) >= 12


@pytest.mark.parametrize(
    ("engine", "launcher"),
    [
        ("vllm", re.compile(r"(?m)^\s*vllm serve ")),
        ("vllm", re.compile(r"python3? -m vllm\.entrypoints\.openai\.api_server")),
        ("vllm", re.compile(r"docker run ")),
        ("vllm", re.compile(r"(?m)^args: \[")),
        ("vllm", ENV_PREFIX),
        ("sglang", re.compile(r"(?m)^sglang serve")),
        ("sglang", re.compile(r"python -m sglang\.launch_server")),
        ("sglang", re.compile(r"python3 -m sglang\.launch_server")),
        ("sglang", re.compile(r"docker run ")),
        ("sglang", ENV_PREFIX),
    ],
    ids=lambda v: v if isinstance(v, str) else v.pattern,
)
def test_every_documented_launcher_form_appears(engine: str, launcher: re.Pattern[str]) -> None:
    assert any(c.engine == engine and launcher.search(c.command) for c in commands())


def test_every_command_invokes_its_own_engine() -> None:
    marks = {"vllm": ("vllm serve", "vllm.entrypoints", "vllm/vllm-openai"), "sglang": ("sglang",)}
    wrong = [c.id for c in commands() if not any(m in c.command for m in marks[c.engine])]
    assert wrong == []


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_each_engine_has_a_multi_node_command(engine: str) -> None:
    assert any(c.engine == engine and c.hardware.nodes > 1 for c in commands())


def test_nvidia_and_amd_gpus_are_both_covered() -> None:
    vendors = {g.key: g.vendor for g in all_gpus()}
    assert {vendors[c.hardware.gpu] for c in commands()} >= {"nvidia", "amd"}
