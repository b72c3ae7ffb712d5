"""Every config found in the wild (fixtures/configs_wild, see its SOURCES.md) goes through the
whole Study for both engines (the slices `study --json` prints): a config is either planned or
refused with an InputError that names a field, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.errors import InputError
from engine.present.study_report import study_json
from tests.study_util import run

WILD = Path(__file__).parent / "fixtures" / "configs_wild"
FIXTURES = sorted(p.name for p in WILD.glob("*.json"))


def test_the_sweep_has_fixtures() -> None:
    assert len(FIXTURES) >= 10


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
@pytest.mark.parametrize("name", FIXTURES)
def test_a_wild_config_is_planned_or_refused_by_field(name: str, engine: str) -> None:
    raw = json.loads((WILD / name).read_text())
    try:
        st = run(raw, engine=engine)
    except InputError as err:
        assert err.field, f"{name}: an InputError must name its field"
        return
    d = st.diagnosis
    assert d.kv.kv_bytes_per_token >= 0 and d.kv.state_bytes_per_request >= 0
    assert d.kv.kv_bytes_per_token + d.kv.state_bytes_per_request > 0
    assert d.weights.params_total > 0
    # what `python -m engine study --json` prints: gates, software, plans and all
    assert json.dumps(study_json(st))
