"""Troubleshoot: pick a symptom, get the likely causes for this model and GPU, best fit first."""

import streamlit as st

from engine.facts import model_facts
from engine.troubleshoot import SYMPTOMS, troubleshoot
from ui import show
from ui import state as S

d = S.study_or_stop()
st.title("Troubleshoot")
st.caption(f"Causes are ranked for {d.model.name} on {d.gpu.key}.")
labels = {sym.id: sym.label for sym in SYMPTOMS}
symptom = st.radio(
    "What do you see?", list(labels), format_func=labels.__getitem__, key="trouble.symptom"
)
causes = show.or_error(troubleshoot, symptom, model_facts(d.model), d.gpu)
if causes is None:
    st.stop()
for c in causes:
    with st.expander(f"{c.score:.0%} · {c.title}", expanded=c is causes[0]):
        st.markdown(f"**Why:** {c.why}")
        st.markdown(f"**Check:** {c.check}")
        st.markdown("**Fix:**\n" + "\n".join(f"- {f}" for f in c.fixes))
        st.caption(f"Fit to this model: {c.fit} · Source: {c.source}")
