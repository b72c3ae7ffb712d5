"""One way for tests to get a Study: the scenario fields by keyword, the model by catalog name or
by config dict (held by digest, as an upload would be)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from engine.decision import Decision
from engine.model import store
from engine.model.config import normalize
from engine.model.loader import LoadedModel
from engine.scenario import Scenario, make_scenario
from engine.study import Study, study
from engine.text.words import say


def scenario(model: str | Mapping[str, Any], **fields: Any) -> Scenario:
    if isinstance(model, str):
        return make_scenario(model=model, **fields)
    loaded = LoadedModel(normalize(model), "json", "test config")
    return make_scenario(source="file", model="test config", digest=store.put(loaded), **fields)


def run(model: str | Mapping[str, Any], **fields: Any) -> Study:
    return study(scenario(model, **fields))


def english(notes: Iterable[Decision]) -> list[str]:
    """Decisions in English as plain text, as a terminal shows them."""
    return [say(n, markdown=False) for n in notes]
