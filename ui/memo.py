"""What a page draws from a Study that takes milliseconds to make — the downloads (launch script,
manifests, reports) and the Learn page's attention designs — made once per scenario (and
language, link) in the process, for every session, instead of on every rerun.

A Study is a pure function of its scenario (``engine.study`` caches it by scenario), so the
scenario is the key; the engine's own functions make the values. The made values are one cache
of the process's memory budget (``engine.budget``) and hold no Study: a file written only when
its button is clicked (the JSON report, the manifests) is remade then from the scenario's
Study, so neither this cache nor a session's download button keeps a Study alive.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Hashable
from functools import partial
from typing import TypeVar

from engine.budget import Cache, deep_size
from engine.i18n import Lang
from engine.present import learn
from engine.present.artifacts import Artifact, launch_artifacts, report_artifacts
from engine.present.speed_chart import SpeedChart, speed_chart
from engine.scenario import Engine, Scenario
from engine.study import Study, study

V = TypeVar("V")
_made: Cache[Hashable, tuple[object, ...]] = Cache("downloads", deep_size)


def _cached(key: Hashable, make: Callable[[], tuple[V, ...]]) -> tuple[V, ...]:
    hit = _made.get(key)
    if hit is None:
        hit = _made.put(key, make())
    return hit  # type: ignore[return-value]  # the key names what was made


def _written(remake: Callable[[], tuple[Artifact, ...]], i: int) -> str:
    return remake()[i].text


def _detached(
    made: tuple[Artifact, ...], remake: Callable[[], tuple[Artifact, ...]]
) -> tuple[Artifact, ...]:
    """``made`` with each writer (a closure over the Study) replaced by one that remakes the
    file from the scenario when it is clicked."""
    return tuple(
        a
        if isinstance(a.content, str)
        else dataclasses.replace(a, content=partial(_written, remake, i))
        for i, a in enumerate(made)
    )


def _launch(scenario: Scenario, engine: Engine, lang: Lang) -> tuple[Artifact, ...]:
    d = study(scenario)
    plan = d.engines[engine].plan
    return () if plan is None else tuple(launch_artifacts(d, plan, lang))


def launch(d: Study, engine: Engine, lang: Lang) -> list[Artifact]:
    """``engine``'s launch script (its reasons in ``lang``), docker run and manifests (none
    without a plan)."""
    remake = partial(_launch, d.scenario, engine, lang)
    made = _cached(("launch", d.scenario, engine, lang), lambda: _detached(remake(), remake))
    return [dataclasses.replace(a) for a in made]  # a click's text stays with the session's copy


def _report(scenario: Scenario, lang: Lang, link: str | None) -> tuple[Artifact, ...]:
    return tuple(report_artifacts(study(scenario), lang, link))


def report(d: Study, lang: Lang, link: str | None) -> list[Artifact]:
    """The Study as JSON and as Markdown in ``lang`` with the share ``link``."""
    remake = partial(_report, d.scenario, lang, link)
    made = _cached(("report", d.scenario, lang, link), lambda: _detached(remake(), remake))
    return [dataclasses.replace(a) for a in made]


def attention_variants(d: Study, lang: Lang) -> list[learn.Variant]:
    """The model's dimensions as the six attention designs (``InputError`` if it has none)."""
    key = ("variants", d.scenario, lang)
    return list(_cached(key, lambda: tuple(learn.attention_variants(d.config, lang=lang))))


def speed(d: Study, lang: Lang, every: bool = False) -> SpeedChart:
    """The speed chart's curves, lines and axis ranges (every layout that runs when ``every``):
    a few dozen speed-model calls per layout, made once per scenario."""
    return _cached(("speed", d.scenario, lang, every), lambda: (speed_chart(d, lang, every),))[0]
