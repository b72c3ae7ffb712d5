"""The linter on the vLLM recipes' own guide commands (tests/fixtures/vllm_recipe_guides.yaml:
every single-node `vllm serve` command of a recipe guide whose checkpoint, or its family, has a
bundled config), each on the GPU its heading names: no error and no warning, except where the
finding is a real problem, listed below with its source."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest
import yaml

from engine.lint import LintReport, lint_command
from engine.model.loader import load_catalog
from tests.test_official_commands_fixture import OfficialCommand

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "vllm_recipe_guides.yaml"

# id -> (the codes the entry must show, why it is not clean)
EXCLUDED: dict[str, tuple[set[str], str]] = {
    "recipe-guide-glm-5-2-2-h20": (
        {"does-not-fit"},
        "the recipe's H20 is the 141 GB H20-3e ('8xH200 or 8xH20 (141 GB each)', same guide); "
        "the catalog's H20 is the 96 GB card, where GLM-5.2 FP8 at TP 8 holds 89.9 GiB of "
        "weights per GPU against 87.9 GiB usable",
    ),
}


@cache
def guides() -> tuple[OfficialCommand, ...]:
    rows = yaml.safe_load(FIXTURE.read_text(encoding="utf-8"))
    return tuple(OfficialCommand.model_validate(r) for r in rows)


@cache
def _lint(entry_id: str) -> LintReport:
    entry = next(c for c in guides() if c.id == entry_id)
    hw = entry.hardware
    model = load_catalog(entry.bundled_model) if entry.bundled_model else None
    return lint_command(entry.command, model, hw.gpu, hw.gpus_per_node * hw.nodes)


def _problems(report: LintReport) -> list[tuple[str, str, str]]:
    return [(f.severity, f.code, f.message) for f in report.findings if f.severity != "info"]


CLEAN = [c.id for c in guides() if c.id not in EXCLUDED]


def test_the_fixture_holds_the_recipes_single_node_guide_commands() -> None:
    assert len(guides()) >= 20
    assert set(EXCLUDED) <= {c.id for c in guides()}
    for c in guides():
        assert c.engine == "vllm" and "vllm serve" in c.command, c.id
        assert c.hardware.nodes == 1, c.id
        assert c.source.commit and c.source.commit in c.source.url, c.id
        assert c.source.hardware_quote.startswith("#"), c.id  # the guide's heading


@pytest.mark.parametrize("entry_id", CLEAN)
def test_a_recipe_guide_command_lints_with_no_error_and_no_warning(entry_id: str) -> None:
    assert _problems(_lint(entry_id)) == []


@pytest.mark.parametrize("entry_id", sorted(EXCLUDED))
def test_an_excluded_guide_command_shows_its_real_problem(entry_id: str) -> None:
    codes, _why = EXCLUDED[entry_id]
    assert codes <= {f.code for f in _lint(entry_id).findings if f.severity != "info"}


def test_the_glm52_fp8_kv_cache_on_hopper_is_explained_as_a_capacity_choice() -> None:
    report = _lint("recipe-guide-glm-5-2-1-h200")
    assert "kv-dtype-capacity" in {f.code for f in report.findings}
    assert "--kv-cache-dtype fp8" in report.corrected
