"""Troubleshoot: pick a symptom, get the likely causes for this model and GPU, best fit first,
each with the facts that ranked it there."""

import streamlit as st

from engine.facts import model_facts
from engine.i18n import DEFAULT_LANG, t
from engine.troubleshoot import symptoms, troubleshoot
from ui import show
from ui import state as S

lang = DEFAULT_LANG  # the app has no language choice yet
d = S.study_or_stop()
st.title(t("troubleshoot.page.title", lang))
st.caption(t("troubleshoot.page.caption", lang, model=d.model.name, gpu=d.gpu.key))
labels = {sym.id: sym.label for sym in symptoms(lang)}
symptom = st.radio(
    t("troubleshoot.page.question", lang),
    list(labels),
    format_func=labels.__getitem__,
    key="trouble.symptom",
)
causes = show.or_error(troubleshoot, symptom, model_facts(d.model), d.gpu, lang)
if causes is None:
    st.stop()


def bullets(head: str, items: list[str]) -> str:
    return head + "\n" + "\n".join(f"- {item}" for item in items)


def reason(text: str, amount: str) -> str:
    return t("troubleshoot.page.reason", lang, text=text, amount=amount)


for c in causes:
    label = t("troubleshoot.page.cause", lang, score=f"{c.score:.0%}", title=c.title)
    (base_text, base), *moves = c.score_reasons
    reasons = [reason(base_text, f"{base:.0%}")] + [reason(x, f"{m:+.0%}") for x, m in moves]
    with st.expander(label, expanded=c is causes[0]):
        st.markdown(t("troubleshoot.page.why", lang, text=c.why))
        st.markdown(t("troubleshoot.page.check", lang, text=c.check))
        st.markdown(bullets(t("troubleshoot.page.fix", lang), list(c.fixes)))
        st.markdown(bullets(t("troubleshoot.page.ranked", lang), reasons))
        st.caption(t("troubleshoot.page.source", lang, source=c.source))
