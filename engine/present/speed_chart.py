"""The speed chart of every layout, computed: each layout's output tokens/s per GPU against
tokens/s per user as its load grows (the Pareto plane aiconfigurator reads), the interactivity
bound and the TPOT target as lines in the axis' own units, the axes' log ranges kept within the
data, and what load the speed figures are at and why.

Always drawn: the pick, the layouts its reasons compare it with, and the official recipes' and
the serving playbook's layouts for this model on this hardware (``data/reference_layouts.yaml``);
every other layout that runs is behind the page's toggle (``every=True``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from engine.capacity.replica import speed_at
from engine.i18n import DEFAULT_LANG, Lang, t
from engine.launch.candidate import Candidate
from engine.launch.reference_layouts import marks, references_for
from engine.study import Study
from engine.text.words import say

MAX_POINTS = 16  # loads per curve: 1, 2, 4, ... and the most the KV holds
MAX_CURVES = 40  # layouts drawn at most (the rest are said to be left out)
PAD = 1.25  # the log axes reach this factor past the data on each side
REACH = 10.0  # a line is drawn only within this factor of the data


@dataclass(frozen=True)
class SpeedCurve:
    """One layout's speed over its load, from one request to every request its KV holds."""

    name: str
    pick: bool
    always: bool  # drawn without the toggle
    marks: tuple[str, ...]  # what it is besides a candidate: chosen, official recipe, playbook
    per_user: tuple[float, ...]
    per_gpu: tuple[float, ...]
    concurrency: tuple[int, ...]
    tpot_ms: tuple[float, ...]
    ttft_ms: tuple[float, ...]


@dataclass(frozen=True)
class SpeedLine:
    """A per-user speed the scenario asks for (its TPOT target) or the balanced bound, in the
    x axis' own unit: output tokens/s per user = 1000 / TPOT ms."""

    label: str
    x: float


@dataclass(frozen=True)
class SpeedChart:
    curves: tuple[SpeedCurve, ...]
    lines: tuple[SpeedLine, ...]
    x_range: tuple[float, float]  # log10 of output tokens/s per user
    y_range: tuple[float, float]  # log10 of output tokens/s per GPU
    hidden: int  # layouts behind the toggle
    left_out: int  # layouts past MAX_CURVES


def load_grid(most: int) -> tuple[int, ...]:
    """1, 2, 4, … up to ``most`` and ``most`` itself (at most 16 points)."""
    out: list[int] = []
    n = 1
    while n < most and len(out) < MAX_POINTS - 1:
        out.append(n)
        n *= 2
    return (*out, max(most, 1))


def _curve(st: Study, c: Candidate, name: str, always: bool, words: tuple[str, ...]) -> SpeedCurve:
    """``n`` requests spread over ``r`` copies as evenly as they go: n mod r copies run
    ceil(n / r), the others floor(n / r), and a copy with none is idle. Tokens/s per GPU is every
    copy's output over all the layout's GPUs; tokens/s per user, TPOT and TTFT are the means over
    the n requests."""
    inp = st.search_inputs
    assert inp is not None
    s, lay = st.scenario, c.layout
    users, gpus, tpot, ttft = [], [], [], []
    loads = load_grid(c.running)
    for n in loads:
        q, busier = divmod(n, lay.replicas)
        output = per_user = tpots = ttfts = 0.0
        for load, copies in ((q + 1, busier), (q, lay.replicas - busier)):
            if load < 1 or copies < 1:
                continue
            sp = speed_at(inp, s, c, load)  # one copy, priced as the search prices it
            if sp is None:
                continue
            output += copies * sp.output_tokens_per_s
            per_user += copies * load * sp.output_tokens_per_s_per_user
            tpots += copies * load * sp.tpot_ms
            ttfts += copies * load * sp.ttft_ms
        users.append(per_user / n)
        gpus.append(output / (lay.replicas * lay.split.gpus))
        tpot.append(tpots / n)
        ttft.append(ttfts / n)
    return SpeedCurve(
        name, c is st.fit, always, words, tuple(users), tuple(gpus), loads, tuple(tpot),
        tuple(ttft),
    )  # fmt: skip


def _always(st: Study) -> set[int]:
    """The candidates drawn without the toggle: the pick and those its reasons name."""
    named = {d["rival"] for r in st.search.reasons for d in r.walk() if "rival" in d.values}
    named |= {d["best"] for r in st.search.reasons for d in r.walk() if "best" in d.values}
    return {
        i for i, c in enumerate(st.search.candidates) if c is st.fit or c.layout.name() in named
    }


def lines(st: Study, lang: Lang = DEFAULT_LANG) -> tuple[SpeedLine, ...]:
    """The TPOT target, and the interactivity bound where balanced is the objective."""
    s = st.scenario
    at: dict[float, list[str]] = {}  # one line per speed, its labels joined
    if s.tpot_ms:
        at.setdefault(s.tpot_ms, []).append(t("chart.speed.target", lang, ms=f"{s.tpot_ms:g}"))
    if s.latency == "balanced":
        bound = s.tpot_bound_ms
        at.setdefault(bound, []).append(t("chart.speed.bound", lang, ms=f"{bound:g}"))
    return tuple(SpeedLine(" · ".join(labels), 1000 / ms) for ms, labels in at.items())


def _log_range(values: list[float]) -> tuple[float, float]:
    low, high = min(values), max(values)
    return math.log10(low / PAD), math.log10(high * PAD)


def speed_chart(st: Study, lang: Lang = DEFAULT_LANG, every: bool = False) -> SpeedChart:
    """The chart's curves (every layout that runs when ``every``), its lines and axis ranges:
    the data's own range padded, and a line only where it lies within ``REACH`` of the data."""
    if st.search_inputs is None:
        return SpeedChart((), (), (0.0, 1.0), (0.0, 1.0), 0, 0)
    cands = st.search.candidates
    s = st.scenario
    refs = references_for(st.model.name, st.gpu.key, s.gpus_per_node, s.nodes)
    marked = marks(cands, refs)
    always = _always(st) | set(marked)
    runs = [i for i, c in enumerate(cands) if c.speed is not None and c.running > 0]
    shown = [i for i in runs if every or i in always]
    left_out = max(0, len(shown) - MAX_CURVES)
    shown = sorted(shown, key=lambda i: (i not in always, i))[:MAX_CURVES]
    curves = []
    for i in sorted(shown):
        c = cands[i]
        words = tuple(
            t(f"chart.speed.mark.{kind}", lang)
            for kind in (("pick",) if c is st.fit else ()) + tuple(sorted(marked.get(i, ())))
        )
        curves.append(_curve(st, c, say(c.layout.name(), lang), i in always, words))
    hidden = len([i for i in runs if i not in always]) if not every else 0
    return chart_of(curves, lines(st, lang), hidden, left_out)


def chart_of(
    curves: Sequence[SpeedCurve],
    asked: Sequence[SpeedLine] = (),
    hidden: int = 0,
    left_out: int = 0,
) -> SpeedChart:
    """A chart of ``curves``: the axes the data's own range padded, and a line of ``asked``
    only where it lies within ``REACH`` of the data."""
    xs = [x for c in curves for x in c.per_user if x > 0]
    ys = [y for c in curves for y in c.per_gpu if y > 0]
    if not xs or not ys:
        return SpeedChart(tuple(curves), (), (0.0, 1.0), (0.0, 1.0), hidden, left_out)
    near = [ln for ln in asked if min(xs) / REACH <= ln.x <= max(xs) * REACH]
    return SpeedChart(
        tuple(curves),
        tuple(near),
        _log_range(xs + [ln.x for ln in near]),
        _log_range(ys),
        hidden,
        left_out,
    )


def load_caption(st: Study, lang: Lang = DEFAULT_LANG) -> str:
    """At which load the speed figures are and why: the users asked, or the requests of the
    workload's length the KV holds at once when that is fewer; and the load the objective ranks
    the layouts at (throughput first: every request the KV holds; balanced: the most within the
    interactivity bound)."""
    s, pick = st.scenario, st.fit
    isl, osl = s.workload(st.context)
    if s.users <= pick.running:
        said = t("speed.load.asked", lang, users=f"{s.users:,}")
    else:
        said = t(
            "speed.load.fits",
            lang,
            running=f"{pick.running:,}",
            users=f"{s.users:,}",
            isl=f"{isl:,}",
            osl=f"{osl:,}",
            fit=f"{pick.users:,}",
            context=f"{pick.context:,}",
        )
    if pick.peak is None:
        return said
    key = "speed.load.balanced" if s.latency == "balanced" else "speed.load.throughput"
    return (
        said
        + " "
        + t(
            key,
            lang,
            n=f"{pick.peak_users:,}",
            bound=f"{s.tpot_bound_ms:g}",
            tps=f"{pick.peak.output_tokens_per_s_per_gpu:,.0f}",
            tpot=f"{pick.peak.tpot_ms:,.1f}",
        )
    )
