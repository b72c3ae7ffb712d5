"""What a page draws from a Study that takes milliseconds to make — the downloads (launch script,
manifests, reports) and the Learn page's attention designs — made once per scenario (and
language, link) in the process, for every session, instead of on every rerun.

A Study is a pure function of its scenario (``engine.study`` caches it by scenario), so the
scenario is the key; the engine's own functions make the values.
"""

from __future__ import annotations

from functools import lru_cache

from engine.i18n import Lang
from engine.present import learn
from engine.present.artifacts import Artifact, launch_artifacts, report_artifacts
from engine.present.speed_chart import SpeedChart, speed_chart
from engine.scenario import Engine, Scenario
from engine.study import Study, study

SIZE = 256


@lru_cache(maxsize=SIZE)
def _launch(scenario: Scenario, engine: Engine, lang: Lang) -> tuple[Artifact, ...]:
    d = study(scenario)
    plan = d.engines[engine].plan
    return () if plan is None else tuple(launch_artifacts(d, plan, lang))


def launch(d: Study, engine: Engine, lang: Lang) -> list[Artifact]:
    """``engine``'s launch script (its reasons in ``lang``), docker run and manifests (none
    without a plan)."""
    return list(_launch(d.scenario, engine, lang))


@lru_cache(maxsize=SIZE)
def _report(scenario: Scenario, lang: Lang, link: str | None) -> tuple[Artifact, ...]:
    return tuple(report_artifacts(study(scenario), lang, link))


def report(d: Study, lang: Lang, link: str | None) -> list[Artifact]:
    """The Study as JSON and as Markdown in ``lang`` with the share ``link``."""
    return list(_report(d.scenario, lang, link))


@lru_cache(maxsize=SIZE)
def _variants(scenario: Scenario, lang: Lang) -> tuple[learn.Variant, ...]:
    return tuple(learn.attention_variants(study(scenario).config, lang=lang))


def attention_variants(d: Study, lang: Lang) -> list[learn.Variant]:
    """The model's dimensions as the six attention designs (``InputError`` if it has none)."""
    return list(_variants(d.scenario, lang))


@lru_cache(maxsize=SIZE)
def _speed_chart(scenario: Scenario, lang: Lang, every: bool) -> SpeedChart:
    return speed_chart(study(scenario), lang, every)


def speed(d: Study, lang: Lang, every: bool = False) -> SpeedChart:
    """The speed chart's curves, lines and axis ranges (every layout that runs when ``every``):
    a few dozen speed-model calls per layout, made once per scenario."""
    return _speed_chart(d.scenario, lang, every)
