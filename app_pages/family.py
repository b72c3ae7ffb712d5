"""Step 1 — Family: the verdict, the config fields behind it, and the layer pattern."""

import streamlit as st

from engine.present import charts_data as C
from engine.text.sources import clean
from ui import charts, tables
from ui import state as S
from ui.lang import T, current

st.title(T("nav.family"))
d = S.study_or_stop()
fam = d.family
lang = current()
st.caption(
    T(
        "family.caption",
        model=d.model.name,
        architecture=d.config.architecture,
        model_type=d.config.model_type or "—",
    )
)

with st.container(border=True):
    st.subheader(C.family_summary(fam, lang))
    cols = st.columns(5)
    cols[0].metric(T("family.attention"), fam.attention_family, help=T("family.attention_help"))
    cols[1].metric(
        T("family.moe"),
        f"{fam.experts_per_token}/{fam.num_experts}" if fam.moe else T("family.dense"),
        help=T("family.moe_help", shared=fam.shared_experts) if fam.moe else None,
    )
    cols[2].metric(T("family.mtp"), str(fam.mtp_layers) if fam.mtp_layers else T("common.none"))
    cols[3].metric(
        T("family.multimodal"),
        T(f"family.fusion_{fam.fusion or 'unknown'}") if fam.multimodal else T("family.text"),
    )
    window = "sliding" if fam.sliding_window else ""
    window = "both" if fam.sliding_window and fam.chunked_local else window
    window = "chunked" if fam.chunked_local and not fam.sliding_window else window
    cols[4].metric(T("family.window"), T(f"family.window_{window or 'no'}"))
    if fam.linear_kind:
        st.caption(T("family.linear", mixer=C.mixer_label(fam.linear_kind, lang)))

st.subheader(T("family.evidence"))
st.caption(T("family.evidence_caption"))
evidence = C.family_rows(d, lang)
tables.texts(
    [{"field": e.field, "value": e.value, "rule": clean(e.rule)} for e in evidence],
    {"field": T("family.col.field"), "value": T("family.col.value"), "rule": T("family.col.rule")},
    key="family.evidence",
)

st.subheader(T("family.pattern"))
strip = C.layer_strip(d.architecture, lang)
charts.draw(
    charts.layer_strip(strip),
    T("family.pattern_caption", summary=strip.summary()),
    titled=False,  # the subheader above says "Layer pattern" already
)
