"""Troubleshoot: pick a symptom, get the likely causes for this model and GPU, best fit first."""

import streamlit as st

from engine.errors import InputError
from ui import show
from ui import state as S

v = S.view()
st.title("Troubleshoot")
st.caption(f"Causes are ranked for {v.model.name} on {v.gpu.key}.")
try:
    from engine.facts import model_facts
    from engine.troubleshoot import SYMPTOMS, troubleshoot
except ImportError:
    SYMPTOMS = None
if SYMPTOMS is None:
    show.not_there_yet("Troubleshooting", "engine.troubleshoot")
    st.stop()

labels = {sym.id: sym.label for sym in SYMPTOMS}
symptom = st.radio(
    "What do you see?", list(labels), format_func=labels.__getitem__, key="trouble.symptom"
)
try:
    causes = troubleshoot(symptom, model_facts(v.model), v.gpu)
except InputError as err:
    st.error(str(err))
    st.stop()
for c in causes:
    with st.expander(f"{c.score:.0%} · {c.title}", expanded=c is causes[0]):
        st.markdown(f"**Why:** {c.why}")
        st.markdown(f"**Check:** {c.check}")
        st.markdown("**Fix:**\n" + "\n".join(f"- {f}" for f in c.fixes))
        st.caption(f"Fit to this model: {c.fit} · Source: {c.source}")
