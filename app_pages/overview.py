"""Overview: the verdict first, the chosen layout in words, the launch command for the selected
engine with its downloads and the report, then the numbers."""

import streamlit as st

from engine.present import charts_data as C
from engine.present import messages as M
from engine.present.render import shell
from engine.scenario import ENGINE_LABELS
from engine.text.words import say
from ui import charts, memo, show
from ui import state as S
from ui.lang import T, current
from ui.sidebar import share_link

st.title(T("app.title"))
d = S.study_or_stop()
s = d.scenario
engine = ENGINE_LABELS[s.engine]
st.caption(
    T(
        "overview.caption",
        model=d.model.name,
        source=T(f"common.source.{d.model.source}"),
        per_node=s.gpus_per_node,
        gpu=d.gpu.key,
        nodes=s.nodes,
        engine=engine,
        users=f"{s.users:,}",
        context=f"{d.context_asked:,}",
    )
)

show.verdict(d)
show.alternatives(d)

st.subheader(T("overview.layout"))
st.markdown(M.layout_words(d, current()))
show.metrics(C.layout_shown(d, current()))
speed = C.speed_shown(d, current())
if speed:
    st.subheader(T("overview.speed"))
    show.metrics(speed, per_row=5)
    st.caption(C.speed_caption(d, current()))
    with st.expander(T("overview.speed_all"), icon=":material/speed:"):
        charts.draw(
            charts.speed(C.speed_curves(d, current()), C.speed_targets(d, current())),
            T("chart.speed.caption"),
            key="overview.speed",
        )
reasons, reason_sources = M.layout_reasons(d, current())
if reasons:
    with st.expander(T("overview.why_layout")):
        st.markdown("\n".join(f"- {r}" for r in reasons))  # worded inert by say()
        show.sources(reason_sources, inline=True)

plan = d.plan
if plan is not None:
    st.subheader(T("overview.command", engine=engine, version=plan.engine_version))
    if not plan.runnable:
        st.error(T("flags.blocked", why="; ".join(M.blocked(plan, current()))))
    st.code(shell(plan), language="bash")
    if len(plan.commands) > 1:
        st.caption(T("overview.multi_node", n=len(plan.commands)))
    show.downloads(memo.launch(d, plan.engine, current()), "overview.dl", not plan.runnable)
else:
    problem = d.primary.problem
    st.error(T("flags.no_plan", engine=engine, problem=say(problem, current()) if problem else ""))

st.subheader(T("overview.report"))
st.caption(T("overview.report_caption"))
show.downloads(memo.report(d, current(), share_link(S.view())), "overview.report")

st.subheader(T("overview.numbers", family=C.family_summary(d.family, current())))
show.numbers(C.kv_headline(d, current()))
show.numbers(C.weights_shown(d, current()))
show.numbers(C.fit_shown(d, current()))
for note in d.notes:
    st.info(say(note, current()), icon=":material/info:")
