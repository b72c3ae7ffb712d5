"""data/measure.yaml: the measure step's facts load once, validated, each with its source."""

from __future__ import annotations

import re
from typing import Any

import pydantic
import pytest
import yaml

from engine.measure.measure_data import MEASURE_YAML, LogLine, MeasureFacts, measure_facts


def _raw() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(MEASURE_YAML.read_text(encoding="utf-8"))
    return data


def test_first_launch_is_the_playbooks_8192_tokens_at_memory_fraction_0_7() -> None:
    launch = measure_facts().first_launch
    assert (launch.max_model_len, launch.memory_fraction) == (8192, 0.7)
    assert "--max-model-len 8192 --mem-fraction-static 0.7" in launch.source


def test_agreement_band_is_3_percent() -> None:
    assert measure_facts().agreement.tolerance == 0.03


def test_every_log_line_names_the_engine_file_that_prints_it() -> None:
    for line in measure_facts().log_lines:
        assert re.search(r"\w+/\w+\.py", line.printed_by), line.key


def test_the_essential_lines_are_the_pool_lines_of_both_engines() -> None:
    essential = {line.key for line in measure_facts().log_lines if line.essential}
    assert essential == {"vllm_tokens", "vllm_available", "sglang_kv", "sglang_max_total"}


def test_a_pattern_whose_groups_are_not_its_fields_is_refused() -> None:
    line = _raw()["log_lines"][0] | {"fields": {"something_else": "count"}}
    with pytest.raises(pydantic.ValidationError):
        LogLine.model_validate(line)


def test_an_unknown_key_is_refused() -> None:
    with pytest.raises(pydantic.ValidationError):
        MeasureFacts.model_validate(_raw() | {"agree_tolerance": 0.05})


def test_a_grep_line_with_the_other_engines_metric_is_refused() -> None:
    raw = _raw()
    raw["metrics"]["vllm"]["grep"] = [["sglang:token_usage"]]
    with pytest.raises(pydantic.ValidationError):
        MeasureFacts.model_validate(raw)
