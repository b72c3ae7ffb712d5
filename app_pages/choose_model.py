"""Choose a model: the bundled catalog side by side; pick one to diagnose."""

import streamlit as st

from engine.present import charts_data as C
from ui import show
from ui import state as S

st.title("Choose a model")
st.caption(
    "Every bundled config.json, sized by the same engine at TP 1 with the model's own KV dtype. "
    "Weights and KV per 32K-token request in GiB (2^30 B). "
    "Other models: upload or paste a config.json, or fetch one by Hugging Face id, in the sidebar."
)
rows = C.catalog_rows()
table = [
    {
        "model": r.name,
        "family": r.family,
        "layers": r.layers,
        "params (bn)": r.params_b,
        "active (bn)": r.active_b,
        "weights (GiB)": r.weights_gib,
        "KV B/token": r.kv_bytes_per_token,
        "KV GiB @32K": r.kv_gib_at_32k,
        "max context": r.max_context,
        "note": r.note,
    }
    for r in rows
]
show.table(table, height=560)

names = [r.name for r in rows]
scenario = S.scenario()
current = scenario.model if scenario.model in names else names[0]
pick = st.selectbox("Model to diagnose", names, index=names.index(current), key="choose.pick")
if st.button("Use this model", key="choose.go", type="primary"):
    S.set_scenario(model=pick, source="catalog", digest=None)
    st.rerun()
st.caption(f"Now showing: **{scenario.model}** ({scenario.source}).")
