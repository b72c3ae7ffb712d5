"""The disaggregated candidate on a page: the verdict against the aggregated fleet, the pools'
numbers with their formulas, both on the tokens/s per GPU vs tokens/s per user chart, each
pool's command with the reason for every flag, and the launch files (labelled where they are
not the pick). Drawn where the scenario has a request rate; every number comes from the engine.
"""

from __future__ import annotations

from functools import lru_cache

import streamlit as st

from engine.disagg.choice import Choice, choice_of
from engine.disagg.plan import DisaggPlan, disagg_plan
from engine.errors import InputError
from engine.i18n import Lang
from engine.present.artifacts import Artifact
from engine.present.disagg_k8s import MAX_NAME, disagg_kubernetes_yaml
from engine.present.disagg_render import disagg_script, node_word
from engine.present.disagg_words import disagg_chart, disagg_shown, pools_words
from engine.present.k8s import manifest_name
from engine.present.render import shell
from engine.scenario import Scenario
from engine.study import Study, study
from engine.text.safe import inert
from engine.text.words import say
from ui import charts, show, tables
from ui.lang import T, current

SIZE = 64


@lru_cache(maxsize=SIZE)
def _choice(scenario: Scenario) -> Choice | None:
    return choice_of(study(scenario))


@lru_cache(maxsize=SIZE)
def _plan(scenario: Scenario) -> DisaggPlan | None:
    c = _choice(scenario)
    if c is None or c.candidate.sized is None:
        return None
    return disagg_plan(study(scenario), c.candidate, c.label)


@lru_cache(maxsize=SIZE)
def _files(scenario: Scenario, lang: Lang) -> tuple[Artifact, ...]:
    p = _plan(scenario)
    if p is None:
        return ()
    name = manifest_name(study(scenario).model.name)[:MAX_NAME].rstrip("-")
    return (
        Artifact("script", f"{name}-disaggregated.sh", "text/x-shellscript",
                 lambda: disagg_script(p, lang)),
        Artifact("kubernetes", f"{name}-disaggregated.yaml", "application/yaml",
                 lambda: disagg_kubernetes_yaml(p, name, lang=lang)),
    )  # fmt: skip


def _verdict(c: Choice) -> None:
    box = st.success if c.verdict.wins else st.info
    box(say(c.verdict.reason, current()), icon=":material/call_split:")


def section(d: Study, key: str) -> None:
    """The candidate's section (nothing without a request rate)."""
    try:
        c = _choice(d.scenario)
    except InputError as err:
        show.problem(err)
        return
    if c is None:
        return
    lang = current()
    st.subheader(T("disagg.page.title"))
    st.caption(T("disagg.page.caption", rate=f"{c.rate:g}"))
    _verdict(c)
    z = c.candidate.sized
    if z is None:
        return
    st.markdown(T("disagg.page.pools_line", pools=pools_words(c, lang)))
    shown = disagg_shown(c, lang)[1:]  # the pools are the line above
    show.metrics(shown[:3], per_row=3)
    show.metrics(shown[3:], per_row=4)
    charts.draw(charts.speed(disagg_chart(c, lang)), T("disagg.page.chart_caption"),
                key=f"{key}.disagg.chart")  # fmt: skip
    if not c.fits_given:
        st.caption(T("disagg.line.more_gpus", gpus=z.gpus, given=c.gpus_given))
    p = _plan(d.scenario)
    if p is None:
        return
    if not p.runnable:
        st.error(T("flags.blocked", why="; ".join(say(b, lang) for b in p.blocked_by)))
    blocked = not p.runnable
    st.caption(T("disagg.page.files" if c.label is None else "disagg.page.files_not_pick"))
    show.downloads(list(_files(d.scenario, lang)), f"{key}.disagg.dl", blocked)


def pools(d: Study, key: str) -> None:
    """Each pool's command and the reason for every flag and variable (the Flags page)."""
    p = _plan(d.scenario)
    c = _choice(d.scenario)
    if p is None or c is None:
        return
    lang = current()
    st.markdown(T("disagg.page.pools", pools=pools_words(c, lang), nodes=p.nodes))
    for role, plan in p.pools:
        with st.expander(T("disagg.page.pool", role=T(f"disagg.pool.{role}"))):
            st.code(shell(plan), language="bash")
            rows = [{"flag": f.flag, "value": f.value, "reason": say(f.why, lang)}
                    for f in plan.flags]  # fmt: skip
            rows += [{"flag": e.name, "value": e.value, "reason": say(e.why, lang)}
                     for e in plan.env]  # fmt: skip
            tables.texts(
                rows,
                {"flag": T("flags.col.flag"), "value": T("flags.col.value"),
                 "reason": T("flags.col.reason")},
                key=f"{key}.disagg.{role}",
            )  # fmt: skip
    st.markdown(T("disagg.page.router", why=inert(say(p.router.why, lang))))
    st.code(" ".join(node_word(a) for a in p.router.argv), language="bash", wrap_lines=True)
