"""Step 4 — Software: minimum engine version, parsers, checkpoint format, special flags."""

import streamlit as st

from engine.errors import InputError
from engine.present.share import ENGINE_LABELS
from engine.software.report import software_report
from engine.software.tables import ENGINES
from ui import state as S

v = S.view()
st.title("4 Software")
st.caption(f"{v.model.name} · {v.model.config.architecture}")

model_id = v.model.name if v.model.source in ("catalog", "hub") else None
cols = st.columns(2)
for col, engine in zip(cols, ENGINES, strict=True):
    with col:
        label = ENGINE_LABELS[engine]
        try:
            r = software_report(v.model.config.raw, engine, model_id)
        except InputError as err:
            st.error(f"{label}: {err}")
            continue
        chosen = " (chosen)" if engine == v.state.engine else ""
        with st.container(border=True):
            st.subheader(f"{label} {r.engine_version}{chosen}")
            st.metric("Minimum version", r.min_version or "not known")
            st.metric("Tool-call parser", r.tool_call_parser or "none")
            st.metric("Reasoning parser", r.reasoning_parser or "none")
            st.metric("Checkpoint format", r.checkpoint_format)
            st.caption(r.checkpoint.detail)
            if r.quantization:
                st.code(f"--quantization {r.quantization}", language=None)
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
