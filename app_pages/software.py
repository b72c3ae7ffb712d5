"""Step 4 — Software: minimum engine version, parsers, checkpoint format, special flags."""

import streamlit as st

from engine.scenario import ENGINE_LABELS
from ui import state as S

d = S.study_or_stop()
st.title("4 Software")
st.caption(f"{d.model.name} · {d.config.architecture}")

cols = st.columns(2)
for col, (engine, view) in zip(cols, d.engines.items(), strict=True):
    with col:
        label = ENGINE_LABELS[engine]
        r = view.software
        chosen = " (chosen)" if engine == d.scenario.engine else ""
        with st.container(border=True):
            st.subheader(f"{label} {r.engine_version}{chosen}")
            st.metric("Minimum version", r.min_version or "not known")
            st.metric("Tool-call parser", r.tool_call_parser or "none")
            st.metric("Reasoning parser", r.reasoning_parser or "none")
            st.metric("Checkpoint format", r.checkpoint_format)
            st.caption(r.checkpoint.detail)
            if r.extra_flags:
                st.markdown("**Extra flags**")
                for flag in r.extra_flags:
                    st.markdown(f"- `{flag}` — {r.flag_reasons.get(flag, '')}")
            if not r.natively_supported:
                st.warning("Not implemented natively by this engine version.")
            with st.expander("Notes and sources"):
                for n in r.notes:
                    st.markdown(f"- {n}")
                st.caption(" · ".join(r.sources))
