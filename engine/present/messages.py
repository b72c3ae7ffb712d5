"""The Study's answers as sentences in the reader's language: the verdict, the chosen layout in
words, the reasons the layout search gives, and the hardware gates.

The engine decides (a status, a decision code with its numbers); this module only arranges the
words of ``engine.text.words``, so the CLI, the JSON, the report and the pages of every
language say the same thing from the same decision.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.gates import Gate
from engine.i18n import DEFAULT_LANG, Lang, t
from engine.launch.candidate import Layout
from engine.launch.plan import LaunchPlan
from engine.study import Study
from engine.text.units import tokens
from engine.text.words import say, say_all, sources


@dataclass(frozen=True)
class Worded:
    """A decision in words: a status, a title, the one reason, and what to try."""

    status: str
    title: str
    reason: str
    tips: tuple[str, ...] = ()


def layout_name(layout: Layout, lang: Lang = DEFAULT_LANG) -> str:
    """``TP 8 + EP``, ``2 replicas of TP 4`` in ``lang``."""
    return say(layout.name(), lang)


def layout_words(st: Study, lang: Lang = DEFAULT_LANG) -> str:
    """The chosen layout as a sentence: copies, GPUs per copy, how each copy is cut, and what
    the launch gives (context and users)."""
    fit = st.fit
    lay = fit.layout
    s = lay.split
    nodes = max(1, s.gpus // st.scenario.gpus_per_node)
    copies = "layout.words.one_copy" if lay.replicas == 1 else "layout.words.copies"
    cut = [t("layout.words.tp", lang, tp=s.tp)]
    if s.dp > 1:
        cut.append(t("layout.words.dp", lang, dp=s.dp))
    if s.pp > 1:
        cut.append(t("layout.words.pp", lang, pp=s.pp))
    cut.append(
        t("layout.words.ep", lang, ranks=s.moe_group)
        if s.ep
        else t("layout.words.no_ep", lang)
        if st.family.moe
        else t("layout.words.dense", lang)
    )
    return t(
        copies,
        lang,
        n=lay.replicas,
        gpus=s.gpus,
        nodes=t("layout.words.nodes_one" if nodes == 1 else "layout.words.nodes", lang, n=nodes),
        gpu=st.gpu.key,
        cut=t("layout.words.join", lang).join(cut),
        users=f"{fit.users:,}",
        context=tokens(fit.context),
    )


def layout_reasons(st: Study, lang: Lang = DEFAULT_LANG) -> tuple[list[str], list[str]]:
    """Why the layout search picked this layout, as sentences, and the sources the decisive
    comparisons cite (for a "Sources" list)."""
    return say_all(st.search.reasons, lang), sources(st.search.reasons)


def verdict(st: Study, lang: Lang = DEFAULT_LANG) -> Worded:
    """The verdict's title, reason and the failed gate's own fix in ``lang``."""
    v = st.verdict
    tips = (say(v.fix, lang),) if v.fix is not None else ()
    return Worded(v.status, t(f"verdict.status.{v.status}", lang), say(v.reason, lang), tips)


def gate(g: Gate, lang: Lang = DEFAULT_LANG) -> Worded:
    """One gate in ``lang``: its status, name, reason and fix."""
    tips = (say(g.fix, lang),) if g.fix is not None else ()
    return Worded(g.status, say(g.name, lang), say(g.reason, lang), tips)


def gates(st: Study, lang: Lang = DEFAULT_LANG) -> list[Worded]:
    return [gate(g, lang) for g in st.gates.gates]


def blocked(plan: LaunchPlan, lang: Lang = DEFAULT_LANG) -> list[str]:
    """Why a launch plan cannot start (its failed gates, its own weights), in ``lang``."""
    return say_all(plan.blocked_by, lang)
