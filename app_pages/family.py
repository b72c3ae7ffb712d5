"""Step 1 — Family: the verdict, the config fields behind it, and the layer pattern."""

import streamlit as st

from engine.present import charts_data as C
from ui import charts, show
from ui import state as S

st.title("1 Family")
d = S.study_or_stop()
fam = d.family
st.caption(f"{d.model.name} · {d.config.architecture} · model_type `{d.config.model_type or '—'}`")

with st.container(border=True):
    st.subheader(fam.summary())
    cols = st.columns(5)
    cols[0].metric("Attention", fam.attention_family)
    cols[1].metric(
        "MoE",
        f"{fam.experts_per_token}/{fam.num_experts}" if fam.moe else "no (dense)",
        help=f"{fam.shared_experts} shared expert(s)" if fam.moe else None,
    )
    cols[2].metric("MTP heads", str(fam.mtp_layers) if fam.mtp_layers else "none")
    cols[3].metric("Multimodal", f"{fam.fusion} fusion" if fam.multimodal else "no (text)")
    window = []
    if fam.sliding_window:
        window.append("sliding")
    if fam.chunked_local:
        window.append("chunked")
    cols[4].metric("Sliding / local window", " + ".join(window) if window else "no")
    if fam.linear_kind:
        st.caption(f"Linear mixer: {C.MIXER_LABELS.get(fam.linear_kind, fam.linear_kind)}")

st.subheader("Evidence")
st.caption("Each verdict above comes from these config fields and the rule applied to them.")
show.table(
    [{"field": e.field, "value": e.value, "rule": e.rule} for e in C.evidence_rows(d)],
)

st.subheader("Layer pattern")
strip = C.layer_strip(d.architecture)
st.plotly_chart(charts.layer_strip(strip), width="stretch")
st.caption(strip.summary())
