"""Where a new scenario starts: data/scenario.yaml, each choice with the reason it was made."""

from __future__ import annotations

import yaml

from engine.hardware.gpus import lookup_gpu
from engine.model.loader import catalog_names
from engine.rules import DATA_DIR
from engine.scenario import Scenario, make_scenario

DATA = yaml.safe_load((DATA_DIR / "scenario.yaml").read_text())


def test_a_scenario_without_fields_is_the_one_in_data() -> None:
    s = make_scenario()
    assert (s.model, s.gpu, s.gpus_per_node, s.context, s.users) == (
        DATA["model"],
        DATA["gpu"],
        DATA["gpus_per_node"],
        DATA["context"],
        DATA["users"],
    )
    assert Scenario() == s


def test_every_default_says_why_and_names_a_bundled_model_and_a_catalog_gpu() -> None:
    for why in ("model_why", "hardware_why", "context_why", "users_why"):
        assert len(DATA[why]) > 40
    assert DATA["model"] in catalog_names()
    assert lookup_gpu(DATA["gpu"]).key == DATA["gpu"]
