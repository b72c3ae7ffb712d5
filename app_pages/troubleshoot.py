"""Troubleshoot: pick a symptom, get the likely causes for this model and GPU, best fit first,
each with the facts that ranked it there. The symptom and its causes are a fragment: picking
another symptom reruns only them."""

import streamlit as st

from engine.text.safe import inert
from engine.text.sources import clean
from engine.text.units import percent
from engine.troubleshoot import symptoms, troubleshoot
from engine.troubleshoot.facts import model_facts
from ui import show, tables
from ui import state as S
from ui.lang import T, current

lang = current()
st.title(T("troubleshoot.page.title"))
d = S.study_or_stop()
st.caption(T("troubleshoot.page.caption", model=d.model.name, gpu=d.gpu.key))


def bullets(head: str, items: list[str]) -> str:
    return head + "\n" + "\n".join(f"- {inert(item)}" for item in items)


def reason(text: str, amount: str) -> str:
    return T("troubleshoot.page.reason", text=text, amount=amount)


@st.fragment(key="trouble.causes")
def causes_of_symptom() -> None:
    """The symptom and its causes (``d``, ``lang``: the page's, which only a whole-page run
    changes)."""
    labels = {sym.id: sym.label for sym in symptoms(lang)}
    symptom = st.radio(
        T("troubleshoot.page.question"),
        list(labels),
        format_func=labels.__getitem__,
        key="trouble.symptom",
    )
    causes = show.or_error(troubleshoot, symptom, model_facts(d.model), d.gpu, lang)
    if causes is None:
        return

    st.info(T("troubleshoot.page.score_help"), icon=":material/percent:")
    tables.show(
        tables.frame(
            [{"score": c.score, "cause": c.title} for c in causes],
            ["score", "cause"],
        ),
        {
            "score": tables.share(
                T("troubleshoot.page.col.score"), T("troubleshoot.page.col.score_help")
            ),
            "cause": tables.text(T("troubleshoot.page.col.cause")),
        },
        key="trouble.ranking",
    )

    for c in causes:
        label = T("troubleshoot.page.cause", score=percent(c.score), title=c.title)
        (base_text, base), *moves = c.score_reasons
        reasons = [reason(base_text, percent(base))]
        reasons += [reason(x, percent(m, signed=True)) for x, m in moves]
        with st.expander(label, expanded=c is causes[0]):
            st.markdown(T("troubleshoot.page.why", text=clean(c.why)))
            st.markdown(T("troubleshoot.page.check", text=clean(c.check)))
            st.markdown(bullets(T("troubleshoot.page.fix"), [clean(f) for f in c.fixes]))
            st.markdown(bullets(T("troubleshoot.page.ranked"), reasons))
            st.caption(T("troubleshoot.page.ranked_help", score=percent(c.score)))
            show.sources([c.source])


causes_of_symptom()
